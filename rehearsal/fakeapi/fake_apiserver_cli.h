// The handoff-fake-apiserver command line: serves the fake Kubernetes API (seeded from files) for
// the sandbox and for trying handoffctl by hand. main() only forwards here.
#ifndef HANDOFF_REHEARSAL_FAKEAPI_FAKE_APISERVER_CLI_H_
#define HANDOFF_REHEARSAL_FAKEAPI_FAKE_APISERVER_CLI_H_

#include <functional>
#include <iosfwd>
#include <string>

#include "common/fs/file_system.h"

namespace handoff::fakeapi {

// Parses the command line, seeds a store, serves it, prints "serving <url>" on `out` (and writes
// the port to --port-file), then calls `wait_for_stop(url)` and stops when it returns. Exit codes:
// 0 after a clean stop, 2 for bad usage, unreadable seeds or a port that cannot be bound.
int RunFakeApiServerCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                        FileSystem& fs,
                        const std::function<void(const std::string& url)>& wait_for_stop);

}  // namespace handoff::fakeapi

#endif  // HANDOFF_REHEARSAL_FAKEAPI_FAKE_APISERVER_CLI_H_

#include <iostream>
#include <memory>

#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "common/system/shutdown_signal.h"
#include "common/system/signal_watcher.h"
#include "rehearsal/fakeapi/fake_apiserver_cli.h"

int main(int argc, char** argv) {
  // SIGINT and SIGTERM stop the server as they stop the daemons; the watcher starts before any
  // other thread, so that every thread leaves them to it.
  handoff::ShutdownSignal stop;
  absl::StatusOr<std::unique_ptr<handoff::SignalWatcher>> signals =
      handoff::SignalWatcher::Start([&stop](int) { stop.Request(); });
  if (!signals.ok()) {
    std::cerr << "handoff-fake-apiserver: " << signals.status().message() << "\n";
    return 2;
  }
  std::unique_ptr<handoff::FileSystem> fs = handoff::NewPosixFileSystem("");
  return handoff::fakeapi::RunFakeApiServerCli(
      argc, argv, std::cout, std::cerr, *fs, [&stop](const std::string&) {
        while (!stop.WaitTimeoutOrShutdown(absl::InfiniteDuration())) {
        }
      });
}

// Where `handoffctl sandbox` finds the programs it starts: the daemons an operator runs too
// (handoff-coordinator, handoff-agent) and the helpers only the sandbox runs (handoff-standin,
// handoff-sandbox-kubelet). A build tree has them all in one directory (build/bin); the Debian
// package puts the daemons in /usr/bin beside handoffctl and the helpers in /usr/lib/handoff,
// Debian's place for a package's private executables. Defined in bring_up.cc.
#ifndef HANDOFF_REHEARSAL_SANDBOX_SANDBOX_BINARIES_H_
#define HANDOFF_REHEARSAL_SANDBOX_SANDBOX_BINARIES_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace handoff::sandbox {

// The helpers' directory relative to the running handoffctl's, as the package installs them.
inline constexpr char kInstalledHelpersDir[] = "../lib/handoff";

struct SandboxBinaries {
  std::string daemons_dir;  // handoff-coordinator, handoff-agent
  std::string helpers_dir;  // handoff-standin, handoff-sandbox-kubelet
};

// True for the programs that live in SandboxBinaries::helpers_dir.
bool IsSandboxHelper(const std::string& name);

// The daemons' directory: `bin_dir` (--bin-dir) when given, else `exe_dir`, the directory of
// the running handoffctl.
std::string SandboxDaemonsDir(const std::string& bin_dir, const std::string& exe_dir);

// Every program in `bin_dir` when given. Otherwise the daemons beside handoffctl (`exe_dir`)
// and the helpers beside it too, or else in <exe_dir>/../lib/handoff. `executable(path)` says
// whether `path` is an executable file (access(X_OK) in the sandbox; a fake in tests). A
// program found nowhere is an error naming it and every directory looked in. Pure.
absl::StatusOr<SandboxBinaries> LocateSandboxBinaries(
    const std::string& bin_dir, const std::string& exe_dir,
    const std::function<bool(const std::string& path)>& executable);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_SANDBOX_BINARIES_H_

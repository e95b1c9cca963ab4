// What the agent's commands reach outside --root: the process table they read (and signal, to
// stop a pod the kubelet left running) and the command that restarts the kubelet. On a node
// (--root names the host's own "/") they are the host's; under any other root, only what lies
// inside the root or what the operator names, so that a rehearsal on a copy of a node's files
// never looks at, signals or restarts anything of the machine it runs on.
#ifndef HANDOFF_AGENT_CLI_HOST_SCOPE_H_
#define HANDOFF_AGENT_CLI_HOST_SCOPE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fs/file_system.h"

namespace handoff {

struct HostScope {
  bool on_node = true;  // --root is the host's "/"
  // --proc-root when named; else /proc on a node and <root>/proc (resolved inside the root, as
  // every path of the node is) under any other root.
  std::string proc_root;
  // --kubelet-restart-command split at spaces when named; else `systemctl restart kubelet` on a
  // node and nothing under any other root (ApplyOptions::kubelet_restart).
  std::vector<std::string> kubelet_restart;
};

// `host`: the machine's files, unconfined; `node`: the same files confined to `root`.
// `proc_root` and `kubelet_restart` are the flags as given, "" when not. InvalidArgument when
// --root cannot be resolved.
absl::StatusOr<HostScope> ScopeToRoot(const FileSystem& host, const FileSystem& node,
                                      const std::string& root, const std::string& proc_root,
                                      const std::string& kubelet_restart);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLI_HOST_SCOPE_H_

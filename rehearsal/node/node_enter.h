// Running a command on a kubeadm sandbox node, and talking to its first process.
//
// `handoff-sandbox-node enter --pid P [--env K=V]... -- ARGV...` joins the namespaces of the
// node whose first process has host pid P (IPC, UTS, network, PID, mount: what nsenter -t P -i
// -u -n -p -m does), forks, and runs ARGV there (found through $PATH) with the environment it was
// given plus each --env. It stays the command's parent: SIGTERM, SIGINT, SIGHUP and SIGQUIT are
// passed on, its exit code is the command's (128+signal when killed), and the command is
// SIGKILLed when it dies (PR_SET_PDEATHSIG), so that `kill -9` of the entering process kills the
// command too, as a kill of a systemd service's main process would.
//
// `handoff-sandbox-node restart-kubelet` (run on the node: the agent's --kubelet-restart-command)
// and `handoff-sandbox-node control [--socket PATH] COMMAND` send one line to the node's control
// socket (node_init.h) and print the answer; exit 0 when it starts with "ok".
#ifndef HANDOFF_REHEARSAL_NODE_NODE_ENTER_H_
#define HANDOFF_REHEARSAL_NODE_NODE_ENTER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff::sandbox::node {

struct EnterSpec {
  pid_t pid = 0;
  std::vector<std::string> env;   // "KEY=VALUE"
  std::vector<std::string> argv;  // what to run
};

// The arguments after "enter" that ParseEnterArgs reads back as `spec`.
std::vector<std::string> EnterArgs(const EnterSpec& spec);
// Errors name what is missing or wrong.
absl::StatusOr<EnterSpec> ParseEnterArgs(const std::vector<std::string>& args);

// Joins the node's namespaces and runs the command as described above; the exit code. Call it
// single-threaded (setns(2) of a mount namespace requires it).
int EnterNode(const EnterSpec& spec);

// Sends `command` to the control socket at `socket` and returns the answer line (without its
// newline). Unavailable when nothing answers within `timeout`.
absl::StatusOr<std::string> SendControl(const std::string& socket, const std::string& command,
                                        absl::Duration timeout);

}  // namespace handoff::sandbox::node

#endif  // HANDOFF_REHEARSAL_NODE_NODE_ENTER_H_

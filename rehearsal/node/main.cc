// handoff-sandbox-node: a node of `handoffctl sandbox --cluster kubeadm`, a machine made of
// namespaces (node_spec.h, node_init.h, node_enter.h):
//   handoff-sandbox-node boot --name N --dir D --log-dir L --containerd PATH --kubelet PATH
//                             [--path P] [--kubelet-restart-delay 10s]
//   handoff-sandbox-node enter --pid P [--env K=V]... -- COMMAND...
//   handoff-sandbox-node restart-kubelet            (on the node: `systemctl restart kubelet`)
//   handoff-sandbox-node control [--socket PATH] restart-kubelet|kill-kubelet|status
// Exit codes: boot and enter, those of the node's first process or the command (125 when the
// namespaces cannot be joined); the others 0 done, 1 failed; 2 bad usage.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "rehearsal/node/node_enter.h"
#include "rehearsal/node/node_init.h"
#include "rehearsal/node/node_spec.h"

namespace {

namespace node = handoff::sandbox::node;

constexpr char kUsage[] =
    "usage: handoff-sandbox-node boot --name N --dir D --log-dir L --containerd PATH\n"
    "                                 --kubelet PATH [--path P] [--kubelet-restart-delay 10s]\n"
    "       handoff-sandbox-node enter --pid P [--env K=V]... -- COMMAND...\n"
    "       handoff-sandbox-node restart-kubelet\n"
    "       handoff-sandbox-node control [--socket PATH] restart-kubelet|kill-kubelet|status\n"
    "A node of `handoffctl sandbox --cluster kubeadm`: boot makes it (namespaces, mounts,\n"
    "containerd and the kubelet as kubeadm's systemd units run them), enter runs a command on\n"
    "it, restart-kubelet is its `systemctl restart kubelet`.\n";

int Control(const std::string& socket, const std::string& command) {
  // A restart waits for the kubelet to stop (it exits within seconds of SIGTERM).
  absl::StatusOr<std::string> answer = node::SendControl(socket, command, absl::Minutes(2));
  if (!answer.ok()) {
    std::cerr << "handoff-sandbox-node: " << answer.status().message() << "\n";
    return 1;
  }
  std::cout << *answer << "\n";
  return answer->rfind("ok", 0) == 0 ? 0 : 1;
}

// Ends a process that has put its children in the node's PID namespace (boot and enter) without
// the exit handlers: LeakSanitizer's exit check stops the world from a helper it clones, which
// lands in that namespace, cannot see its parent there and waits for it forever (or aborts).
[[noreturn]] void ExitFromNode(int code) {
  std::cout.flush();
  std::cerr.flush();
  ::_exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "boot") {
    absl::StatusOr<node::BootSpec> spec = node::ParseBootArgs(args);
    if (!spec.ok()) {
      std::cerr << "handoff-sandbox-node boot: " << spec.status().message() << "\n" << kUsage;
      return 2;
    }
    ExitFromNode(node::BootNode(*spec));
  }
  if (command == "enter") {
    absl::StatusOr<node::EnterSpec> spec = node::ParseEnterArgs(args);
    if (!spec.ok()) {
      std::cerr << "handoff-sandbox-node enter: " << spec.status().message() << "\n" << kUsage;
      return 2;
    }
    ExitFromNode(node::EnterNode(*spec));
  }
  if (command == "restart-kubelet" && args.empty()) {
    return Control(node::kControlSocket, "restart-kubelet");
  }
  if (command == "control") {
    std::string socket = node::kControlSocket;
    if (args.size() == 3 && args[0] == "--socket") {
      socket = args[1];
      args.erase(args.begin(), args.begin() + 2);
    }
    if (args.size() == 1) return Control(socket, args[0]);
  }
  std::cerr << kUsage;
  return 2;
}

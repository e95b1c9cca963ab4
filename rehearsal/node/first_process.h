// The first process of a node's PID namespace, run from outside it: `handoff-sandbox-node boot`
// (the node's init) and `enter` (a command on the node) both fork it after unshare or setns put
// them where only children join, stay outside as its parent, and pass the signals an operator or a
// service manager sends them on to it.
#ifndef HANDOFF_REHEARSAL_NODE_FIRST_PROCESS_H_
#define HANDOFF_REHEARSAL_NODE_FIRST_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <vector>

namespace handoff::sandbox::node {

struct FirstProcess {
  const char* who;             // prefixes the error lines: "handoff-sandbox-node boot"
  std::vector<int> forwarded;  // the signals passed on to the child
  int setup_failed;            // the exit code when it cannot be forked
  // In the child, once it is sure to die with its parent (PR_SET_PDEATHSIG, and the parent still
  // there after setting it) and its signals are unblocked: its exit code.
  std::function<int()> child;
  // In the parent, once the child runs; false kills the child.
  std::function<bool(pid_t)> started = [](pid_t) { return true; };
};

// Forks `process.child`, passes the forwarded signals on to it until it exits, and returns its
// exit code (128 + the signal when a signal ended it), as a shell would report it.
int RunFirstProcess(const FirstProcess& process);

}  // namespace handoff::sandbox::node

#endif  // HANDOFF_REHEARSAL_NODE_FIRST_PROCESS_H_

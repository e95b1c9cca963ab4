#include "rehearsal/node/first_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/base/unique_fd.h"

namespace handoff::sandbox::node {

int RunFirstProcess(const FirstProcess& process) {
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int signal : process.forwarded) sigaddset(&forwarded, signal);
  // Blocked until the child unblocks them, so that none is lost between fork and signalfd.
  ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
  // The child cannot tell its parent's death from getppid() (the parent is outside its PID
  // namespace: it reads 0 either way): a pipe whose write end only the parent holds hangs up
  // when the parent is gone.
  int alive[2];
  if (::pipe2(alive, O_CLOEXEC) != 0) {
    std::cerr << process.who << ": pipe: " << std::strerror(errno) << "\n";
    return process.setup_failed;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    std::cerr << process.who << ": fork: " << std::strerror(errno) << "\n";
    return process.setup_failed;
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(alive[1]);
    pollfd parent{alive[0], POLLIN, 0};
    if (::poll(&parent, 1, 0) > 0 && (parent.revents & POLLHUP)) _exit(process.setup_failed);
    ::close(alive[0]);
    ::sigprocmask(SIG_UNBLOCK, &forwarded, nullptr);
    _exit(process.child());
  }
  ::close(alive[0]);
  if (!process.started(child)) ::kill(child, SIGKILL);
  UniqueFd signals(::signalfd(-1, &forwarded, SFD_CLOEXEC));
  // Readable once the child has exited.
  UniqueFd exited(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
  while (true) {
    pollfd events[2] = {{signals.get(), POLLIN, 0}, {exited.get(), POLLIN, 0}};
    if (::poll(events, 2, -1) < 0 && errno != EINTR) break;
    if (events[0].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(signals.get(), &info, sizeof(info)) == sizeof(info)) {
        ::kill(child, static_cast<int>(info.ssi_signo));
      }
    }
    if (events[1].revents & POLLIN) break;
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace handoff::sandbox::node

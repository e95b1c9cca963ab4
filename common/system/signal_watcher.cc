#include "common/system/signal_watcher.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/base/strings.h"

namespace handoff {

absl::StatusOr<std::unique_ptr<SignalWatcher>> SignalWatcher::Start(
    std::function<void(int)> on_signal) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigset_t previous;
  if (int error = pthread_sigmask(SIG_BLOCK, &signals, &previous); error != 0) {
    return absl::InternalError(StrCat("pthread_sigmask: ", std::strerror(error)));
  }
  const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
  const int wake_fd = signal_fd < 0 ? -1 : eventfd(0, EFD_CLOEXEC);
  if (signal_fd < 0 || wake_fd < 0) {
    const std::string error = std::strerror(errno);
    if (signal_fd >= 0) close(signal_fd);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return absl::InternalError(StrCat(signal_fd < 0 ? "signalfd: " : "eventfd: ", error));
  }
  return std::unique_ptr<SignalWatcher>(
      new SignalWatcher(signal_fd, wake_fd, previous, std::move(on_signal)));
}

SignalWatcher::SignalWatcher(int signal_fd, int wake_fd, sigset_t previous,
                             std::function<void(int)> on_signal)
    : signal_fd_(signal_fd),
      wake_fd_(wake_fd),
      previous_(previous),
      on_signal_(std::move(on_signal)),
      thread_(&SignalWatcher::Loop, this) {}

SignalWatcher::~SignalWatcher() {
  const uint64_t one = 1;
  // The thread stops only once the eventfd is readable, so an interrupted write is retried.
  while (write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  thread_.join();
  close(signal_fd_);
  close(wake_fd_);
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

void SignalWatcher::Loop() {
  pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      if (read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
        on_signal_(static_cast<int>(info.ssi_signo));
      }
    }
  }
}

}  // namespace handoff

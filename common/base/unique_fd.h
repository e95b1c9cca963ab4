// An owned file descriptor, closed when it goes out of scope.
#ifndef HANDOFF_COMMON_BASE_UNIQUE_FD_H_
#define HANDOFF_COMMON_BASE_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace handoff {

// Owns `fd` when it is not negative; a negative value (-1, or AT_FDCWD for the *at() calls) is
// held but never closed. Movable, not copyable. A close error is ignored: code that must see it
// (a file it wrote) takes the descriptor back with Release() and closes it itself.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership, so that the caller can close and check the result itself.
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_BASE_UNIQUE_FD_H_

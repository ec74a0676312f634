// UniqueFd: the one owner of a file descriptor; closes it on destruction.
#ifndef HOTRING_CORE_UNIQUE_FD_H_
#define HOTRING_CORE_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace hotring {

// Owns one file descriptor (or none, -1). Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  ~UniqueFd() { Reset(); }

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Gives up ownership without closing.
  [[nodiscard]] int Release() { return std::exchange(fd_, -1); }

  // Closes the current descriptor (if any) and takes `fd`.
  void Reset(int fd = -1) {
    const int old = std::exchange(fd_, fd);
    if (old >= 0) ::close(old);
  }

 private:
  int fd_ = -1;
};

}  // namespace hotring

#endif  // HOTRING_CORE_UNIQUE_FD_H_

// SignalFd: owns a signalfd for a set of signals blocked on this thread, read through the ring
// (SIGTERM/SIGINT: graceful stop; SIGHUP: reload; SIGCHLD is not needed: children are awaited
// through pidfds).
#ifndef HOTRING_IO_SIGNALS_H_
#define HOTRING_IO_SIGNALS_H_

#include <signal.h>

#include <initializer_list>

#include "absl/status/statusor.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "io/reactor.h"

namespace hotring::io {

class SignalFd {
 public:
  // Blocks `signals` for the calling thread and opens a signalfd for them. Children must
  // unblock them again (the Spawner resets the mask).
  static absl::StatusOr<SignalFd> Create(std::initializer_list<int> signals);

  // The next signal's number.
  Task<absl::StatusOr<int>> Next(Reactor& reactor);

  [[nodiscard]] int fd() const { return fd_.get(); }

 private:
  explicit SignalFd(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace hotring::io

#endif  // HOTRING_IO_SIGNALS_H_

// ThreadWake: owns an eventfd that any thread (or a task on the reactor's own thread) pokes to
// wake a task waiting on the reactor. The wait is an eventfd read through the ring, so the
// waiter is always resumed by the reactor loop and never inline inside Notify(): a notifier may
// be destroyed by the task it woke without pulling its own frame out from under itself. This is
// how threads that must block in syscalls io_uring cannot issue (SysV msgrcv, finit_module)
// report back to the reactor.
#ifndef HOTRING_IO_THREAD_WAKE_H_
#define HOTRING_IO_THREAD_WAKE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "io/reactor.h"

namespace hotring::io {

// Owns one eventfd used as a counting wake-up. Move-only.
class ThreadWake {
 public:
  static absl::StatusOr<ThreadWake> Create();

  ThreadWake(ThreadWake&&) = default;
  ThreadWake& operator=(ThreadWake&&) = default;

  // Thread-safe and async-signal-safe: adds one to the counter, waking a pending Wait().
  void Notify() const;

  // Completes once at least one Notify() happened since the previous Wait() completed, and
  // returns how many did. Only one task may wait at a time.
  Task<absl::StatusOr<uint64_t>> Wait(Reactor& reactor) const;

  [[nodiscard]] int fd() const { return fd_.get(); }

 private:
  explicit ThreadWake(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace hotring::io

#endif  // HOTRING_IO_THREAD_WAKE_H_

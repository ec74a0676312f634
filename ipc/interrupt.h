// RunUntilSignal: drive one task on a reactor until it completes or a signal arrives. On a
// signal the task's frame is destroyed, which cancels its I/O and runs its destructors (closing
// sockets, removing files and queues), so Ctrl-C leaves nothing behind.
#ifndef HOTRING_IPC_INTERRUPT_H_
#define HOTRING_IPC_INTERRUPT_H_

#include <signal.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/task.h"
#include "io/reactor.h"
#include "io/signals.h"

namespace hotring::ipc {

// The exit code of a command stopped by `signo` (the shell's 128 + N convention).
inline int ExitCodeForSignal(int signo) { return 128 + signo; }

// Runs `work` until it completes (its result is returned) or a signal read from `signals`
// arrives first (Cancelled is returned and `*signal_number` set). A plain function, not a
// coroutine: destroying the work's frame is only safe from outside it.
template <typename T>
absl::StatusOr<T> RunUntilSignal(io::Reactor& reactor, io::SignalFd& signals,
                                 Task<absl::StatusOr<T>> work, int* signal_number) {
  *signal_number = 0;
  Task<absl::StatusOr<int>> signal = signals.Next(reactor);
  work.Start();
  if (!work.done()) signal.Start();
  while (!work.done() && !signal.done()) {
    const absl::StatusOr<size_t> resumed = reactor.RunOnce(/*block=*/true);
    if (!resumed.ok()) return resumed.status();
  }
  if (work.done()) {
    signal.Reset();
    return work.TakeResult();
  }
  work.Reset();
  const absl::StatusOr<int> signo = signal.TakeResult();
  if (!signo.ok()) return signo.status();
  *signal_number = *signo;
  return absl::CancelledError(absl::StrCat("interrupted by signal ", *signo));
}

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_INTERRUPT_H_

#include "io/signals.h"

#include <sys/signalfd.h>

#include <cerrno>
#include <cstring>

#include "absl/algorithm/container.h"
#include "core/status.h"
#include "io/ops.h"

namespace hotring::io {

absl::StatusOr<SignalFd> SignalFd::Create(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : signals) sigaddset(&set, sig);
  if (const int err = pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    return ErrnoStatus("pthread_sigmask", err);
  }
  const int fd = ::signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) return ErrnoStatus("signalfd");
  return SignalFd(UniqueFd(fd));
}

Task<absl::StatusOr<int>> SignalFd::Next(Reactor& reactor) {
  BufferResult result = co_await Read(reactor, fd_.get(), Buffer(sizeof(signalfd_siginfo)));
  // EINTR and ECANCELED are no errors of ours: once a signal outside the set has woken the
  // signalfd's poll, io_uring completes the read in a worker thread blocked in the signalfd,
  // and a stop of the process (SIGSTOP/SIGCONT, a debugger attaching, a freezer) interrupts it
  // (EINTR); Linux 6.1 instead cancels the worker's read when such a signal arrives
  // (ECANCELED; nothing here cancels this read: a dropped task never sees its result), and
  // 6.1 on arm64 was seen to pass the worker's own restart code up, ERESTARTSYS (512), which
  // never reaches a program through a system call (other io_uring users retry it too). Read
  // again, a bounded number of times in a row, so a kernel that fails every read at once
  // cannot make this spin.
  constexpr int kMaxRetries = 1000;
  // The kernel's restart codes (linux/errno.h): ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND,
  // ERESTART_RESTARTBLOCK.
  constexpr int kRestartCodes[] = {512, 513, 514, 516};
  for (int retries = 0; retries < kMaxRetries && !result.bytes.ok(); ++retries) {
    const int err = StatusErrno(result.bytes.status());
    const bool restart = absl::c_linear_search(kRestartCodes, err);
    if (err != EINTR && err != ECANCELED && !restart) break;
    result = co_await Read(reactor, fd_.get(), Buffer(sizeof(signalfd_siginfo)));
  }
  if (!result.bytes.ok()) co_return result.bytes.status();
  if (*result.bytes != sizeof(signalfd_siginfo)) {
    co_return absl::InternalError("signalfd: short read");
  }
  signalfd_siginfo info;
  std::memcpy(&info, result.buffer.data(), sizeof(info));
  co_return static_cast<int>(info.ssi_signo);
}

}  // namespace hotring::io

#include "io/process/child_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace hotring::io::process {
namespace {

int SendSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

}  // namespace

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      stdout_(std::move(other.stdout_)),
      stderr_(std::move(other.stderr_)),
      group_(other.group_),
      reaped_(std::exchange(other.reaped_, false)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    stdout_ = std::move(other.stdout_);
    stderr_ = std::move(other.stderr_);
    group_ = other.group_;
    reaped_ = std::exchange(other.reaped_, false);
  }
  return *this;
}

absl::Status ChildProcess::Signal(int sig) {
  if (reaped_ || !pidfd_) return absl::FailedPreconditionError("signal: child already reaped");
  if (SendSignal(pidfd_.get(), sig) < 0 && errno != ESRCH) {
    return ErrnoStatus("pidfd_send_signal");
  }
  if (group_ == ProcessGroup::kShared) return absl::OkStatus();
  return SignalGroup(sig);
}

absl::Status ChildProcess::SignalGroup(int sig) {
  if (reaped_ || !pidfd_) return absl::FailedPreconditionError("signal: child already reaped");
  if (group_ == ProcessGroup::kShared) {
    return absl::FailedPreconditionError("signal: the child has no process group of its own");
  }
  // ESRCH: the child moved itself to another group and nothing is left in this one.
  if (::kill(-pid_, sig) < 0 && errno != ESRCH) return ErrnoStatus("kill(-pgid)");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<io::ExitStatus>> ChildProcess::TryReap() {
  if (reaped_ || !pidfd_) return absl::FailedPreconditionError("waitid: child already reaped");
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED | WNOHANG) < 0) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) {
        reaped_ = true;
        return absl::InternalError(
            "waitid: the child was reaped by someone else (is SIGCHLD set to SIG_IGN?)");
      }
      return ErrnoStatus("waitid(P_PIDFD)");
    }
    if (info.si_pid == 0) return std::nullopt;
    reaped_ = true;
    return io::ExitStatusFromSiginfo(info);
  }
}

absl::StatusOr<io::ExitStatus> ChildProcess::WaitBlocking() {
  if (reaped_ || !pidfd_) return absl::FailedPreconditionError("waitid: child already reaped");
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED) < 0) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) reaped_ = true;
      return ErrnoStatus("waitid(P_PIDFD)");
    }
    reaped_ = true;
    return io::ExitStatusFromSiginfo(info);
  }
}

Task<absl::StatusOr<io::ExitStatus>> ChildProcess::Wait(io::Reactor& reactor) {
  for (;;) {
    HOTRING_CO_ASSIGN_OR_RETURN(std::optional<io::ExitStatus> status, TryReap());
    if (status.has_value()) co_return *status;
    // The pidfd polls readable once the child is a zombie.
    const absl::StatusOr<unsigned> ready = co_await io::Poll(reactor, pidfd_.get(), POLLIN);
    if (!ready.ok()) co_return ready.status();
  }
}

Task<absl::StatusOr<std::string>> ChildProcess::ReadStdout(io::Reactor& reactor) {
  if (!stdout_) co_return absl::FailedPreconditionError("child has no stdout pipe");
  // Bytes read before going back to the reactor, so a child that writes without pause does
  // not starve the other tasks.
  constexpr size_t kRoundBytes = 256 * 1024;
  std::string out;
  char chunk[4096];
  size_t round = 0;
  // The read end is non-blocking: poll, then read what is there (a cancelled poll loses no
  // data, which a cancelled read that already completed could not promise).
  for (;;) {
    if (round < kRoundBytes) {
      const ssize_t n = ::read(stdout_.get(), chunk, sizeof(chunk));
      if (n > 0) {
        out.append(chunk, static_cast<size_t>(n));
        round += static_cast<size_t>(n);
        continue;
      }
      if (n == 0) co_return out;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) co_return ErrnoStatus("read(child stdout)");
    }
    round = 0;
    const absl::StatusOr<unsigned> ready = co_await io::Poll(reactor, stdout_.get(), POLLIN);
    if (!ready.ok()) co_return ready.status();
  }
}

void ChildProcess::KillAndReap() {
  if (reaped_ || !pidfd_) return;
  if (group_ == ProcessGroup::kOwn) (void)::kill(-pid_, SIGKILL);
  (void)SendSignal(pidfd_.get(), SIGKILL);
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED) < 0 &&
        errno == EINTR) {
      continue;
    }
    break;
  }
  reaped_ = true;
}

absl::StatusOr<ChildProcess> ForkChild(absl::FunctionRef<int()> body) {
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) ::_exit(body());
  // The child is not reaped until we wait, so its pid cannot have been reused yet.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const absl::Status status = ErrnoStatus("pidfd_open");
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return status;
  }
  return ChildProcess(pid, UniqueFd(pidfd), ProcessGroup::kShared);
}

std::string DescribeExit(const io::ExitStatus& status) {
  if (status.exited) return absl::StrCat("exit code ", status.code);
  return absl::StrCat("killed by signal ", status.code);
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exit ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return absl::StrCat("signal ", WTERMSIG(wait_status));
  return absl::StrCat("wait status ", wait_status);
}

}  // namespace hotring::io::process

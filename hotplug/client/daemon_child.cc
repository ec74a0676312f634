#include "hotplug/client/daemon_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/clock.h"
#include "core/status.h"
#include "io/process/child_process.h"

namespace hotring::hotplug {

using io::process::DescribeWaitStatus;

absl::StatusOr<DaemonChild> DaemonChild::Start(const Options& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  UniqueFd ready_read(pipe_fds[0]);
  UniqueFd ready_write(pipe_fds[1]);
  std::vector<std::string> args = options.argv;
  args.push_back("--ready-fd");
  args.push_back(absl::StrCat(kReadyFd));
  if (options.netlink_fd >= 0) {
    args.push_back("--netlink-fd");
    args.push_back(absl::StrCat(kNetlinkFd));
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) {
    // Every source first moved above the targets (fds 0-4), so that no dup2 below overwrites
    // a source still to be copied (at boot, with no console, the pipe may be fds 0 and 1).
    // The copies are close-on-exec; dup2 clears it on the targets only.
    const int sources[] = {options.stdin_fd, options.stdout_fd, options.stderr_fd,
                           ready_write.get(), options.netlink_fd};
    constexpr int kTargets = 5;
    int moved[kTargets];
    for (int i = 0; i < kTargets; ++i) {
      moved[i] = sources[i] < 0 ? -1 : ::fcntl(sources[i], F_DUPFD_CLOEXEC, 10);
      if (sources[i] >= 0 && moved[i] < 0) ::_exit(127);
    }
    for (int target = 0; target < kTargets; ++target) {
      if (moved[target] >= 0 && ::dup2(moved[target], target) < 0) ::_exit(127);
    }
    ::execv(options.program.c_str(), argv.data());
    std::fprintf(stderr, "hotring: exec %s: %s\n", options.program.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  // ready_write closes here: the daemon's copy is the only one, so its exit reads as end of
  // file.
  return DaemonChild(pid, std::move(ready_read));
}

DaemonChild::DaemonChild(DaemonChild&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), ready_(std::move(other.ready_)) {}

DaemonChild::~DaemonChild() { Kill(); }

absl::Status DaemonChild::WaitReady(absl::Duration timeout) {
  if (!ready_.valid()) return absl::OkStatus();
  const MonoTime deadline = MonoNow() + timeout;
  pollfd p{.fd = ready_.get(), .events = POLLIN, .revents = 0};
  int n;
  do {
    n = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus("poll(ready fd)");
  if (n == 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("the daemon was not ready in ", absl::FormatDuration(timeout)));
  }
  char byte = 0;
  ssize_t got;
  do {
    got = ::read(ready_.get(), &byte, 1);
  } while (got < 0 && errno == EINTR);
  ready_.Reset();
  if (got == 1 && byte == '\n') return absl::OkStatus();
  // It closes the ready fd before it prints why and exits: give it until the deadline.
  const absl::Duration left = std::max(absl::ZeroDuration(), Since(MonoNow(), deadline));
  if (const std::optional<int> status = WaitExit(left)) {
    return absl::InternalError(absl::StrCat("the daemon exited: ", DescribeWaitStatus(*status)));
  }
  return absl::InternalError("the daemon closed its ready fd without being ready");
}

absl::Status DaemonChild::CheckAlive() {
  if (pid_ <= 0) return absl::FailedPreconditionError("the daemon is not running");
  if (const std::optional<int> status = WaitExit(absl::ZeroDuration())) {
    return absl::InternalError(absl::StrCat("the daemon exited: ", DescribeWaitStatus(*status)));
  }
  return absl::OkStatus();
}

std::optional<int> DaemonChild::WaitExit(absl::Duration timeout) {
  if (pid_ <= 0) return std::nullopt;
  // Monotonic: at boot the realtime clock may jump (an RTC or NTP setting it).
  const MonoTime deadline = MonoNow() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      pid_ = -1;
      return status;
    }
    if (MonoNow() >= deadline) return std::nullopt;
    ::usleep(2000);
  }
}

int DaemonChild::Terminate(absl::Duration timeout) {
  if (pid_ <= 0) return 0;
  ::kill(pid_, SIGTERM);
  if (const std::optional<int> status = WaitExit(timeout)) return *status;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return status;
}

void DaemonChild::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace hotring::hotplug

#include "ipc/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/status.h"

extern char** environ;

namespace hotring::ipc {
namespace {

#ifndef P_PIDFD
constexpr idtype_t P_PIDFD = static_cast<idtype_t>(3);
#endif

// Descriptors handed to a child are first copied above this, so a dup2 never has the same
// source and target (which would keep close-on-exec set and close it at exec).
constexpr int kStagingFloor = 100;

// Owns a posix_spawn_file_actions_t.
class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

// Owns a posix_spawnattr_t.
class SpawnAttr {
 public:
  SpawnAttr() { ::posix_spawnattr_init(&attr_); }
  ~SpawnAttr() { ::posix_spawnattr_destroy(&attr_); }
  SpawnAttr(const SpawnAttr&) = delete;
  SpawnAttr& operator=(const SpawnAttr&) = delete;
  posix_spawnattr_t* get() { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

}  // namespace

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("spawn: empty argv");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);

  FileActions actions;
  std::vector<UniqueFd> staged;
  for (const auto& [parent_fd, child_fd] : spec.fds) {
    const int copy = ::fcntl(parent_fd, F_DUPFD_CLOEXEC, kStagingFloor);
    if (copy < 0) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC)");
    staged.emplace_back(copy);
    ::posix_spawn_file_actions_adddup2(actions.get(), copy, child_fd);
  }
  ::posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), STDOUT_FILENO);

  SpawnAttr attr;
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, sig);
  ::posix_spawnattr_setsigmask(attr.get(), &empty);
  ::posix_spawnattr_setsigdefault(attr.get(), &defaults);
  ::posix_spawnattr_setflags(attr.get(), POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  pid_t pid = -1;
  if (const int err =
          ::posix_spawn(&pid, spec.path.c_str(), actions.get(), attr.get(), argv.data(), environ);
      err != 0) {
    return ErrnoStatus(absl::StrCat("posix_spawn(", spec.path, ")"), err);
  }
  ChildProcess child;
  child.pid_ = pid;
  child.reaped_ = false;
  // The child is not reaped until we wait, so its pid cannot have been reused yet.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const absl::Status status = ErrnoStatus("pidfd_open");
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    child.reaped_ = true;
    return status;
  }
  child.pidfd_.Reset(pidfd);
  child.stdout_ = std::move(read_end);
  return child;
}

absl::StatusOr<ChildProcess> ChildProcess::Fork(absl::FunctionRef<int()> body) {
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) ::_exit(body());
  ChildProcess child;
  child.pid_ = pid;
  child.reaped_ = false;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const absl::Status status = ErrnoStatus("pidfd_open");
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    child.reaped_ = true;
    return status;
  }
  child.pidfd_.Reset(pidfd);
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      stdout_(std::move(other.stdout_)),
      reaped_(std::exchange(other.reaped_, true)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    stdout_ = std::move(other.stdout_);
    reaped_ = std::exchange(other.reaped_, true);
  }
  return *this;
}

ChildProcess::~ChildProcess() { KillAndReap(); }

void ChildProcess::KillAndReap() {
  if (reaped_ || !pidfd_.valid()) return;
  reaped_ = true;
  (void)::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  siginfo_t info{};
  // Fails with ECHILD if a cancelled IORING_OP_WAITID got there first; either way it is reaped.
  while (::waitid(P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED) != 0 &&
         errno == EINTR) {
  }
}

absl::Status ChildProcess::Signal(int signo) const {
  if (reaped_ || !pidfd_.valid()) return absl::OkStatus();
  if (::syscall(SYS_pidfd_send_signal, pidfd_.get(), signo, nullptr, 0) != 0 && errno != ESRCH) {
    return ErrnoStatus("pidfd_send_signal");
  }
  return absl::OkStatus();
}

Task<absl::StatusOr<std::string>> ChildProcess::ReadStdout(io::Reactor& reactor) {
  std::string out;
  if (!stdout_.valid()) co_return absl::FailedPreconditionError("child has no stdout pipe");
  io::Buffer buffer(4096);
  for (;;) {
    io::BufferResult got = co_await io::Read(reactor, stdout_.get(), std::move(buffer));
    if (!got.bytes.ok()) co_return got.bytes.status();
    if (*got.bytes == 0) break;
    out.append(got.buffer.data(), *got.bytes);
    buffer = std::move(got.buffer);
  }
  co_return out;
}

Task<absl::StatusOr<io::ExitStatus>> ChildProcess::Wait(io::Reactor& reactor) {
  absl::StatusOr<io::ExitStatus> status = co_await io::WaitForExit(reactor, pidfd_.get());
  if (status.ok()) reaped_ = true;
  co_return status;
}

std::string DescribeExit(const io::ExitStatus& status) {
  if (status.exited) return absl::StrCat("exit code ", status.code);
  return absl::StrCat("killed by signal ", status.code);
}

}  // namespace hotring::ipc

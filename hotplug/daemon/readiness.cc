#include "hotplug/daemon/readiness.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"
#include "io/process/child_process.h"
#include "io/socket.h"

namespace hotring::hotplug {
namespace {

// Writes all of `data` (a pipe write this small is atomic, but a signal may interrupt it).
absl::Status WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus("write");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}


// The --daemonize parent: waits for the child's word on `pipe` and returns the exit code.
int AwaitChild(pid_t child, const UniqueFd& pipe, absl::string_view name) {
  std::string said;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(pipe.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    said.append(buffer, static_cast<size_t>(n));
    if (said == "\n") return 0;  // it serves; it lives on without us
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (said.empty()) {
    said = absl::StrCat("the daemon ended before it was ready (",
                        io::process::DescribeWaitStatus(status), ")");
  }
  std::fprintf(stderr, "%s: %s\n", std::string(name).c_str(), said.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return code != 0 ? code : 1;
}

}  // namespace

absl::StatusOr<ReadinessNotifier> ReadinessNotifier::Create(std::optional<int> ready_fd,
                                                            std::string notify_socket) {
  ReadinessNotifier notifier;
  if (ready_fd.has_value()) {
    const int flags = ::fcntl(*ready_fd, F_GETFD);
    if (*ready_fd < 0 || flags < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ready-fd ", *ready_fd, ": not an open file descriptor"));
    }
    ::fcntl(*ready_fd, F_SETFD, flags | FD_CLOEXEC);
    notifier.ready_fd_ = UniqueFd(*ready_fd);
  }
  if (!notify_socket.empty() && notify_socket[0] != '/' && notify_socket[0] != '@') {
    LogWarning("NOTIFY_SOCKET=%s: not a path or an abstract name; not notifying it",
               notify_socket);
    notify_socket.clear();
  }
  notifier.notify_socket_ = std::move(notify_socket);
  return notifier;
}

void ReadinessNotifier::Ready() {
  if (std::exchange(told_, true)) return;
  for (UniqueFd* fd : {&ready_fd_, &parent_pipe_}) {
    if (!fd->valid()) continue;
    if (const absl::Status written = WriteAll(fd->get(), "\n"); !written.ok()) {
      LogInfo("readiness: nobody waits on fd %d any more (%s)", fd->get(), written.ToString());
    }
    fd->Reset();
  }
  if (!notify_socket_.empty()) {
    if (const absl::Status sent = SendNotify(notify_socket_, "READY=1"); !sent.ok()) {
      LogWarning("readiness: NOTIFY_SOCKET=%s: %s", notify_socket_, sent.ToString());
    }
  }
}

void ReadinessNotifier::Failed(absl::string_view message) {
  if (std::exchange(told_, true)) return;
  // An empty message would read as end of file: the parent says "ended before it was ready".
  if (parent_pipe_.valid()) (void)WriteAll(parent_pipe_.get(), message);
  parent_pipe_.Reset();
  ready_fd_.Reset();
}

absl::StatusOr<std::optional<int>> ReadinessNotifier::Daemonize(absl::string_view name) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t child = ::fork();
  if (child < 0) return ErrnoStatus("fork");
  if (child > 0) {
    write_end.Reset();  // the child's copy is the only one: its exit reads as end of file
    return std::optional<int>(AwaitChild(child, read_end, name));
  }
  read_end.Reset();
  // A session of its own: no controlling terminal, and the caller's job control (a shell
  // closing, a terminal hangup) does not reach it.
  (void)::setsid();
  parent_pipe_ = std::move(write_end);
  return std::optional<int>();
}

absl::Status SendNotify(absl::string_view name, absl::string_view state) {
  absl::StatusOr<io::SocketAddress> address = io::UnixAddress(name);
  if (!address.ok()) return address.status();
  absl::StatusOr<UniqueFd> fd = io::UnixSocket(SOCK_DGRAM);
  if (!fd.ok()) return fd.status();
  if (::sendto(fd->get(), state.data(), state.size(), MSG_NOSIGNAL, address->get(),
               address->length) != static_cast<ssize_t>(state.size())) {
    return ErrnoStatus(absl::StrCat("sendto(", name, ")"));
  }
  return absl::OkStatus();
}

}  // namespace hotring::hotplug

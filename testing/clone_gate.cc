#include "testing/clone_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "testing/daemon_fixture.h"

namespace hotring::testing {
namespace {

std::string CloneGateExec() {
  if (const char* dir = std::getenv("TEST_SRCDIR")) {
    for (const char* rel : {"/hotring/testing/clone_gate_exec", "/__main__/testing/clone_gate_exec"}) {
      const std::string path = absl::StrCat(dir, rel);
      if (::access(path.c_str(), X_OK) == 0) return path;
    }
  }
  return "testing/clone_gate_exec";
}

// The descriptor passed with one byte over `conn` (SCM_RIGHTS), or an invalid one.
UniqueFd ReceiveFd(int conn) {
  char byte;
  iovec iov{&byte, 1};
  char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (::recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) != 1) return UniqueFd();
  const cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == nullptr || cmsg->cmsg_type != SCM_RIGHTS) return UniqueFd();
  int fd;
  std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return UniqueFd(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CloneGate>> CloneGate::Create(int error) {
  // An abstract name: a test's temporary directory is too deep for sun_path.
  static std::atomic<int> counter{0};
  std::string name = absl::StrCat("hotring-clone-gate-", ::getpid(), "-", counter++);
  UniqueFd listen(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listen.valid()) return ErrnoStatus("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + name.size();
  if (::bind(listen.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    return ErrnoStatus("bind");
  }
  if (::listen(listen.get(), 4) != 0) return ErrnoStatus("listen");
  int stop[2];
  if (::pipe2(stop, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  std::unique_ptr<CloneGate> gate(
      new CloneGate(error, "@" + name, std::move(listen), UniqueFd(stop[0]), UniqueFd(stop[1])));
  gate->thread_ = std::thread([g = gate.get()] { g->Serve(); });
  return gate;
}

CloneGate::CloneGate(int error, std::string name, UniqueFd listen, UniqueFd stop_read,
                     UniqueFd stop_write)
    : error_(error),
      name_(std::move(name)),
      listen_(std::move(listen)),
      stop_read_(std::move(stop_read)),
      stop_write_(std::move(stop_write)) {}

CloneGate::~CloneGate() {
  const char byte = 's';
  (void)!::write(stop_write_.get(), &byte, 1);
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> CloneGate::CommandPrefix() const {
  return {CloneGateExec(), name_};
}

// Until the destructor writes to the stop pipe: accepts gated programs and answers their
// process creations. A listener whose processes have all exited reports POLLHUP and is closed.
void CloneGate::Serve() {
  std::vector<UniqueFd> listeners;
  while (true) {
    std::vector<pollfd> fds = {{stop_read_.get(), POLLIN, 0}, {listen_.get(), POLLIN, 0}};
    for (const UniqueFd& l : listeners) fds.push_back({l.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    std::vector<UniqueFd> kept;
    for (size_t i = 2; i < fds.size(); ++i) {
      UniqueFd& listener = listeners[i - 2];
      if ((fds[i].revents & POLLIN) != 0 && Answer(listener.get())) {
        kept.push_back(std::move(listener));
      } else if ((fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) == 0) {
        kept.push_back(std::move(listener));
      }
    }
    listeners = std::move(kept);
    if ((fds[1].revents & POLLIN) != 0) {
      UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn.valid()) {
        UniqueFd listener = ReceiveFd(conn.get());
        if (listener.valid()) listeners.push_back(std::move(listener));
      }
    }
  }
}

// Receives one notification and answers it; false when the listener is finished.
bool CloneGate::Answer(int listener) {
  seccomp_notif req;
  std::memset(&req, 0, sizeof(req));
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
    // ENOENT: the caller went away (killed) between the wakeup and the receive.
    return errno == ENOENT || errno == EINTR;
  }
  // A thread (CLONE_THREAD) always proceeds: the gate is about processes.
  uint64_t flags = 0;
  if (req.data.nr == __NR_clone) {
    flags = req.data.args[0];
  } else if (req.data.nr == __NR_clone3) {
    iovec local{&flags, sizeof(flags)};
    iovec remote{reinterpret_cast<void*>(req.data.args[0]), sizeof(flags)};  // clone_args.flags
    if (::process_vm_readv(static_cast<pid_t>(req.pid), &local, 1, &remote, 1, 0) !=
        static_cast<ssize_t>(sizeof(flags))) {
      flags = 0;
    }
  }
  const bool fail = failing_.load() && (flags & CLONE_THREAD) == 0;
  seccomp_notif_resp resp;
  std::memset(&resp, 0, sizeof(resp));
  resp.id = req.id;
  if (fail) {
    resp.error = -error_;
  } else {
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  }
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0 && (flags & CLONE_THREAD) == 0) {
    (fail ? failed_ : allowed_).fetch_add(1);
  }
  return true;
}

}  // namespace hotring::testing

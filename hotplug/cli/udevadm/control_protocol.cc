#include "hotplug/cli/udevadm/deadline.h"
#include "hotplug/cli/udevadm/control_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udevadm {
absl::StatusOr<std::string> EncodeUdevControl(const UdevControlMessage& message) {
  if (message.text.size() >= udev::kControlBufSize) {
    return absl::InvalidArgumentError("control message value longer than 255 bytes");
  }
  return udev::EncodeControlMessage(message.type, message.intval, message.text);
}

absl::Status SendUdevControl(const std::string& socket_path,
                             const std::vector<UdevControlMessage>& messages,
                             absl::Duration timeout) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return absl::InvalidArgumentError("socket path too long");
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("socket");
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      return absl::UnavailableError(absl::StrCat("connect ", socket_path, ": ", strerror(err)));
    }
    return ErrnoStatus(absl::StrCat("connect ", socket_path), err);
  }
  // As 252 does (golden control_messages, control_separate): --exit goes alone, without the
  // end marker, and nothing is waited for: the daemon is going away.
  bool exit = false;
  for (const UdevControlMessage& m : messages) exit = exit || m.type == UdevControlType::kExit;
  std::vector<UdevControlMessage> all = messages;
  if (exit) {
    all = {{.type = UdevControlType::kExit}};
  } else {
    all.push_back({.type = UdevControlType::kEndMessages});
  }
  for (const UdevControlMessage& m : all) {
    absl::StatusOr<std::string> bytes = EncodeUdevControl(m);
    if (!bytes.ok()) return bytes.status();
    if (send(fd.get(), bytes->data(), bytes->size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes->size())) {
      return ErrnoStatus("send");
    }
  }
  if (exit) return absl::OkStatus();
  // The daemon closes the connection once it has handled everything.
  const Deadline deadline(timeout);
  for (;;) {
    const absl::Duration left = deadline.Left();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("Connection timed out");
    pollfd p = {fd.get(), POLLIN, 0};
    const int64_t ms = absl::ToInt64Milliseconds(left);
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(std::max<int64_t>(ms, 1), 1 << 30)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("poll");
    }
    if (n == 0) continue;
    char buf[kUdevControlMessageSize];
    const ssize_t got = recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR) || (p.revents & POLLHUP) != 0) {
      return absl::OkStatus();
    }
  }
}

absl::Status PingUdevControl(const std::string& socket_path, absl::Duration timeout) {
  return SendUdevControl(socket_path, {{.type = UdevControlType::kPing}}, timeout);
}

}  // namespace hotring::hotplug::udevadm

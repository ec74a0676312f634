#include "io/netlink.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace hotring::io {
namespace {

absl::Status CheckGroup(uint32_t group) {
  if (group < 1 || group > kUeventMaxGroup) {
    return absl::InvalidArgumentError(
        absl::StrCat("netlink uevent group must be 1..", kUeventMaxGroup, ", not ", group));
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> UeventSocket() {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
  if (fd < 0) return ErrnoStatus("socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)");
  return UniqueFd(fd);
}

}  // namespace

absl::StatusOr<ReceiveBuffer> SetReceiveBuffer(int fd, int bytes) {
  ReceiveBuffer result;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) == 0) {
    result.forced = true;
  } else if (errno != EPERM) {
    return ErrnoStatus("setsockopt(SO_RCVBUFFORCE)");
  } else if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) != 0) {
    return ErrnoStatus("setsockopt(SO_RCVBUF)");
  }
  socklen_t length = sizeof(result.bytes);
  if (::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &result.bytes, &length) != 0) {
    return ErrnoStatus("getsockopt(SO_RCVBUF)");
  }
  return result;
}

absl::StatusOr<UeventListener> OpenUeventListener(const UeventListenerOptions& options) {
  HOTRING_RETURN_IF_ERROR(CheckGroup(options.group));
  if (options.receive_buffer < 0) {
    return absl::InvalidArgumentError("netlink receive buffer must not be negative");
  }
  UeventListener listener;
  HOTRING_ASSIGN_OR_RETURN(listener.fd, UeventSocket());
  const int fd = listener.fd.get();
  // Before bind: once bound, the kernel may queue (and overrun) before we could grow the buffer.
  if (options.receive_buffer > 0) {
    HOTRING_ASSIGN_OR_RETURN(const ReceiveBuffer buffer,
                             SetReceiveBuffer(fd, options.receive_buffer));
    listener.receive_buffer = buffer.bytes;
    listener.receive_buffer_forced = buffer.forced;
  } else {
    socklen_t length = sizeof(listener.receive_buffer);
    if (::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &listener.receive_buffer, &length) != 0) {
      return ErrnoStatus("getsockopt(SO_RCVBUF)");
    }
  }
  if (options.pass_credentials) {
    const int one = 1;
    if (::setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
      return ErrnoStatus("setsockopt(SO_PASSCRED)");
    }
  }
  sockaddr_nl address{};
  address.nl_family = AF_NETLINK;
  address.nl_pid = 0;  // let the kernel choose a unique port id
  address.nl_groups = 1u << (options.group - 1);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return ErrnoStatus(absl::StrCat("bind(netlink uevent group ", options.group, ")"));
  }
  sockaddr_nl bound{};
  socklen_t bound_length = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0) {
    return ErrnoStatus("getsockname(netlink)");
  }
  listener.port_id = bound.nl_pid;
  return listener;
}

absl::StatusOr<UeventListener> AdoptUeventListener(UniqueFd fd, uint32_t group) {
  HOTRING_RETURN_IF_ERROR(CheckGroup(group));
  if (!fd.valid()) return absl::InvalidArgumentError("netlink fd: not an open descriptor");
  const int raw = fd.get();
  auto option = [raw](int name, const char* what) -> absl::StatusOr<int> {
    int value = 0;
    socklen_t length = sizeof(value);
    if (::getsockopt(raw, SOL_SOCKET, name, &value, &length) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("netlink fd ", raw, ": getsockopt(", what,
                                                     "): ", std::strerror(errno),
                                                     " (not a socket?)"));
    }
    return value;
  };
  HOTRING_ASSIGN_OR_RETURN(const int domain, option(SO_DOMAIN, "SO_DOMAIN"));
  HOTRING_ASSIGN_OR_RETURN(const int protocol, option(SO_PROTOCOL, "SO_PROTOCOL"));
  if (domain != AF_NETLINK || protocol != NETLINK_KOBJECT_UEVENT) {
    return absl::InvalidArgumentError(absl::StrCat("netlink fd ", raw,
                                                   ": not a NETLINK_KOBJECT_UEVENT socket (domain ",
                                                   domain, ", protocol ", protocol, ")"));
  }
  sockaddr_nl bound{};
  socklen_t bound_length = sizeof(bound);
  if (::getsockname(raw, reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0) {
    return ErrnoStatus("getsockname(netlink)");
  }
  if ((bound.nl_groups & (1u << (group - 1))) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("netlink fd ", raw, ": not bound to uevent group ", group));
  }
  if (::fcntl(raw, F_SETFD, FD_CLOEXEC) != 0) return ErrnoStatus("fcntl(netlink fd, FD_CLOEXEC)");
  const int one = 1;
  if (::setsockopt(raw, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
    return ErrnoStatus("setsockopt(SO_PASSCRED)");
  }
  UeventListener listener;
  HOTRING_ASSIGN_OR_RETURN(listener.receive_buffer, option(SO_RCVBUF, "SO_RCVBUF"));
  listener.port_id = bound.nl_pid;
  listener.fd = std::move(fd);
  return listener;
}

absl::StatusOr<UniqueFd> OpenUeventSender() { return UeventSocket(); }

absl::StatusOr<SocketAddress> UeventGroupAddress(uint32_t group) {
  HOTRING_RETURN_IF_ERROR(CheckGroup(group));
  sockaddr_nl nl{};
  nl.nl_family = AF_NETLINK;
  nl.nl_pid = 0;
  nl.nl_groups = 1u << (group - 1);
  SocketAddress address;
  std::memcpy(&address.storage, &nl, sizeof(nl));
  address.length = sizeof(nl);
  return address;
}

absl::Status SendToGroup(int fd, uint32_t group, absl::string_view datagram) {
  HOTRING_ASSIGN_OR_RETURN(const SocketAddress address, UeventGroupAddress(group));
  for (;;) {
    const ssize_t sent =
        ::sendto(fd, datagram.data(), datagram.size(), 0, address.get(), address.length);
    if (sent >= 0) break;
    if (errno == EINTR) continue;
    return ErrnoStatus(absl::StrCat("sendto(netlink group ", group, ")"));
  }
  return absl::OkStatus();
}

NetlinkOrigin CheckNetlinkOrigin(const SocketAddress& peer,
                                 const std::optional<ucred>& credentials) {
  if (peer.length < static_cast<socklen_t>(sizeof(sockaddr_nl))) return NetlinkOrigin::kNotKernel;
  sockaddr_nl nl;
  std::memcpy(&nl, &peer.storage, sizeof(nl));
  if (nl.nl_family != AF_NETLINK || nl.nl_pid != 0) return NetlinkOrigin::kNotKernel;
  if (credentials.has_value() && credentials->uid != 0) return NetlinkOrigin::kNotRoot;
  return NetlinkOrigin::kKernel;
}

absl::string_view NetlinkDropReason(NetlinkOrigin origin) {
  switch (origin) {
    case NetlinkOrigin::kKernel:
      return "";
    case NetlinkOrigin::kNotKernel:
      return "not_kernel";
    case NetlinkOrigin::kNotRoot:
      return "not_root";
  }
  return "not_kernel";
}

}  // namespace hotring::io

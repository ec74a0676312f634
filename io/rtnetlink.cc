#include "io/rtnetlink.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::io {

bool ValidInterfaceName(absl::string_view name) {
  if (name.empty() || name.size() >= IFNAMSIZ || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == ':' || c == '\0' || absl::ascii_isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

absl::Status RenameInterface(int ifindex, absl::string_view name) {
  if (!ValidInterfaceName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not an interface name"));
  }
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return ErrnoStatus("socket(NETLINK_ROUTE)");
  struct Request {
    nlmsghdr header;
    ifinfomsg info;
    char attributes[RTA_SPACE(IFNAMSIZ)];
  } request;
  std::memset(&request, 0, sizeof(request));
  request.header.nlmsg_type = RTM_SETLINK;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  request.header.nlmsg_seq = 1;
  request.info.ifi_family = AF_UNSPEC;
  request.info.ifi_index = ifindex;
  auto* attribute = reinterpret_cast<rtattr*>(request.attributes);
  attribute->rta_type = IFLA_IFNAME;
  attribute->rta_len = static_cast<unsigned short>(RTA_LENGTH(name.size() + 1));
  std::memcpy(RTA_DATA(attribute), name.data(), name.size());
  request.header.nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(sizeof(ifinfomsg)) + RTA_ALIGN(attribute->rta_len));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &request, request.header.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
    return ErrnoStatus("sendto(RTM_SETLINK)");
  }
  alignas(nlmsghdr) char reply[4096];
  for (;;) {
    const ssize_t got = ::recv(fd.get(), reply, sizeof(reply), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return ErrnoStatus("recv(RTM_SETLINK)");
    unsigned left = static_cast<unsigned>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(reply); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != 1 || h->nlmsg_type != NLMSG_ERROR) continue;
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
      if (error->error == 0) return absl::OkStatus();
      errno = -error->error;
      return ErrnoStatus(absl::StrCat("rename of interface ", ifindex, " to ", name));
    }
  }
}

}  // namespace hotring::io

// RealLinkSystem: an interface's facts from the kernel, as udevd's link_new reads them
// (rtnl_get_link_info, then ethtool for the permanent address and the driver).
#include <net/if.h>
// After net/if.h: the linux headers then leave its IFF_* alone.
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/udev/net_setup_link.h"

namespace hotring::hotplug::udev {
namespace {

// The answer to RTM_GETLINK for one interface, read with a deadline.
absl::Status QueryLink(int ifindex, LinkFacts* facts) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return ErrnoStatus("socket(NETLINK_ROUTE)");
  const struct timeval timeout = {.tv_sec = 2, .tv_usec = 0};
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  struct {
    struct nlmsghdr header;
    struct ifinfomsg info;
  } request;
  std::memset(&request, 0, sizeof(request));
  request.header.nlmsg_len = sizeof(request);
  request.header.nlmsg_type = RTM_GETLINK;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = 1;
  request.info.ifi_family = AF_UNSPEC;
  request.info.ifi_index = ifindex;
  if (::send(fd.get(), &request, sizeof(request), 0) < 0) return ErrnoStatus("send(RTM_GETLINK)");
  alignas(struct nlmsghdr) char buffer[32768];
  const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), 0);
  if (n < 0) return ErrnoStatus("recv(RTM_GETLINK)");
  size_t left = static_cast<size_t>(n);
  for (const struct nlmsghdr* h = reinterpret_cast<const struct nlmsghdr*>(buffer); NLMSG_OK(h, left);
       h = NLMSG_NEXT(h, left)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      const auto* err = static_cast<const struct nlmsgerr*>(NLMSG_DATA(h));
      if (err->error == -ENODEV) return absl::NotFoundError(absl::StrCat("no interface ", ifindex));
      return ErrnoStatus("RTM_GETLINK", -err->error);
    }
    if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg))) continue;
    const auto* info = static_cast<const struct ifinfomsg*>(NLMSG_DATA(h));
    facts->iftype = info->ifi_type;
    facts->flags = info->ifi_flags;
    int attr_len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(*info)));
    for (const struct rtattr* a = IFLA_RTA(info); RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
      const auto* data = static_cast<const uint8_t*>(RTA_DATA(a));
      const size_t size = RTA_PAYLOAD(a);
      switch (a->rta_type) {
        case IFLA_ADDRESS:
          facts->hw_addr.assign(data, data + size);
          break;
        case IFLA_PERM_ADDRESS:
          facts->permanent_hw_addr.assign(data, data + size);
          break;
        case IFLA_PROP_LIST: {
          int nested = static_cast<int>(size);
          for (const struct rtattr* p = static_cast<const struct rtattr*>(RTA_DATA(a)); RTA_OK(p, nested);
               p = RTA_NEXT(p, nested)) {
            if (p->rta_type == IFLA_ALT_IFNAME) {
              facts->alternative_names.emplace_back(static_cast<const char*>(RTA_DATA(p)),
                                                    strnlen(static_cast<const char*>(RTA_DATA(p)), RTA_PAYLOAD(p)));
            }
          }
          break;
        }
        case IFLA_LINKINFO: {
          int nested = static_cast<int>(size);
          for (const struct rtattr* p = static_cast<const struct rtattr*>(RTA_DATA(a)); RTA_OK(p, nested);
               p = RTA_NEXT(p, nested)) {
            if (p->rta_type == IFLA_INFO_KIND) {
              facts->kind.assign(static_cast<const char*>(RTA_DATA(p)),
                                 strnlen(static_cast<const char*>(RTA_DATA(p)), RTA_PAYLOAD(p)));
            }
          }
          break;
        }
        default:
          break;
      }
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("no answer for interface ", ifindex));
}

}  // namespace

absl::StatusOr<LinkFacts> RealLinkSystem::Facts(int ifindex, absl::string_view ifname) {
  LinkFacts facts;
  HOTRING_RETURN_IF_ERROR(QueryLink(ifindex, &facts));
  if (ifname.size() >= IFNAMSIZ) return facts;
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return facts;
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof(ifr));
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  if (!facts.hw_addr.empty() && facts.permanent_hw_addr.empty()) {
    // struct ethtool_perm_addr (cmd, size) followed by up to 32 address bytes.
    alignas(struct ethtool_perm_addr) uint8_t perm[sizeof(struct ethtool_perm_addr) + 32] = {};
    auto* header = reinterpret_cast<struct ethtool_perm_addr*>(perm);
    header->cmd = ETHTOOL_GPERMADDR;
    header->size = 32;
    ifr.ifr_data = reinterpret_cast<char*>(perm);
    // ethtool's answer, unless it is all zeros or all ones (no permanent address).
    if (::ioctl(fd.get(), SIOCETHTOOL, &ifr) == 0 && header->size <= 32) {
      const uint8_t* b = perm + sizeof(struct ethtool_perm_addr);
      bool zero = true, ones = true;
      for (uint32_t i = 0; i < header->size; ++i) {
        zero = zero && b[i] == 0;
        ones = ones && b[i] == 0xff;
      }
      if (!zero && !ones) facts.permanent_hw_addr.assign(b, b + header->size);
    }
  }
  struct ethtool_drvinfo drv;
  std::memset(&drv, 0, sizeof(drv));
  drv.cmd = ETHTOOL_GDRVINFO;
  ifr.ifr_data = reinterpret_cast<char*>(&drv);
  if (::ioctl(fd.get(), SIOCETHTOOL, &ifr) == 0 && drv.driver[0] != '\0') {
    facts.driver.assign(drv.driver, strnlen(drv.driver, sizeof(drv.driver)));
  }
  return facts;
}

}  // namespace hotring::hotplug::udev

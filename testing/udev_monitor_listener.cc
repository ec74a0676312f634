#include "testing/udev_monitor_listener.h"

#include <linux/netlink.h>
#include <sys/socket.h>

#include <utility>

#include "core/status.h"
#include "hotplug/udev/monitor.h"

namespace hotring::testing {

absl::StatusOr<UdevMonitorListener> UdevMonitorListener::Open() {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT));
  if (!fd.valid()) return ErrnoStatus("socket(NETLINK_KOBJECT_UEVENT)");
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = 1u << (hotplug::udev::kUdevMonitorGroup - 1);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoStatus("bind(udev monitor group)");
  }
  return UdevMonitorListener(std::move(fd));
}

std::vector<std::string> UdevMonitorListener::Receive() {
  std::vector<std::string> out;
  // Twice libudev's buffer: a message it would truncate still arrives whole here.
  char buf[2 * hotplug::udev::kMaxMonitorMessage];
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    out.emplace_back(buf, static_cast<size_t>(n));
    received_.push_back(out.back());
  }
  return out;
}

absl::StatusOr<std::vector<std::map<std::string, std::string>>> UdevMonitorListener::ReceiveAnnouncements() {
  std::vector<std::map<std::string, std::string>> out;
  for (const std::string& datagram : Receive()) {
    HOTRING_ASSIGN_OR_RETURN(auto properties, hotplug::udev::DecodeMonitorMessage(datagram));
    out.emplace_back(properties.begin(), properties.end());
  }
  return out;
}

}  // namespace hotring::testing

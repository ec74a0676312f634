#include "hotplug/cli/udevadm/monitor_format.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hotplug/udev/monitor.h"

namespace hotring::hotplug::udevadm {
namespace {

// Offsets of libudev's header fields, as the socket filter reads them (big-endian words).
constexpr size_t kMagicAt = 8;
constexpr size_t kSubsystemHashAt = 24;
constexpr size_t kDevtypeHashAt = 28;
constexpr size_t kBloomHiAt = 32;
constexpr size_t kBloomLoAt = 36;

uint32_t GetBe32(absl::string_view in, size_t at) {
  uint32_t be;
  std::memcpy(&be, in.data() + at, 4);
  return ntohl(be);
}

}  // namespace

bool MonitorFilter::PassesSocketFilter(absl::string_view datagram) const {
  if (subsystems.empty() && tags.empty()) return true;
  // A socket filter that reads past the end of a datagram drops it.
  if (datagram.size() < kMagicAt + 4) return false;
  if (GetBe32(datagram, kMagicAt) != udev::kUdevMonitorMagic) return true;
  if (!tags.empty()) {
    if (datagram.size() < kBloomLoAt + 4) return false;
    const uint32_t hi = GetBe32(datagram, kBloomHiAt), lo = GetBe32(datagram, kBloomLoAt);
    const bool any = std::any_of(tags.begin(), tags.end(), [&](const std::string& tag) {
      const uint64_t bits = udev::TagBloomBits(tag);
      const uint32_t tag_hi = static_cast<uint32_t>(bits >> 32), tag_lo = static_cast<uint32_t>(bits);
      return (hi & tag_hi) == tag_hi && (lo & tag_lo) == tag_lo;
    });
    if (!any) return false;
  }
  if (subsystems.empty()) return true;
  if (datagram.size() < kDevtypeHashAt + 4) return false;
  return std::any_of(subsystems.begin(), subsystems.end(), [&](const auto& filter) {
    const auto& [subsystem, devtype] = filter;
    return udev::MurmurHash2(subsystem) == GetBe32(datagram, kSubsystemHashAt) &&
           (!devtype || udev::MurmurHash2(*devtype) == GetBe32(datagram, kDevtypeHashAt));
  });
}

bool MonitorFilter::Passes(const MonitorDevice& device) const {
  if (!subsystems.empty()) {
    const bool any = std::any_of(subsystems.begin(), subsystems.end(), [&](const auto& filter) {
      const auto& [subsystem, devtype] = filter;
      return subsystem == device.subsystem && (!devtype || devtype == device.devtype);
    });
    if (!any) return false;
  }
  if (!tags.empty()) {
    return std::any_of(tags.begin(), tags.end(), [&](const std::string& tag) {
      return std::find(device.tags.begin(), device.tags.end(), tag) != device.tags.end();
    });
  }
  return true;
}

std::string FormatMonitorEvent(const MonitorDevice& device, bool udev, timespec now, bool properties) {
  std::string out = absl::StrFormat("%-6s[%d.%06d] %-8s %s (%s)\n", udev ? "UDEV" : "KERNEL",
                                    static_cast<long long>(now.tv_sec), static_cast<long>(now.tv_nsec / 1000),
                                    device.action, device.devpath, device.subsystem);
  if (properties) {
    for (const auto& [k, v] : device.properties) absl::StrAppend(&out, k, "=", v, "\n");
    out += "\n";
  }
  return out;
}

std::string MonitorHeader(bool udev, bool kernel) {
  std::string out = "monitor will print the received events for:\n";
  if (udev) out += "UDEV - the event which udev sends out after rule processing\n";
  if (kernel) out += "KERNEL - the kernel uevent\n";
  out += "\n";
  return out;
}

}  // namespace hotring::hotplug::udevadm

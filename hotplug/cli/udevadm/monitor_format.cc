#include "hotplug/cli/udevadm/monitor_format.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udevadm {
namespace {

void AddUnique(std::vector<std::string>& set, absl::string_view value) {
  if (std::find(set.begin(), set.end(), value) == set.end()) set.emplace_back(value);
}

}  // namespace

absl::StatusOr<MonitorDevice> MonitorDeviceFromProperties(
    const std::vector<std::pair<std::string, std::string>>& properties) {
  MonitorDevice d;
  std::optional<std::string> major, minor;
  std::vector<std::string> devlinks, current_tags;
  bool seqnum = false;
  for (const auto& [key, value] : properties) {
    if (key == "MAJOR") {
      major = value;
      continue;
    }
    if (key == "MINOR") {
      minor = value;
      continue;
    }
    if (key == "DEVLINKS") {
      for (absl::string_view l : absl::StrSplit(value, ' ', absl::SkipEmpty())) AddUnique(devlinks, l);
      continue;
    }
    if (key == "TAGS" || key == "CURRENT_TAGS") {
      for (absl::string_view t : absl::StrSplit(value, ':', absl::SkipEmpty())) {
        AddUnique(d.tags, t);
        if (key == "CURRENT_TAGS") AddUnique(current_tags, t);
      }
      continue;
    }
    if (key == "DEVNAME") {
      udev::SetProperty(d.properties, key, absl::StartsWith(value, "/") ? value : absl::StrCat("/dev/", value));
      continue;
    }
    if (key == "ACTION") d.action = value;
    if (key == "DEVPATH") d.devpath = value;
    if (key == "SUBSYSTEM") d.subsystem = value;
    if (key == "DEVTYPE") d.devtype = value;
    if (key == "SEQNUM") seqnum = true;
    udev::SetProperty(d.properties, key, value);
  }
  if (d.action.empty() || d.devpath.empty() || d.subsystem.empty() || !seqnum) {
    return absl::InvalidArgumentError("message lacks ACTION, DEVPATH, SUBSYSTEM or SEQNUM");
  }
  unsigned maj = 0;
  if (major && absl::SimpleAtoi(*major, &maj) && maj > 0) {
    udev::SetProperty(d.properties, "MAJOR", *major);
    if (minor) udev::SetProperty(d.properties, "MINOR", *minor);
  }
  if (!devlinks.empty()) udev::SetProperty(d.properties, "DEVLINKS", absl::StrJoin(devlinks, " "));
  if (!d.tags.empty()) {
    udev::SetProperty(d.properties, "TAGS", absl::StrCat(":", absl::StrJoin(d.tags, ":"), ":"));
    if (!current_tags.empty()) {
      udev::SetProperty(d.properties, "CURRENT_TAGS", absl::StrCat(":", absl::StrJoin(current_tags, ":"), ":"));
    }
  }
  return d;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseKernelDatagram(
    absl::string_view datagram) {
  std::vector<absl::string_view> parts = absl::StrSplit(datagram, '\0');
  if (parts.empty() || parts[0].find('@') == absl::string_view::npos) {
    return absl::InvalidArgumentError("not a kernel uevent");
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == absl::string_view::npos || eq == 0) continue;
    out.emplace_back(std::string(parts[i].substr(0, eq)), std::string(parts[i].substr(eq + 1)));
  }
  return out;
}

bool MonitorFilter::Passes(const MonitorDevice& device) const {
  if (!subsystems.empty()) {
    bool any = false;
    for (const auto& [subsystem, devtype] : subsystems) {
      if (subsystem != device.subsystem) continue;
      if (devtype && *devtype != device.devtype) continue;
      any = true;
      break;
    }
    if (!any) return false;
  }
  if (!tags.empty()) {
    bool any = false;
    for (const std::string& tag : tags) {
      any = any || std::find(device.tags.begin(), device.tags.end(), tag) != device.tags.end();
    }
    if (!any) return false;
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

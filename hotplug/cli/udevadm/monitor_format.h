// What `udevadm monitor` prints for one received event, as 252 does: the line "KERNEL[S.US]
// ACTION   DEVPATH (SUBSYSTEM)" (or "UDEV  [...]") and, with --property, the properties in the
// order sd-device builds them from the message (its KEY=VALUE order, MAJOR and MINOR moved
// after the rest, DEVNAME made absolute, DEVLINKS/TAGS/CURRENT_TAGS last), then a blank line.
// Pure: the caller gives the time.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_FORMAT_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_FORMAT_H_

#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udevadm {

// A received event as sd-device holds it. Owns its strings.
struct MonitorDevice {
  std::vector<std::pair<std::string, std::string>> properties;  // in print order
  std::string action, devpath, subsystem, devtype;
  std::vector<std::string> tags;
};

// From a message's KEY=VALUE strings (a kernel datagram's after its "ACTION@DEVPATH" header, or
// a libudev message's). InvalidArgument when ACTION, DEVPATH, SUBSYSTEM or SEQNUM is missing
// (sd-device drops such messages).
[[nodiscard]] absl::StatusOr<MonitorDevice> MonitorDeviceFromProperties(
    const std::vector<std::pair<std::string, std::string>>& properties);

// The kernel's datagram ("add@/devices/...\0ACTION=add\0...") split into KEY=VALUE pairs.
[[nodiscard]] absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseKernelDatagram(
    absl::string_view datagram);

// The subsystem[/devtype] and tag filters of -s and -t.
struct MonitorFilter {
  std::vector<std::pair<std::string, std::optional<std::string>>> subsystems;
  std::vector<std::string> tags;
  [[nodiscard]] bool Passes(const MonitorDevice& device) const;
};

// The text printed for one event; `udev` selects the "UDEV" label, `now` is CLOCK_MONOTONIC.
[[nodiscard]] std::string FormatMonitorEvent(const MonitorDevice& device, bool udev, timespec now,
                                             bool properties);

// The header `udevadm monitor` prints first.
[[nodiscard]] std::string MonitorHeader(bool udev, bool kernel);

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_FORMAT_H_

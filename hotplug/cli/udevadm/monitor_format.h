// What `udevadm monitor` prints for a received event, as 252 does: the line "KERNEL[S.US]
// ACTION   DEVPATH (SUBSYSTEM)" (or "UDEV  [...]") and, with --property, the properties in
// sd-device's order (monitor_device.h), then a blank line; and which events -s and -t let
// through. Pure: the caller gives the time.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_FORMAT_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_FORMAT_H_

#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "hotplug/cli/udevadm/monitor_device.h"

namespace hotring::hotplug::udevadm {

// The subsystem[/devtype] and tag filters of -s and -t. Owns its strings.
struct MonitorFilter {
  // "-s block/" asks for an empty DEVTYPE, "-s block" for any.
  std::vector<std::pair<std::string, std::optional<std::string>>> subsystems;
  std::vector<std::string> tags;

  // The socket filter 252 attaches to its sockets when there is any -s or -t: a libudev
  // message passes on its header's hashes alone (the subsystem's and devtype's MurmurHash2,
  // the tags' bloom bits), whatever its properties say; any other datagram passes.
  [[nodiscard]] bool PassesSocketFilter(absl::string_view datagram) const;
  // The check on the parsed event that follows: SUBSYSTEM (and DEVTYPE) equal to one -s, and
  // one -t among the tags.
  [[nodiscard]] bool Passes(const MonitorDevice& device) const;
};

// The text printed for one event; `udev` selects the "UDEV" label, `now` is CLOCK_MONOTONIC.
[[nodiscard]] std::string FormatMonitorEvent(const MonitorDevice& device, bool udev, timespec now,
                                             bool properties);

// The header `udevadm monitor` prints first.
[[nodiscard]] std::string MonitorHeader(bool udev, bool kernel);

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_FORMAT_H_

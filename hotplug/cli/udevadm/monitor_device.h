// What `udevadm monitor` of systemd 252 makes of one datagram it receives on a
// NETLINK_KOBJECT_UEVENT socket (sd-device's monitor): a libudev message ("libudev\0", magic,
// properties at properties_off, read to the end of the datagram, whatever properties_len says)
// or a kernel one ("ACTION@DEVPATH\0" then KEY=VALUE\0 strings), on either group. Every rule
// sd-device applies is here, because each decides whether an event is printed at all: a value
// is cut at its first newline or carriage return, a string without '=' drops the message, and
// so do an unknown ACTION, a SEQNUM that is not a number above 0, a MAJOR or MINOR out of
// range, a DEVPATH outside /sys, a bad DEVMODE, DEVUID, DEVGID, IFINDEX, DISKSEQ or
// USEC_INITIALIZED, a tag holding ':' or ' ', or a "drivers" event without a driver path.
// Numbers are read as systemd reads them (leading blanks, 0x, 0o, 0b and octal 0 prefixes)
// and printed as received, except USEC_INITIALIZED, which is printed in decimal.
// Pure: parsing only, no I/O.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_DEVICE_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_DEVICE_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udevadm {

// A received event as sd-device holds it. Owns its strings.
struct MonitorDevice {
  // In print order: the message's order (a repeated key keeps its first place, with its last
  // value), then MAJOR and MINOR, then DEVLINKS, TAGS and CURRENT_TAGS.
  std::vector<std::pair<std::string, std::string>> properties;
  std::string action, devpath, subsystem;
  std::optional<std::string> devtype;  // nullopt without DEVTYPE; "" for "DEVTYPE="
  // Every tag of TAGS and CURRENT_TAGS, the empty one included ("TAGS=:a:" has "", "a"): the
  // empty one matches `--tag-match=''` but is never printed.
  std::vector<std::string> tags;
};

// InvalidArgument, saying why, for every datagram 252 drops instead of printing.
[[nodiscard]] absl::StatusOr<MonitorDevice> ParseMonitorDatagram(absl::string_view datagram);

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_MONITOR_DEVICE_H_

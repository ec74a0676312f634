// The sysfs side of `mdev`: what busybox's mdev reads for a device (its `dev` file, the DEVNAME
// line of its `uevent` file, its `subsystem` link) and the walk of `mdev -s`, which visits
// /sys/dev the way busybox's recursive_action does (following links, three levels deep) and
// reports each directory holding a `dev` file, in readdir order.
#ifndef HOTRING_HOTPLUG_RULES_MDEV_SCAN_H_
#define HOTRING_HOTPLUG_RULES_MDEV_SCAN_H_

#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::rules {

// One device directory found by the walk. Borrowed for the duration of the callback.
struct ScannedDevice {
  // The directory as the walk reached it, e.g. "/sys/dev/char/4:64" (not resolved: busybox
  // tells block from char by "/block/" in this path).
  absl::string_view path;
  // The device's number as text, e.g. "4:64\n": MAJOR:MINOR from its uevent file when that has
  // both (on a kernel's sysfs they are what `dev` holds: one read saved), else what its `dev`
  // file holds (busybox reads at most 127 bytes).
  absl::string_view dev;
  // DEVNAME from its `uevent` file, else the last component of `path` (see DevnameFromUevent).
  absl::string_view name;
  // The last component of its `subsystem` link's target; nullopt when it has no readable link
  // (busybox then keeps the previous device's subsystem).
  std::optional<absl::string_view> subsystem;
};

// Walks `sys_dev` (normally "/sys/dev") and calls `on_device` for every device directory, in the
// order busybox's `mdev -s` visits them. Errors: only when `sys_dev` itself cannot be read (busybox
// prints it and creates nothing); unreadable entries below are skipped.
absl::Status ScanSysDev(const std::string& sys_dev,
                        absl::FunctionRef<void(const ScannedDevice&)> on_device);

// Busybox's reading of a uevent file for the node's name: the first 127 bytes, and a DEVNAME=
// line that follows a newline (so not on the very first line). nullopt when there is none.
[[nodiscard]] std::optional<absl::string_view> DevnameFromUevent(absl::string_view uevent);

// The last component of a path ("" for "").
[[nodiscard]] absl::string_view LastComponent(absl::string_view path);

// Reads the device at sysfs directory `dir` (an absolute path) as the hotplug helper does:
// `dev` (busybox: for add only) and `uevent` (only without DEVNAME). Empty strings when the
// files are missing or not asked for.
struct SysfsDeviceFiles {
  std::string dev;     // at most 127 bytes
  std::string uevent;  // at most 127 bytes
};
[[nodiscard]] SysfsDeviceFiles ReadSysfsDevice(const std::string& dir, bool read_dev,
                                               bool read_uevent);

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_MDEV_SCAN_H_

// udev's property builtins computed in process from a SysfsView: input_id (ID_INPUT_*), path_id
// (ID_PATH, ID_PATH_TAG) and usb_id (ID_VENDOR_ID, ID_MODEL_ID, ID_SERIAL, ...), with the rules of
// systemd-udevd's builtins of the same names (systemd 252, Debian 12). Pure: no fds, no clock.
#ifndef HOTRING_HOTPLUG_UDEV_BUILTINS_H_
#define HOTRING_HOTPLUG_UDEV_BUILTINS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::hotplug::udev {

// KEY=VALUE pairs in the order udev sets them. Owns its strings.
using Properties = std::vector<std::pair<std::string, std::string>>;

// input_id: for a device in (or below) an input device with capabilities/ev. Empty when the
// device has no input ancestor. ID_INPUT_WIDTH_MM/HEIGHT_MM (an ioctl on the node) are not set.
[[nodiscard]] Properties InputId(const SysfsView& view, absl::string_view devpath);

// path_id: ID_PATH and ID_PATH_TAG (and ID_PATH_ATA_COMPAT) from the device's ancestry. Empty
// when udev would not set them (no supported parent; a block device without known transport).
[[nodiscard]] Properties PathId(const SysfsView& view, absl::string_view devpath);

// usb_id: for a device below a USB interface (or a usb_device itself). Empty when not USB or
// when idVendor/idProduct are missing.
[[nodiscard]] Properties UsbId(const SysfsView& view, absl::string_view devpath);

// One value of `props`, or "" when absent.
[[nodiscard]] absl::string_view PropertyValue(const Properties& props, absl::string_view key);

// Sets `key` in `props` (replacing an earlier value, keeping its place).
void SetProperty(Properties& props, absl::string_view key, absl::string_view value);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_BUILTINS_H_

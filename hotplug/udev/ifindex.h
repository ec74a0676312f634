// sd-device's reading of IFINDEX: what decides whether udevd takes a device for a network
// interface (its id "nN", NAME= renames). Pure.
#ifndef HOTRING_HOTPLUG_UDEV_IFINDEX_H_
#define HOTRING_HOTPLUG_UDEV_IFINDEX_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace hotring::hotplug::udev {

// IFINDEX as sd-device reads it (parse_ifindex over safe_atoi): leading white space, a sign,
// C's 0x and 0 prefixes and Python's 0b and 0o, nothing after the number, an int above 0. What
// decides whether a device is a network interface to udevd (its id, NAME=). nullopt otherwise.
[[nodiscard]] std::optional<int> ParseIfindex(absl::string_view text);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_IFINDEX_H_

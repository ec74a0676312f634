// udevd 252's `net_id` builtin: the predictable interface names of a network interface
// (ID_NET_NAME_ONBOARD/_SLOT/_PATH/_MAC, ID_NET_LABEL_ONBOARD, ID_NET_NAMING_SCHEME, and the
// MAC's vendor ID_OUI_FROM_DATABASE from the hwdb) for PCI (multi-function, ARI, SR-IOV
// virtual functions, hotplug slots, firmware indexes, phys_port_name/dev_port), USB and BCMA
// below PCI, virtio, platform (ACPI), device-tree aliases, CCW, VIO, Xen and netdevsim, under
// the naming schemes 252 knows (v238 ... v252; `net.naming-scheme=` on the kernel command line).
// Pure over the sysfs views.
#ifndef HOTRING_HOTPLUG_UDEV_NET_ID_H_
#define HOTRING_HOTPLUG_UDEV_NET_ID_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/udev/builtin_device.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/hwdb.h"
#include "hotplug/udev/net_naming.h"
#include "hotplug/udev/sysfs_links.h"

namespace hotring::hotplug::udev {

// What net_id reads beyond the device.
struct NetIdContext {
  NamingScheme scheme = *NamingSchemeFromName("v252");
  const Hwdb* hwdb = nullptr;         // ID_OUI_FROM_DATABASE (none without)
  const SysfsLinks* links = nullptr;  // SR-IOV and device-tree aliases (skipped without)
};

// The builtin. Empty for interfaces net_id leaves alone (stacked devices, types other than
// Ethernet, InfiniBand and SLIP). An error where udevd's fails (no IFINDEX, unreadable
// iflink or type).
[[nodiscard]] absl::StatusOr<Properties> NetId(const BuiltinDevice& device, const NetIdContext& context);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_NET_ID_H_

// Which persistent links udev's 60-persistent-storage.rules and 60-persistent-input.rules give a
// device (disk/by-uuid, by-label, by-partuuid, by-partlabel, by-path, by-id, by-diskseq;
// input/by-path, by-id), from its properties. Pure: the caller applies them beneath the dev root
// with the dev root's path safety (hotplug/devroot/dev_root.h).
#ifndef HOTRING_HOTPLUG_UDEVCOMPAT_LINKS_H_
#define HOTRING_HOTPLUG_UDEVCOMPAT_LINKS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "hotplug/event.h"
#include "hotplug/udevcompat/builtins.h"
#include "hotplug/udevcompat/sysfs_view.h"

namespace hotring::hotplug::udevcompat {

// What PersistentLinks needs beyond the properties, read from sysfs by the caller.
struct LinkFacts {
  std::string interface_number;  // the nearest ancestor's bInterfaceNumber ("" when none)
  std::string driver;            // the nearest ancestor's driver (for "pcspkr")
  std::string name;              // the input device's name attribute (DVB/IR receivers)
  std::string virtio_serial;     // the disk's `serial` attribute (virtio)
};

// The links, relative to /dev, in udev's order. Link names that are not safe relative paths
// (a device value with "..", say) are left out and named in `refused`.
[[nodiscard]] std::vector<std::string> PersistentLinks(const Event& event, const Properties& props,
                                                       const LinkFacts& facts,
                                                       std::vector<std::string>* refused = nullptr);

// The input class 60-persistent-input.rules derives (.INPUT_CLASS): "kbd", "mouse", "joystick",
// "spkr", "ir" or "".
[[nodiscard]] std::string InputClass(const Properties& props, const LinkFacts& facts);

// The kernel names 60-persistent-storage.rules handles at all (fd0, ram0, zram0 are left alone).
[[nodiscard]] bool StorageKernelName(absl::string_view name);

// LinkFacts read from sysfs for `devpath`.
[[nodiscard]] LinkFacts ReadLinkFacts(const SysfsView& view, absl::string_view devpath);

}  // namespace hotring::hotplug::udevcompat

#endif  // HOTRING_HOTPLUG_UDEVCOMPAT_LINKS_H_

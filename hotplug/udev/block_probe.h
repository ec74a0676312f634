// What udev's blkid builtin finds on a block device, from hotring's own probers: a disk's
// partition table (ID_PART_TABLE_*), a partition's entry in its disk's table (ID_PART_ENTRY_*),
// and the filesystem or other superblock on the device (ID_FS_*). Reads the nodes beneath a dev
// root with bounded reads; used by the rules engine's blkid builtin and the udev fallback stage.
#ifndef HOTRING_HOTPLUG_UDEV_BLOCK_PROBE_H_
#define HOTRING_HOTPLUG_UDEV_BLOCK_PROBE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::hotplug::udev {

// The block device at `devpath`, whose node is `devname` beneath `dev_root` (relative, as
// in the uevent: "vda1"); `devtype` is "disk" or "partition", `partn` the uevent's PARTN ("" when
// none). Merges what it finds into `props`. A malformed superblock or table is described in
// `*error` (the first one; the rest of what was found is still merged). Returns false when the
// node could not be opened.
bool ProbeBlockDevice(const SysfsView& view, absl::string_view devpath, absl::string_view devtype,
                      absl::string_view devname, absl::string_view partn,
                      const std::string& dev_root, Properties& props, std::string* error);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_BLOCK_PROBE_H_

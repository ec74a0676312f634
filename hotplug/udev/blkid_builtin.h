// udevd 252's `blkid` builtin through util-linux's libblkid (Debian's static archive): every
// superblock and partition table libblkid 2.38 knows (filesystems, LUKS, LVM2 and RAID members,
// swap, ...), with the properties the builtin exports (ID_FS_*, ID_PART_TABLE_*,
// ID_PART_ENTRY_*, and no ID_FS_BLOCK_SIZE: libblkid's BLOCK_SIZE is not one of them in 252),
// the options `--offset=N`, `--hint=NAME=N`, `--noraid`, and small whole disks probed for a
// partition table first. hotring's own prober (hotplug/probe) stays for `settle --for`.
#ifndef HOTRING_HOTPLUG_UDEV_BLKID_BUILTIN_H_
#define HOTRING_HOTPLUG_UDEV_BLKID_BUILTIN_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hotplug/udev/builtin_device.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udev {

// What the builtin reads beyond the device.
struct BlkidContext {
  // The UEFI boot loader's partition (systemd-boot's LoaderDevicePartUUID EFI variable), for
  // ID_PART_GPT_AUTO_ROOT_UUID; none on a machine without it.
  std::optional<std::string> loader_partition_uuid;
};

// The builtin: opens the device's node (DEVNAME; a path as given), probes it, and returns the
// properties in libblkid's order. A node that is absent (ENOENT, ENODEV, ENXIO) gives no
// properties and no error, as udevd; another open or probe failure is an error.
[[nodiscard]] absl::StatusOr<Properties> BlkidBuiltin(const BuiltinDevice& device,
                                                      absl::Span<const std::string> argv,
                                                      const BlkidContext& context = {});

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_BLKID_BUILTIN_H_

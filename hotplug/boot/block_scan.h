// The block devices `hotring init` can see when root= did not appear: each entry of
// /sys/class/block with what its superblock (TYPE, LABEL, UUID) and, for a partition, its
// disk's partition table (PARTUUID, PARTLABEL) say, read through hotplug/probe/ from the node
// in /dev. Reads only: bounded preads of each device, nothing opened for writing.
#ifndef HOTRING_HOTPLUG_BOOT_BLOCK_SCAN_H_
#define HOTRING_HOTPLUG_BOOT_BLOCK_SCAN_H_

#include <string>
#include <vector>

#include "hotplug/boot/rescue.h"

namespace hotring::hotplug::boot {

// Every entry of `class_block` (/sys/class/block), sorted by name, probed through its node
// beneath `dev` (/dev). A device whose node is missing or unreadable is listed with the reason.
[[nodiscard]] std::vector<SeenBlockDevice> ScanBlockDevices(const std::string& class_block,
                                                            const std::string& dev);

}  // namespace hotring::hotplug::boot

#endif  // HOTRING_HOTPLUG_BOOT_BLOCK_SCAN_H_

// The ID_FS_* and ID_PART_* properties udev's blkid builtin sets, from what hotring's own
// probers read (hotplug/fs_probe, partition_table). Pure.
#ifndef HOTRING_HOTPLUG_UDEVCOMPAT_BLKID_H_
#define HOTRING_HOTPLUG_UDEVCOMPAT_BLKID_H_

#include "absl/strings/string_view.h"
#include "hotplug/probe/fs_probe.h"
#include "hotplug/udevcompat/builtins.h"
#include "hotplug/probe/partition_table.h"

namespace hotring::hotplug::udevcompat {

// ID_FS_LABEL(+_ENC), ID_FS_UUID(+_ENC), ID_FS_VERSION, ID_FS_BLOCK_SIZE, ID_FS_TYPE,
// ID_FS_USAGE. Labels and UUIDs are made safe (ID_FS_LABEL) and encoded (_ENC) as blkid does.
[[nodiscard]] Properties FsProperties(const probe::FsIdentity& fs);

// A disk's ID_PART_TABLE_UUID and ID_PART_TABLE_TYPE.
[[nodiscard]] Properties PartitionTableProperties(const probe::PartitionTable& table);

// A partition's ID_PART_ENTRY_* (SCHEME, NAME, UUID, TYPE, FLAGS, NUMBER, OFFSET, SIZE, DISK);
// `disk_devnum` is the disk's "MAJOR:MINOR".
[[nodiscard]] Properties PartitionEntryProperties(const probe::PartitionTable& table,
                                                  const probe::PartitionEntry& entry,
                                                  absl::string_view disk_devnum);

}  // namespace hotring::hotplug::udevcompat

#endif  // HOTRING_HOTPLUG_UDEVCOMPAT_BLKID_H_

#include "hotplug/udevcompat/blkid.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hotplug/udevcompat/escape.h"

namespace hotring::hotplug::udevcompat {

Properties FsProperties(const probe::FsIdentity& fs) {
  Properties out;
  if (!fs.label.empty()) {
    out.emplace_back("ID_FS_LABEL", BlkidSafeString(fs.label));
    out.emplace_back("ID_FS_LABEL_ENC", EncodeDevnodeName(fs.label));
  }
  if (!fs.uuid.empty()) {
    out.emplace_back("ID_FS_UUID", BlkidSafeString(fs.uuid));
    out.emplace_back("ID_FS_UUID_ENC", EncodeDevnodeName(fs.uuid));
  }
  if (!fs.version.empty()) out.emplace_back("ID_FS_VERSION", fs.version);
  // No ID_FS_BLOCK_SIZE: `blkid -p -o udev` prints it, but udev 252's blkid builtin does not
  // export it (systemd-udevd in the qemu guest leaves it unset on ext4 and vfat).
  out.emplace_back("ID_FS_TYPE", fs.type);
  out.emplace_back("ID_FS_USAGE", fs.type == "swap" ? "other" : "filesystem");
  return out;
}

Properties PartitionTableProperties(const probe::PartitionTable& table) {
  Properties out;
  if (!table.uuid.empty()) out.emplace_back("ID_PART_TABLE_UUID", table.uuid);
  out.emplace_back("ID_PART_TABLE_TYPE", table.type);
  return out;
}

Properties PartitionEntryProperties(const probe::PartitionTable& table, const probe::PartitionEntry& entry,
                                    absl::string_view disk_devnum) {
  Properties out;
  out.emplace_back("ID_PART_ENTRY_SCHEME", table.type);
  if (!entry.name.empty()) out.emplace_back("ID_PART_ENTRY_NAME", EncodeDevnodeName(entry.name));
  if (!entry.uuid.empty()) out.emplace_back("ID_PART_ENTRY_UUID", entry.uuid);
  out.emplace_back("ID_PART_ENTRY_TYPE", EncodeDevnodeName(entry.type));
  if (entry.flags != 0) out.emplace_back("ID_PART_ENTRY_FLAGS", absl::StrFormat("0x%x", entry.flags));
  out.emplace_back("ID_PART_ENTRY_NUMBER", absl::StrCat(entry.number));
  out.emplace_back("ID_PART_ENTRY_OFFSET", absl::StrCat(entry.offset));
  out.emplace_back("ID_PART_ENTRY_SIZE", absl::StrCat(entry.size));
  if (!disk_devnum.empty()) out.emplace_back("ID_PART_ENTRY_DISK", disk_devnum);
  return out;
}

}  // namespace hotring::hotplug::udevcompat

#include "hotplug/udev/block_probe.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hotplug/probe/fs_probe.h"
#include "hotplug/probe/partition_table.h"
#include "hotplug/udev/blkid.h"

namespace hotring::hotplug::udev {
namespace {

void Merge(Properties& into, const Properties& from) {
  for (const auto& [k, v] : from) SetProperty(into, k, v);
}

uint32_t LogicalBlockSize(const SysfsView& view, absl::string_view disk) {
  uint32_t size = 512;
  if (std::optional<std::string> s = view.Attribute(disk, "queue/logical_block_size"); s.has_value()) {
    if (!absl::SimpleAtoi(*s, &size) || size < 512 || size > 4096) size = 512;
  }
  return size;
}

// A name that stays beneath the dev root: relative, no empty, "." or ".." component.
bool SafeName(absl::string_view name) {
  if (name.empty() || name[0] == '/') return false;
  size_t start = 0;
  for (;;) {
    const size_t slash = name.find('/', start);
    const absl::string_view part = name.substr(start, slash == absl::string_view::npos ? name.npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == absl::string_view::npos) return true;
    start = slash + 1;
  }
}

// A partition's entry in its disk's table.
void ProbePartitionEntry(const SysfsView& view, absl::string_view devpath, absl::string_view partn,
                         const std::string& dev_root, Properties& props, std::string* error) {
  const std::optional<std::string> disk = ParentOf(view, devpath);
  const std::optional<std::string> disk_name =
      disk.has_value() ? UeventValue(view, *disk, "DEVNAME") : std::nullopt;
  int number = 0;
  if (!absl::SimpleAtoi(partn, &number)) {
    (void)absl::SimpleAtoi(view.Attribute(devpath, "partition").value_or(""), &number);
  }
  if (!disk_name.has_value() || !SafeName(*disk_name) || number <= 0) return;
  const absl::StatusOr<probe::ProbeFile> disk_reader =
      probe::ProbeFile::Open(absl::StrCat(dev_root, "/", *disk_name), probe::kMaxGptEntryBytes);
  if (!disk_reader.ok()) return;
  auto disk_read = [&](uint64_t o, size_t l) { return disk_reader->Read(o, l); };
  absl::StatusOr<std::optional<probe::PartitionTable>> table =
      probe::ProbePartitionTable(disk_read, LogicalBlockSize(view, *disk));
  if (!table.ok()) {
    if (error != nullptr && error->empty()) *error = std::string(table.status().message());
    return;
  }
  if (!table->has_value()) return;
  const std::string devnum = absl::StrCat(UeventValue(view, *disk, "MAJOR").value_or(""), ":",
                                          UeventValue(view, *disk, "MINOR").value_or(""));
  for (const probe::PartitionEntry& entry : (*table)->entries) {
    if (entry.number == number) Merge(props, PartitionEntryProperties(**table, entry, devnum));
  }
}

}  // namespace

bool ProbeBlockDevice(const SysfsView& view, absl::string_view devpath, absl::string_view devtype,
                      absl::string_view devname, absl::string_view partn,
                      const std::string& dev_root, Properties& props, std::string* error) {
  auto note = [&](const absl::Status& s) {
    if (error != nullptr && error->empty()) *error = std::string(s.message());
  };
  if (!SafeName(devname)) return false;
  const absl::StatusOr<probe::ProbeFile> reader =
      probe::ProbeFile::Open(absl::StrCat(dev_root, "/", devname), probe::kMaxGptEntryBytes);
  if (!reader.ok()) {
    note(reader.status());
    return false;
  }
  auto read = [&](uint64_t o, size_t l) { return reader->Read(o, l); };
  if (devtype == "disk") {
    absl::StatusOr<std::optional<probe::PartitionTable>> table =
        probe::ProbePartitionTable(read, LogicalBlockSize(view, devpath));
    if (!table.ok()) {
      note(table.status());
    } else if (table->has_value()) {
      Merge(props, PartitionTableProperties(**table));
    }
  } else if (devtype == "partition") {
    ProbePartitionEntry(view, devpath, partn, dev_root, props, error);
  }
  absl::StatusOr<std::optional<probe::FsIdentity>> fs = probe::ProbeFilesystem(read);
  if (!fs.ok()) {
    note(fs.status());
  } else if (fs->has_value()) {
    Merge(props, FsProperties(**fs));
  }
  return true;
}

}  // namespace hotring::hotplug::udev

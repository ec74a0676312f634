#include "hotplug/boot/block_scan.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/dir_names.h"
#include "hotplug/probe/fs_probe.h"
#include "hotplug/probe/partition_table.h"

namespace hotring::hotplug::boot {
namespace {

std::optional<std::string> ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(line));
}

// The disk a partition belongs to: its sysfs directory's parent (.../block/vda/vda1 -> vda).
std::string ParentName(const std::string& sysfs_entry) {
  char resolved[PATH_MAX];
  if (::realpath(sysfs_entry.c_str(), resolved) == nullptr) return "";
  std::string path(resolved);
  path.erase(path.rfind('/'));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(slash + 1);
}

// The partition tables read so far, by disk name (nullopt: none, or unreadable).
using Tables = std::map<std::string, std::optional<probe::PartitionTable>>;

const std::optional<probe::PartitionTable>& TableOf(const std::string& class_block,
                                                    const std::string& dev,
                                                    const std::string& disk, Tables& tables) {
  auto [it, inserted] = tables.try_emplace(disk);
  if (!inserted) return it->second;
  uint32_t sector_size = 512;
  if (std::optional<std::string> text =
          ReadLine(absl::StrCat(class_block, "/", disk, "/queue/logical_block_size"));
      !text.has_value() || !absl::SimpleAtoi(*text, &sector_size) ||
      (sector_size != 512 && sector_size != 4096)) {
    sector_size = 512;
  }
  absl::StatusOr<std::optional<probe::PartitionTable>> table =
      probe::ProbePartitionTableAt(absl::StrCat(dev, "/", disk), sector_size);
  if (table.ok()) it->second = *std::move(table);
  return it->second;
}

SeenBlockDevice Scan(const std::string& class_block, const std::string& dev,
                     const std::string& name, Tables& tables) {
  SeenBlockDevice device;
  device.name = name;
  const std::string entry = absl::StrCat(class_block, "/", name);
  int partn = 0;
  if (std::optional<std::string> text = ReadLine(entry + "/partition"); text.has_value()) {
    device.partition = absl::SimpleAtoi(*text, &partn) && partn > 0;
  }
  uint64_t size = 0;
  if (std::optional<std::string> text = ReadLine(entry + "/size");
      text.has_value() && absl::SimpleAtoi(*text, &size) && size == 0) {
    device.empty = true;
    return device;
  }
  const std::string node = absl::StrCat(dev, "/", name);
  if (::access(node.c_str(), F_OK) != 0) {
    device.problem = absl::StrCat("no node ", node);
    return device;
  }
  absl::StatusOr<std::optional<probe::FsIdentity>> fs = probe::ProbeFilesystemAt(node);
  if (!fs.ok()) {
    device.problem = std::string(fs.status().message());
  } else if (fs->has_value()) {
    device.type = (*fs)->type;
    device.label = (*fs)->label;
    device.uuid = (*fs)->uuid;
  }
  if (!device.partition) return device;
  const std::optional<probe::PartitionTable>& table =
      TableOf(class_block, dev, ParentName(entry), tables);
  if (!table.has_value()) return device;
  for (const probe::PartitionEntry& part : table->entries) {
    if (part.number != partn) continue;
    device.partuuid = part.uuid;
    device.partlabel = part.name;
  }
  return device;
}

}  // namespace

std::vector<SeenBlockDevice> ScanBlockDevices(const std::string& class_block,
                                              const std::string& dev) {
  std::vector<SeenBlockDevice> seen;
  Tables tables;
  for (const std::string& name : SortedDirNames(class_block)) {
    seen.push_back(Scan(class_block, dev, name, tables));
  }
  return seen;
}

}  // namespace hotring::hotplug::boot

// Partition tables (GPT and MBR/"dos", with logical partitions) read from a disk through the same
// bounded reader callback as the filesystem prober: no fds, so tests feed it images. Offsets and
// sizes are reported in 512-byte sectors, as libblkid reports them.
#ifndef HOTRING_HOTPLUG_PROBE_PARTITION_TABLE_H_
#define HOTRING_HOTPLUG_PROBE_PARTITION_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hotplug/probe/fs_probe.h"

namespace hotring::hotplug::probe {

// One partition. Owns its strings.
struct PartitionEntry {
  int number = 0;        // 1-based; dos logical partitions start at 5
  uint64_t offset = 0;   // in 512-byte sectors
  uint64_t size = 0;     // in 512-byte sectors
  std::string type;      // GPT: type GUID (lowercase); dos: "0x83"
  std::string uuid;      // GPT: partition GUID; dos: "<disk id>-<number as %02x>"
  std::string name;      // GPT: the UTF-16 name as UTF-8, raw (not escaped); dos: ""
  uint64_t flags = 0;    // GPT attribute bits; dos: the boot indicator (0x80)
};

// A disk's table. Owns its entries.
struct PartitionTable {
  std::string type;  // "gpt" or "dos"
  std::string uuid;  // GPT disk GUID; dos: the 32-bit disk identifier as %08x ("" when zero)
  std::vector<PartitionEntry> entries;  // in table order, empty slots left out
};

// The most GPT entries read (128 entries of 128 bytes is the usual array), and the most logical
// partitions followed in an extended partition chain.
inline constexpr uint32_t kMaxGptEntryBytes = 128 * 1024;
inline constexpr int kMaxLogicalPartitions = 128;

// nullopt: no table this prober knows (no 0x55AA signature, or the sector is a FAT boot
// sector). An error (DataLoss) when a table is there but broken: a GPT header or entry array with
// a bad CRC or impossible sizes, an MBR with invalid boot indicators, a looping EBR chain.
// `sector_size`: the disk's logical block size (512 or 4096).
[[nodiscard]] absl::StatusOr<std::optional<PartitionTable>> ProbePartitionTable(
    ProbeReader read, uint32_t sector_size = 512);

// ProbePartitionTable on a disk's node or image file (read-only, bounded preads).
[[nodiscard]] absl::StatusOr<std::optional<PartitionTable>> ProbePartitionTableAt(
    const std::string& path, uint32_t sector_size = 512);

// CRC-32 as GPT (and zlib) computes it.
[[nodiscard]] uint32_t Crc32(absl::string_view data);

}  // namespace hotring::hotplug::probe

#endif  // HOTRING_HOTPLUG_PROBE_PARTITION_TABLE_H_

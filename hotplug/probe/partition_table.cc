#include "hotplug/probe/partition_table.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"

namespace hotring::hotplug::probe {
namespace {

uint64_t Le(absl::string_view b, size_t at, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}

absl::Status Broken(absl::string_view what, absl::string_view why) {
  return absl::DataLossError(absl::StrCat(what, ": ", why));
}

// A GUID in its mixed-endian on-disk form, printed as blkid prints it.
std::string Guid(absl::string_view g) {
  return absl::StrFormat("%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", Le(g, 0, 4), Le(g, 4, 2),
                         Le(g, 6, 2), static_cast<uint8_t>(g[8]), static_cast<uint8_t>(g[9]),
                         static_cast<uint8_t>(g[10]), static_cast<uint8_t>(g[11]),
                         static_cast<uint8_t>(g[12]), static_cast<uint8_t>(g[13]),
                         static_cast<uint8_t>(g[14]), static_cast<uint8_t>(g[15]));
}

// GPT names are UTF-16LE, up to 36 code units, NUL-terminated when shorter.
std::string Utf16Name(absl::string_view raw) {
  std::string out;
  for (size_t i = 0; i + 1 < raw.size(); i += 2) {
    uint32_t c = static_cast<uint32_t>(Le(raw, i, 2));
    if (c == 0) break;
    if (c >= 0xD800 && c <= 0xDBFF && i + 3 < raw.size()) {
      const uint32_t lo = static_cast<uint32_t>(Le(raw, i + 2, 2));
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
        i += 2;
      }
    }
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

absl::StatusOr<std::string> ReadExactly(ProbeReader read, uint64_t offset, size_t length,
                                        absl::string_view what) {
  HOTRING_ASSIGN_OR_RETURN(std::string data, read(offset, length));
  if (data.size() < length) return Broken(what, "cut short");
  return data;
}

absl::StatusOr<PartitionTable> ProbeGpt(ProbeReader read, uint32_t sector) {
  const uint64_t to512 = sector / 512;
  HOTRING_ASSIGN_OR_RETURN(std::string header, ReadExactly(read, sector, 512, "gpt header"));
  if (header.substr(0, 8) != "EFI PART") return Broken("gpt", "protective MBR without a GPT header");
  const uint32_t header_size = static_cast<uint32_t>(Le(header, 12, 4));
  if (header_size < 92 || header_size > 512) return Broken("gpt header", absl::StrCat("size ", header_size));
  std::string zeroed = header.substr(0, header_size);
  const uint32_t header_crc = static_cast<uint32_t>(Le(header, 16, 4));
  zeroed.replace(16, 4, 4, '\0');
  if (Crc32(zeroed) != header_crc) return Broken("gpt header", "bad CRC");
  const uint64_t entries_lba = Le(header, 72, 8);
  const uint32_t count = static_cast<uint32_t>(Le(header, 80, 4));
  const uint32_t entry_size = static_cast<uint32_t>(Le(header, 84, 4));
  if (entry_size < 128 || entry_size > 4096 || (entry_size & (entry_size - 1)) != 0) {
    return Broken("gpt header", absl::StrCat("entry size ", entry_size));
  }
  if (static_cast<uint64_t>(count) * entry_size > kMaxGptEntryBytes) {
    return Broken("gpt header", absl::StrCat(count, " entries of ", entry_size, " bytes"));
  }
  if (entries_lba < 2 || entries_lba > (UINT64_MAX / sector)) return Broken("gpt header", "entry array LBA");
  HOTRING_ASSIGN_OR_RETURN(std::string entries,
                           ReadExactly(read, entries_lba * sector, count * entry_size, "gpt entries"));
  if (Crc32(entries) != static_cast<uint32_t>(Le(header, 88, 4))) return Broken("gpt entries", "bad CRC");
  PartitionTable table;
  table.type = "gpt";
  table.uuid = Guid(absl::string_view(header).substr(56, 16));
  for (uint32_t i = 0; i < count; ++i) {
    const absl::string_view e = absl::string_view(entries).substr(i * entry_size, entry_size);
    const absl::string_view type = e.substr(0, 16);
    if (type == absl::string_view("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16)) continue;  // unused
    const uint64_t first = Le(e, 32, 8);
    const uint64_t last = Le(e, 40, 8);
    if (last < first) return Broken("gpt entry", absl::StrCat(i + 1, " ends before it starts"));
    PartitionEntry p;
    p.number = static_cast<int>(i + 1);
    p.offset = first * to512;
    p.size = (last - first + 1) * to512;
    p.type = Guid(type);
    p.uuid = Guid(e.substr(16, 16));
    p.flags = Le(e, 48, 8);
    p.name = Utf16Name(e.substr(56, 72));
    table.entries.push_back(std::move(p));
  }
  return table;
}

bool IsExtended(uint8_t type) { return type == 0x05 || type == 0x0F || type == 0x85; }

absl::Status ReadLogical(ProbeReader read, uint64_t extended_start, PartitionTable& table) {
  uint64_t ebr = extended_start;
  int number = 5;
  for (int n = 0; n < kMaxLogicalPartitions; ++n) {
    HOTRING_ASSIGN_OR_RETURN(std::string s, ReadExactly(read, ebr * 512, 512, "dos extended boot record"));
    if (static_cast<uint8_t>(s[510]) != 0x55 || static_cast<uint8_t>(s[511]) != 0xAA) {
      return Broken("dos extended boot record", "no signature");
    }
    // Entry 1: the logical partition (relative to this EBR); entry 2: the next EBR (relative to
    // the extended partition's start).
    const absl::string_view one = absl::string_view(s).substr(446, 16);
    const absl::string_view two = absl::string_view(s).substr(462, 16);
    const uint8_t type = static_cast<uint8_t>(one[4]);
    const uint64_t start = Le(one, 8, 4);
    const uint64_t size = Le(one, 12, 4);
    if (type != 0 && size != 0) {
      PartitionEntry p;
      p.number = number;
      p.offset = ebr + start;
      p.size = size;
      p.type = absl::StrFormat("0x%x", type);
      p.flags = static_cast<uint8_t>(one[0]) == 0x80 ? 0x80 : 0;
      table.entries.push_back(std::move(p));
      ++number;  // as Linux numbers them: only EBRs that hold a partition take a number
    }
    const uint64_t next = Le(two, 8, 4);
    if (!IsExtended(static_cast<uint8_t>(two[4])) || next == 0) return absl::OkStatus();
    const uint64_t next_ebr = extended_start + next;
    if (next_ebr <= ebr) return Broken("dos extended boot record", "chain goes backwards");
    ebr = next_ebr;
  }
  return Broken("dos extended boot record", "chain longer than the limit");
}

}  // namespace

uint32_t Crc32(absl::string_view data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : data) crc = table[(crc ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

absl::StatusOr<std::optional<PartitionTable>> ProbePartitionTable(ProbeReader read,
                                                                  uint32_t sector_size) {
  if (sector_size < 512 || sector_size > 4096 || (sector_size & (sector_size - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("sector size ", sector_size));
  }
  HOTRING_ASSIGN_OR_RETURN(const std::string mbr, read(0, 512));
  if (mbr.size() < 512 || static_cast<uint8_t>(mbr[510]) != 0x55 ||
      static_cast<uint8_t>(mbr[511]) != 0xAA) {
    return std::nullopt;
  }
  // A FAT boot sector has the same signature: a filesystem, not a table.
  const absl::string_view m(mbr);
  if (m.substr(0x52, 5) == "FAT32" || m.substr(0x36, 3) == "FAT") return std::nullopt;
  bool protective = false;
  for (int i = 0; i < 4; ++i) {
    const absl::string_view e = m.substr(446 + 16 * i, 16);
    const uint8_t boot = static_cast<uint8_t>(e[0]);
    if (boot != 0 && boot != 0x80) return std::nullopt;  // not a table (libblkid agrees)
    if (static_cast<uint8_t>(e[4]) == 0xEE) protective = true;
  }
  if (protective) {
    HOTRING_ASSIGN_OR_RETURN(PartitionTable gpt, ProbeGpt(read, sector_size));
    return gpt;
  }
  PartitionTable table;
  table.type = "dos";
  const uint32_t disk_id = static_cast<uint32_t>(Le(m, 440, 4));
  if (disk_id != 0) table.uuid = absl::StrFormat("%08x", disk_id);
  std::optional<uint64_t> extended;
  for (int i = 0; i < 4; ++i) {
    const absl::string_view e = m.substr(446 + 16 * i, 16);
    const uint8_t type = static_cast<uint8_t>(e[4]);
    const uint64_t start = Le(e, 8, 4);
    const uint64_t size = Le(e, 12, 4);
    if (type == 0 || size == 0) continue;
    PartitionEntry p;
    p.number = i + 1;
    p.offset = start;
    p.size = size;
    p.type = absl::StrFormat("0x%x", type);
    p.flags = static_cast<uint8_t>(e[0]) == 0x80 ? 0x80 : 0;
    table.entries.push_back(std::move(p));
    if (IsExtended(type) && !extended.has_value()) extended = start;
  }
  if (extended.has_value() && *extended != 0) {
    HOTRING_RETURN_IF_ERROR(ReadLogical(read, *extended, table));
  }
  for (PartitionEntry& p : table.entries) {
    if (!table.uuid.empty()) p.uuid = absl::StrFormat("%s-%02x", table.uuid, p.number);
  }
  return table;
}

absl::StatusOr<std::optional<PartitionTable>> ProbePartitionTableAt(const std::string& path,
                                                                    uint32_t sector_size) {
  HOTRING_ASSIGN_OR_RETURN(const ProbeFile file, ProbeFile::Open(path, kMaxGptEntryBytes));
  return ProbePartitionTable(
      [&](uint64_t offset, size_t length) { return file.Read(offset, length); }, sector_size);
}

}  // namespace hotring::hotplug::probe

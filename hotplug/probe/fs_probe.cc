#include "hotplug/probe/fs_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::probe {
namespace {

uint32_t Le(absl::string_view bytes, size_t offset, size_t size) {
  uint32_t value = 0;
  for (size_t i = 0; i < size; ++i) {
    value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  }
  return value;
}

// A label field: up to the first NUL, trailing spaces removed. Bytes that cannot be printed are
// kept as they are (labels are compared byte for byte, like udev's by-label names).
std::string LabelField(absl::string_view bytes, size_t offset, size_t size) {
  absl::string_view field = bytes.substr(offset, size);
  if (const size_t nul = field.find('\0'); nul != absl::string_view::npos) field.remove_suffix(field.size() - nul);
  while (!field.empty() && field.back() == ' ') field.remove_suffix(1);
  return std::string(field);
}

std::string UuidField(absl::string_view bytes, size_t offset) {
  const absl::string_view u = bytes.substr(offset, 16);
  bool all_zero = true;
  for (const char c : u) all_zero &= c == 0;
  if (all_zero) return "";
  std::string out;
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    absl::StrAppendFormat(&out, "%02x", static_cast<uint8_t>(u[i]));
  }
  return out;
}

absl::Status Malformed(absl::string_view type, absl::string_view why) {
  return absl::DataLossError(absl::StrCat(type, " superblock: ", why));
}

absl::StatusOr<std::optional<FsIdentity>> ProbeExt(absl::string_view sb) {
  // struct ext2_super_block at 1024: s_magic at 0x38.
  if (sb.size() < 0x88 || Le(sb, 0x38, 2) != 0xEF53) return std::nullopt;
  if (Le(sb, 0x18, 4) > 6) return Malformed("ext", "block size over 64 KiB");
  const uint32_t compat = Le(sb, 0x5C, 4);
  const uint32_t incompat = Le(sb, 0x60, 4);
  const uint32_t ro_compat = Le(sb, 0x64, 4);
  FsIdentity fs;
  // As blkid tells them apart: ext4 features (extents, 64bit, flex_bg, huge files, ...) make it
  // ext4, a journal without them ext3, neither ext2.
  constexpr uint32_t kExt4Incompat = 0x0040 | 0x0080 | 0x0200;  // extents, 64bit, flex_bg
  constexpr uint32_t kExt4RoCompat = 0x0008 | 0x0010 | 0x0020 | 0x0040;
  if ((incompat & kExt4Incompat) != 0 || (ro_compat & kExt4RoCompat) != 0) {
    fs.type = "ext4";
  } else if ((compat & 0x0004) != 0) {
    fs.type = "ext3";
  } else {
    fs.type = "ext2";
  }
  fs.uuid = UuidField(sb, 0x68);
  fs.label = LabelField(sb, 0x78, 16);
  // s_rev_level.s_minor_rev_level, as blkid prints it.
  fs.version = absl::StrCat(Le(sb, 0x4C, 4), ".", Le(sb, 0x3E, 2));
  fs.block_size = 1024u << Le(sb, 0x18, 4);
  return fs;
}

absl::StatusOr<std::optional<FsIdentity>> ProbeVfat(absl::string_view boot) {
  if (boot.size() < 512 || static_cast<uint8_t>(boot[510]) != 0x55 ||
      static_cast<uint8_t>(boot[511]) != 0xAA) {
    return std::nullopt;
  }
  size_t id_at;
  size_t label_at;
  std::string version;
  if (boot.substr(0x52, 5) == "FAT32") {
    id_at = 0x43;
    label_at = 0x47;
    version = "FAT32";
  } else if (boot.substr(0x36, 5) == "FAT12" || boot.substr(0x36, 5) == "FAT16" ||
             boot.substr(0x36, 3) == "FAT") {
    id_at = 0x27;
    label_at = 0x2B;
    if (boot.substr(0x36, 5) != "FAT  ") version = std::string(boot.substr(0x36, 5));
  } else {
    return std::nullopt;  // an MBR or another boot sector with the same signature
  }
  const uint32_t sector = Le(boot, 0x0B, 2);
  if (sector < 512 || sector > 4096 || (sector & (sector - 1)) != 0) {
    return Malformed("vfat", absl::StrCat("bytes per sector ", sector));
  }
  if (boot[0x0D] == 0) return Malformed("vfat", "zero sectors per cluster");
  FsIdentity fs;
  fs.type = "vfat";
  const uint32_t id = Le(boot, id_at, 4);
  fs.uuid = absl::StrFormat("%04X-%04X", id >> 16, id & 0xFFFF);
  fs.label = LabelField(boot, label_at, 11);
  if (fs.label == "NO NAME") fs.label.clear();
  fs.version = std::move(version);
  fs.block_size = sector;
  return fs;
}

absl::StatusOr<std::optional<FsIdentity>> ProbeXfs(absl::string_view sb) {
  if (sb.size() < 120 || sb.substr(0, 4) != "XFSB") return std::nullopt;
  const uint32_t block = (Le(sb, 4, 1) << 24) | (Le(sb, 5, 1) << 16) | (Le(sb, 6, 1) << 8) |
                         Le(sb, 7, 1);  // sb_blocksize, big-endian
  if (block < 512 || block > 65536 || (block & (block - 1)) != 0) {
    return Malformed("xfs", absl::StrCat("block size ", block));
  }
  FsIdentity fs;
  fs.type = "xfs";
  fs.uuid = UuidField(sb, 32);
  fs.label = LabelField(sb, 108, 12);
  fs.block_size = block;
  return fs;
}

absl::StatusOr<std::optional<FsIdentity>> ProbeSwap(absl::string_view page) {
  // The signature ends the first page; 4 KiB pages (x86, most arm64 configs).
  const absl::string_view magic = page.size() >= 4096 ? page.substr(4096 - 10, 10) : "";
  if (magic != "SWAPSPACE2" && magic != "SWAP-SPACE") return std::nullopt;
  FsIdentity fs;
  fs.type = "swap";
  if (magic == "SWAPSPACE2") {
    // union swap_header.info at 1024: version, last_page, nr_badpages, uuid[16], volume_name[16].
    if (Le(page, 1024, 4) != 1) {
      return Malformed("swap", absl::StrCat("header version ", Le(page, 1024, 4)));
    }
    fs.uuid = UuidField(page, 1024 + 12);
    fs.label = LabelField(page, 1024 + 28, 16);
    fs.version = "1";
  }
  return fs;
}

absl::StatusOr<std::optional<FsIdentity>> ProbeSquashfs(absl::string_view sb) {
  // struct squashfs_super_block: s_magic "hsqs" (little-endian 4.x), s_major at 28, s_minor at 30.
  if (sb.size() < 4 || sb.substr(0, 4) != "hsqs") return std::nullopt;
  if (sb.size() < 96) return Malformed("squashfs", "cut short");
  const uint32_t major = Le(sb, 28, 2);
  if (major < 2 || major > 4) return Malformed("squashfs", absl::StrCat("version ", major));
  FsIdentity fs;
  fs.type = "squashfs";
  fs.version = absl::StrCat(major, ".", Le(sb, 30, 2));
  return fs;
}

}  // namespace

absl::StatusOr<std::optional<FsIdentity>> ProbeFilesystem(ProbeReader read) {
  // The first 4 KiB hold vfat's boot sector, xfs's superblock, ext's superblock (at 1024) and
  // the swap signature; btrfs alone lives at 64 KiB.
  HOTRING_ASSIGN_OR_RETURN(const std::string head, read(0, 4096));
  if (head.size() >= 1024 + 0x3A && Le(head, 1024 + 0x38, 2) == 0xEF53) {
    // Everything up to the end of the volume name must be there.
    if (head.size() < 1024 + 0x88) return Malformed("ext", "cut short");
    return ProbeExt(absl::string_view(head).substr(1024));
  }
  if (head.size() >= 4 && absl::string_view(head).substr(0, 4) == "XFSB") {
    if (head.size() < 512) return Malformed("xfs", "cut short");
    return ProbeXfs(head);
  }
  HOTRING_ASSIGN_OR_RETURN(std::optional<FsIdentity> squashfs, ProbeSquashfs(head));
  if (squashfs.has_value()) return squashfs;
  HOTRING_ASSIGN_OR_RETURN(std::optional<FsIdentity> swap, ProbeSwap(head));
  if (swap.has_value()) return swap;
  HOTRING_ASSIGN_OR_RETURN(std::optional<FsIdentity> vfat, ProbeVfat(head));
  if (vfat.has_value()) return vfat;
  // btrfs: struct btrfs_super_block at 64 KiB; magic at 0x40, fsid at 0x20, label at 0x12b.
  HOTRING_ASSIGN_OR_RETURN(const std::string btrfs, read(65536, 0x12b + 256));
  if (btrfs.size() >= 0x48 && absl::string_view(btrfs).substr(0x40, 8) == "_BHRfS_M") {
    if (btrfs.size() < 0x12b + 256) return Malformed("btrfs", "cut short");
    FsIdentity fs;
    fs.type = "btrfs";
    fs.uuid = UuidField(btrfs, 0x20);
    fs.label = LabelField(btrfs, 0x12b, 256);
    return fs;
  }
  return std::nullopt;
}

absl::StatusOr<ProbeFile> ProbeFile::Open(const std::string& path, size_t max_read) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  return ProbeFile(path, std::move(fd), max_read);
}

absl::StatusOr<std::string> ProbeFile::Read(uint64_t offset, size_t length) const {
  if (length > max_read_ || offset > (uint64_t{1} << 50)) {
    return absl::InvalidArgumentError("probe read out of bounds");
  }
  std::string buffer(length, '\0');
  size_t got = 0;
  while (got < length) {
    const ssize_t n =
        ::pread(fd_.get(), buffer.data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("pread(", path_, ")"));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  buffer.resize(got);
  return buffer;
}

absl::StatusOr<std::optional<FsIdentity>> ProbeFilesystemAt(const std::string& path) {
  HOTRING_ASSIGN_OR_RETURN(const ProbeFile file, ProbeFile::Open(path, kMaxProbeRead + 256));
  return ProbeFilesystem([&](uint64_t offset, size_t length) -> absl::StatusOr<std::string> {
    if (offset > kMaxProbeOffset) return absl::InvalidArgumentError("probe read out of bounds");
    return file.Read(offset, length);
  });
}

}  // namespace hotring::hotplug::probe

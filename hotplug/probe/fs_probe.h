// Filesystem identity (type, LABEL, UUID) from a block device's superblock, for
// `settle --for LABEL=...|UUID=...` when no earlier stage set ID_FS_LABEL/ID_FS_UUID. Knows
// ext2/3/4, vfat, btrfs, xfs, squashfs and Linux swap; reads at most a few small blocks at fixed
// offsets. The udev compatibility stage turns an FsIdentity into ID_FS_* properties.
// The format logic takes a reader callback (no fds), so tests feed it crafted images.
#ifndef HOTRING_HOTPLUG_PROBE_FS_PROBE_H_
#define HOTRING_HOTPLUG_PROBE_FS_PROBE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::probe {

// What a superblock says. Owns its strings; `label` and `uuid` are empty when the filesystem
// has none.
struct FsIdentity {
  std::string type;   // "ext4", "vfat", "btrfs", "xfs", "swap", ...
  std::string label;  // as blkid prints it: trailing spaces/NULs removed
  std::string uuid;   // "0123abcd-...", or "ABCD-1234" for vfat
  std::string version;      // as blkid's VERSION: "1.0" (ext), "FAT32", "1" (swap), "4.0"
  uint32_t block_size = 0;  // as blkid's BLOCK_SIZE (ext, vfat, xfs); 0: not reported
};

// Reads up to `length` bytes at `offset`; fewer (or none) past the end of the device.
using ProbeReader = absl::FunctionRef<absl::StatusOr<std::string>(uint64_t offset, size_t length)>;

// The largest single read ProbeFilesystem asks for, and the furthest byte it reads.
inline constexpr size_t kMaxProbeRead = 4096;
inline constexpr uint64_t kMaxProbeOffset = 65536 + 4096;

// nullopt: no filesystem this prober knows. An error (InvalidArgument/DataLoss) when a known
// magic is present but the superblock is malformed or cut short, or when reading failed.
[[nodiscard]] absl::StatusOr<std::optional<FsIdentity>> ProbeFilesystem(ProbeReader read);

// A bounded pread reader over one block device or image file, opened read-only: what the
// probers read a real device through. Owns the descriptor.
class ProbeFile {
 public:
  // `max_read`: the largest single read it serves (larger ones are refused, as are offsets past
  // 2^50), so a prober's arithmetic on a malformed header cannot make a huge allocation.
  [[nodiscard]] static absl::StatusOr<ProbeFile> Open(const std::string& path, size_t max_read);
  // Up to `length` bytes at `offset`; fewer (or none) past the end.
  [[nodiscard]] absl::StatusOr<std::string> Read(uint64_t offset, size_t length) const;

 private:
  ProbeFile(std::string path, UniqueFd fd, size_t max_read)
      : path_(std::move(path)), fd_(std::move(fd)), max_read_(max_read) {}
  std::string path_;
  UniqueFd fd_;
  size_t max_read_;
};

// ProbeFilesystem on a file or block device (opened read-only, pread only).
[[nodiscard]] absl::StatusOr<std::optional<FsIdentity>> ProbeFilesystemAt(const std::string& path);

}  // namespace hotring::hotplug::probe

#endif  // HOTRING_HOTPLUG_PROBE_FS_PROBE_H_

// Hwdb: systemd's compiled hardware database (hwdb.bin, "KSLPHHRH"), read in place through a
// read-only mapping, and its lookup as sd-hwdb (systemd 252) does it: a trie walk along the
// lookup string that matches every glob key (fnmatch, flags 0) below a '*', '?' or '[' child,
// the properties of every matching key, a later key of the same property replacing an earlier
// one by file priority and line number (the v2/v3 value entries).
//
// Every offset, size and string of the file is checked before it is read: a truncated or
// corrupt file is an error at Open or at Lookup, never a read outside the file, and a lookup
// visits a bounded number of nodes. Nothing of the file is copied: the daemon's memory holds
// only the pages lookups touch (which the kernel may drop again, as for any clean file page).
#ifndef HOTRING_HOTPLUG_UDEV_HWDB_H_
#define HOTRING_HOTPLUG_UDEV_HWDB_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hotring::hotplug::udev {

// Where udevd 252 looks for hwdb.bin, first found wins.
inline constexpr absl::string_view kHwdbPaths[] = {
    "/etc/systemd/hwdb/hwdb.bin",
    "/etc/udev/hwdb.bin",
    "/usr/lib/systemd/hwdb/hwdb.bin",
    "/lib/udev/hwdb.bin",
};

// One property a lookup found: views into the database, valid while the Hwdb lives.
struct HwdbProperty {
  absl::string_view key;    // without the leading space of the file's key
  absl::string_view value;
};

// Bounds of one lookup (a well-formed Debian hwdb.bin stays far below them: docs/udev-rules.md).
struct HwdbLimits {
  size_t max_nodes = size_t{1} << 16;        // trie nodes visited (Debian's worst: 419)
  size_t max_properties = 4096;              // distinct properties kept
  uint64_t max_match_steps = uint64_t{1} << 26;  // glob matching, counted as pattern x subject
};

// Owns the mapping of one hwdb.bin (or, for tests and fuzzing, a copy of its bytes). Move-only.
class Hwdb {
 public:
  // Maps `path` and checks its header. Errors: cannot open/map, not a regular file, too short,
  // wrong signature, size not the one the header states, impossible record sizes.
  [[nodiscard]] static absl::StatusOr<Hwdb> Open(const std::string& path);
  // The first of `paths` that exists (kHwdbPaths by default), as sd_hwdb_new finds it. NotFound
  // when none exists; another error when the first that exists cannot be read.
  [[nodiscard]] static absl::StatusOr<Hwdb> OpenFirst(
      absl::Span<const absl::string_view> paths = kHwdbPaths);
  // An image held in memory (owned).
  [[nodiscard]] static absl::StatusOr<Hwdb> FromBytes(std::string bytes);

  Hwdb(Hwdb&& other) noexcept;
  Hwdb& operator=(Hwdb&& other) noexcept;
  Hwdb(const Hwdb&) = delete;
  Hwdb& operator=(const Hwdb&) = delete;
  ~Hwdb();

  // The properties of every key matching `modalias` (read up to its first NUL), in sd-hwdb's
  // order. Empty when nothing matches. DataLoss when the walk meets a malformed record,
  // ResourceExhausted when it would go beyond `limits`.
  [[nodiscard]] absl::StatusOr<std::vector<HwdbProperty>> Lookup(absl::string_view modalias,
                                                                 const HwdbLimits& limits = {}) const;

  // The path it was opened from ("" for FromBytes).
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] size_t size() const { return size_; }

 private:
  Hwdb() = default;
  [[nodiscard]] absl::Status CheckHeader();
  void Unmap();

  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::unique_ptr<std::string> bytes_;
  // From the header.
  uint64_t node_size_ = 0;
  uint64_t child_entry_size_ = 0;
  uint64_t value_entry_size_ = 0;
  uint64_t root_ = 0;
};

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_HWDB_H_

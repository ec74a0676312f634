// The udev database libudev reads: /run/udev/data/<id>, one file per device with its links
// (S:), initialization time (I:), properties (E:) and tags (G:, Q:), and the tag index
// /run/udev/tags/<tag>/<id>. Formatting and parsing are
// pure; DatabaseDir writes a file atomically (a temporary file renamed over the old one), so a
// reader sees the old or the new entry, never half of one.
#ifndef HOTRING_HOTPLUG_UDEV_DATABASE_H_
#define HOTRING_HOTPLUG_UDEV_DATABASE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"
#include "hotplug/event.h"
#include "hotplug/udev/ifindex.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udev {

// What one database file says about a device. Owns its strings.
struct DatabaseEntry {
  std::vector<std::string> links;  // relative to /dev: "disk/by-uuid/1234-ABCD" (S:)
  uint64_t usec_initialized = 0;   // CLOCK_MONOTONIC microseconds of the first handling (I:)
  Properties properties;           // set by hotring, not the kernel's (E:)
  std::vector<std::string> tags;          // every tag the device has had since it appeared (G:)
  std::vector<std::string> current_tags;  // the tags its last event set (Q:)
  int link_priority = 0;  // OPTIONS="link_priority=N" (L:, written when not 0; devices with a node only)
  // OPTIONS+="db_persist": the file survives `udevadm info --cleanup-db` (mode 01644).
  bool persist = false;
};

// True for a name udev's rules accept as a TAG (letters, digits, '-', '_'; at most 200), which
// is also safe as a file name under /run/udev/tags.
[[nodiscard]] bool ValidTagName(absl::string_view tag);

// libudev's device id, the database file's name: "b8:1" / "c13:64" for devices with a node,
// "n3" for a network interface, "+drivers:usb:usbhid" for a driver, "+input:input5" otherwise.
// InvalidArgument when the event's names cannot make a file name (a '/' in a subsystem, ...).
[[nodiscard]] absl::StatusOr<std::string> DeviceId(const Event& event);

// The file's text: S:, L:, I:, E:, G:, Q: lines and "V:1", as sd-device writes them. Values with a
// newline cannot be stored (a reader would split them): such properties are left out, and so
// are tags that are not valid tag names.
[[nodiscard]] std::string FormatDatabaseEntry(const DatabaseEntry& entry);

// Reads back what FormatDatabaseEntry wrote (unknown lines are skipped).
[[nodiscard]] DatabaseEntry ParseDatabaseEntry(absl::string_view text);

// The database directory (`--udev-run DIR`, default /run/udev): owns an fd of DIR; data/ is
// made inside it on first use and kept open from then on (an event reads, writes or removes
// entries three or four times: each would open and close the directory). Never follows a
// symlink below DIR. A data/ removed meanwhile is noticed when a write into it fails (the kernel
// refuses to create a name in a removed directory) and made again; until then a read finds
// nothing there, which is what it holds.
class DatabaseDir {
 public:
  static absl::StatusOr<DatabaseDir> Open(const std::string& run_dir);

  // Replaces data/<id> atomically (mode 0644, or 01644 for a db_persist entry, as udevd marks
  // those). Safe from several threads for different ids.
  absl::Status Write(absl::string_view id, absl::string_view content, bool persist = false) const;
  // The directory's fd (data/ and tags/ are beneath it; links/ for udev's link claims).
  [[nodiscard]] int fd() const { return fd_.get(); }
  // data/<id>, or NotFound.
  [[nodiscard]] absl::StatusOr<std::string> Read(absl::string_view id) const;
  // Removes data/<id>; OK when it was not there.
  absl::Status Remove(absl::string_view id) const;
  // tags/<tag>/<id>, the empty file (mode 0444) libudev's enumerate-by-tag lists; the tag's
  // directory is made on first use. InvalidArgument for a tag that is not a valid tag name.
  absl::Status AddTag(absl::string_view tag, absl::string_view id) const;
  // Removes tags/<tag>/<id>; OK when it was not there.
  absl::Status RemoveTag(absl::string_view tag, absl::string_view id) const;
  [[nodiscard]] const std::string& path() const { return path_; }

  // For the daemon, the entries' only writer: remembers which entries data/ holds (listed now,
  // then kept by Write and Remove), so that reading one that is not there costs no system call
  // (most devices have none, and an event looks up its own and its parents'). An entry someone
  // else removes costs a failed open, as before; one someone else writes is not seen until the
  // daemon restarts (udevd and udevadm's --cleanup-db write none). Entries are remembered by a
  // 64-bit hash of their names: two names would have to share one for a read to be missed.
  absl::Status TrackEntries();
  // Reads that TrackEntries answered without a system call.
  [[nodiscard]] uint64_t reads_skipped() const { return entries_->skipped.load(std::memory_order_relaxed); }

 private:
  // data/'s fd, kept: the one in use, and those a removal replaced (another thread may still
  // use one, so none is closed before the DatabaseDir is; data/ is removed by hand, if ever).
  struct KeptDataDir {
    std::atomic<int> fd{-1};
    std::mutex mutex;  // opening, replacing
    UniqueFd current;
    std::vector<UniqueFd> replaced;
  };

  // The names data/ holds, once TrackEntries was called.
  struct KnownEntries {
    std::atomic<bool> tracking{false};
    std::atomic<uint64_t> skipped{0};
    std::mutex mutex;
    absl::flat_hash_set<uint64_t> hashes;
    // Held across a rename or unlink and its Remember, by the name's hash: two events of one id
    // on different devices (a reused device number) leave the list as they leave data/.
    std::array<std::mutex, 16> names;
  };
  // The lock of `id`'s name when entries are tracked (an empty lock otherwise).
  [[nodiscard]] std::unique_lock<std::mutex> LockName(absl::string_view id) const;

  DatabaseDir(UniqueFd fd, std::string path)
      : fd_(std::move(fd)),
        path_(std::move(path)),
        data_(std::make_unique<KeptDataDir>()),
        entries_(std::make_unique<KnownEntries>()) {}
  // Whether data/<id> may be there: true unless tracked and known absent.
  [[nodiscard]] bool MayHold(absl::string_view id) const;
  void Remember(absl::string_view id, bool present) const;
  // data/ (borrowed from data_): opened, or made when `create`, on first use. `stale`: the fd
  // a write found removed (ENOENT), to be replaced by a newly opened one.
  absl::StatusOr<int> DataDir(bool create, int stale = -1) const;
  // tags/<tag> (made when `create`), never through a symlink.
  absl::StatusOr<UniqueFd> TagDir(absl::string_view tag, bool create) const;
  UniqueFd fd_;
  std::string path_;
  std::unique_ptr<KeptDataDir> data_;
  std::unique_ptr<KnownEntries> entries_;
};

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_DATABASE_H_

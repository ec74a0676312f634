// SysfsView: the read-only questions udev's builtins ask of sysfs (an attribute's content, a
// device's subsystem, whether a directory is a device), behind an interface so that the property
// logic (input_id, path_id, usb_id) is pure and tests run it on recorded trees.
#ifndef HOTRING_HOTPLUG_UDEV_SYSFS_VIEW_H_
#define HOTRING_HOTPLUG_UDEV_SYSFS_VIEW_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udev {

// True when `root` is a sysfs mount (the real /sys), not a tree recorded or built elsewhere.
[[nodiscard]] bool IsSysfsMount(const std::string& root);

// Devpaths are as in uevents: "/devices/pci0000:00/...", relative to the sysfs root.
class SysfsView {
 public:
  virtual ~SysfsView() = default;
  // The attribute file `name` (may contain '/', e.g. "capabilities/ev") of `devpath`, with
  // trailing newlines removed; nullopt when missing or unreadable. Bounded (64 KiB).
  [[nodiscard]] virtual std::optional<std::string> Attribute(absl::string_view devpath,
                                                             absl::string_view name) const = 0;
  // The last component of the target of `devpath`/`name` when that is a symlink ("subsystem",
  // "driver"); nullopt otherwise.
  [[nodiscard]] virtual std::optional<std::string> LinkName(absl::string_view devpath,
                                                            absl::string_view name) const = 0;
  // True when `devpath` is a device directory (it has a uevent file).
  [[nodiscard]] virtual bool IsDevice(absl::string_view devpath) const = 0;
  // The names in directory `path` (relative to the sysfs root), unsorted; empty when none.
  [[nodiscard]] virtual std::vector<std::string> List(absl::string_view path) const = 0;
};

// A view of a directory tree laid out like /sys (the real one, or testing/fake_sysfs). Owns
// only its root path; every call opens, reads and closes.
class DirSysfsView final : public SysfsView {
 public:
  // Asks statfs whether `root` is a sysfs mount (IsSysfsMount).
  explicit DirSysfsView(std::string root);
  // Told: a view made once an event takes the answer from the one who asked once.
  DirSysfsView(std::string root, bool sysfs) : root_(std::move(root)), sysfs_(sysfs) {}
  [[nodiscard]] std::optional<std::string> Attribute(absl::string_view devpath,
                                                     absl::string_view name) const override;
  [[nodiscard]] std::optional<std::string> LinkName(absl::string_view devpath,
                                                    absl::string_view name) const override;
  [[nodiscard]] bool IsDevice(absl::string_view devpath) const override;
  [[nodiscard]] std::vector<std::string> List(absl::string_view path) const override;

 private:
  std::string root_;
  // The root is a sysfs mount: what opens and reads as empty is an empty attribute, never a
  // FIFO or a device (a recorded tree may hold those), so its type is not asked.
  bool sysfs_ = false;
};

// What sysfs says of a directory that does not change while a device is there: whether it is a
// device (its uevent file) and the device's subsystem (its subsystem link). Shared by the
// events of a daemon, so that the parents every event walks (IMPORT{parent}, SUBSYSTEMS==, the
// builtins' parent walks) are asked of sysfs once, not once an event. The daemon forgets a
// devpath and everything beneath it when an event that adds, removes or moves a device there
// starts (Forget); its scheduler starts no event below such an event's device before that one
// ends, so every answer an event gets was true when it started. The driver link, which
// binding changes without an event below it, is not kept.
// Also a device's uevent file (the variables IMPORT{parent} reads of every parent), which the
// kernel announces changing: binding (DRIVER) with a bind or unbind event of the device, the
// rest with a change event of it; the daemon forgets it when any event of the device starts
// (ForgetUevent). Only short ones are kept (kMaxUevent). Bounded: past `max_entries` it starts
// over. Thread-safe.
class DeviceShapes {
 public:
  explicit DeviceShapes(size_t max_entries = 16384) : max_entries_(max_entries) {}
  DeviceShapes(const DeviceShapes&) = delete;
  DeviceShapes& operator=(const DeviceShapes&) = delete;

  // Kept answers (nullopt: not known).
  [[nodiscard]] std::optional<bool> IsDevice(absl::string_view devpath) const;
  [[nodiscard]] std::optional<std::optional<std::string>> Subsystem(absl::string_view devpath) const;
  [[nodiscard]] std::optional<std::optional<std::string>> Uevent(absl::string_view devpath) const;
  // Counts Forget and Clear calls. Read it before asking sysfs and hand it to Keep*: an answer
  // read while something was forgotten is not kept (it may be what was forgotten).
  [[nodiscard]] uint64_t generation() const;
  void KeepIsDevice(absl::string_view devpath, bool device, uint64_t generation);
  void KeepSubsystem(absl::string_view devpath, const std::optional<std::string>& subsystem, uint64_t generation);
  // Kept when at most kMaxUevent bytes.
  void KeepUevent(absl::string_view devpath, const std::optional<std::string>& uevent, uint64_t generation);
  // An event of the device at `devpath` starts: its uevent file may say something else now.
  void ForgetUevent(absl::string_view devpath);
  static constexpr size_t kMaxUevent = 1024;
  // A device at `devpath` appears, goes or moves: what was kept of it and beneath it goes.
  void Forget(absl::string_view devpath);
  // Forgets everything (the daemon is idle: the memory goes back).
  void Clear();
  [[nodiscard]] size_t size() const;

 private:
  struct Shape {
    int8_t device = -1;  // -1 not known, 0 no, 1 yes
    bool subsystem_known = false;
    bool uevent_known = false;
    std::optional<std::string> subsystem;
    std::optional<std::string> uevent;
  };
  Shape& EntryLocked(absl::string_view devpath);

  const size_t max_entries_;
  mutable std::mutex mutex_;
  uint64_t generation_ = 0;
  // Ordered: a device's subtree is one range ("/a/b/" up to "/a/b0").
  absl::btree_map<std::string, Shape, std::less<>> shapes_;
};

// Asks a view each question once and keeps the answer until Clear(): what one event reads, as
// udevd's sd_device keeps a device's attributes, links and parent for the event, so that the
// rules and the builtins they call (net_id, path_id, net_setup_link, ...) share the reads and
// the parent walks of every builtin stop at the first one's. Borrows the view; one thread at a
// time. List is not kept (it is asked for rarely, and a directory's names may change).
class CachingSysfsView final : public SysfsView {
 public:
  // `shapes` (optional, borrowed): answers kept across events, asked before `base`.
  explicit CachingSysfsView(const SysfsView& base, DeviceShapes* shapes = nullptr) : base_(base), shapes_(shapes) {}
  [[nodiscard]] std::optional<std::string> Attribute(absl::string_view devpath,
                                                     absl::string_view name) const override;
  [[nodiscard]] std::optional<std::string> LinkName(absl::string_view devpath,
                                                    absl::string_view name) const override;
  [[nodiscard]] bool IsDevice(absl::string_view devpath) const override;
  [[nodiscard]] std::vector<std::string> List(absl::string_view path) const override;
  // Forgets every answer (after a write: what was read may be stale).
  void Clear();

 private:
  const SysfsView& base_;
  DeviceShapes* const shapes_;
  // Keyed by devpath "\n" name: a devpath holds no newline.
  mutable absl::flat_hash_map<std::string, std::optional<std::string>> attributes_;
  mutable absl::flat_hash_map<std::string, std::optional<std::string>> links_;
  mutable absl::flat_hash_map<std::string, bool> devices_;
};

// What udev's sd_device answers for a devpath, derived from a view. Pure helpers.
// The device's subsystem ("" when none).
[[nodiscard]] std::string SubsystemOf(const SysfsView& view, absl::string_view devpath);
// DEVTYPE from the device's uevent file ("" when none).
[[nodiscard]] std::string DevTypeOf(const SysfsView& view, absl::string_view devpath);
// A KEY's value in the device's uevent file.
[[nodiscard]] std::optional<std::string> UeventValue(const SysfsView& view,
                                                     absl::string_view devpath,
                                                     absl::string_view key);
// The nearest ancestor directory that is a device; nullopt at the top of /devices.
[[nodiscard]] std::optional<std::string> ParentOf(const SysfsView& view, absl::string_view devpath);
// The nearest ancestor (not `devpath` itself) in `subsystem` and, when `devtype` is not empty,
// of that DEVTYPE.
[[nodiscard]] std::optional<std::string> ParentWith(const SysfsView& view,
                                                    absl::string_view devpath,
                                                    absl::string_view subsystem,
                                                    absl::string_view devtype = "");
// The last component of a devpath ('!' becomes '/', as the kernel encodes it).
[[nodiscard]] std::string SysnameOf(absl::string_view devpath);
// The trailing decimal digits of the sysname ("" when none).
[[nodiscard]] std::string SysnumOf(absl::string_view devpath);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_SYSFS_VIEW_H_

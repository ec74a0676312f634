// FakeSysfs: a sysfs-shaped tree of regular files in a temporary directory, for tests of
// anything that walks /sys (hotring trigger, the daemon's resync) without touching the real
// one. The layout follows the kernel's: devices are directories under devices/ holding a
// `uevent` file and attributes; bus/<bus>/devices/<name> and class/<class>/<name> are relative
// symlinks into devices/, and each device's `subsystem` link points back at its bus or class.
// Writing to a fake `uevent` file creates no event, of course: tests read the file back to see
// what was written (trigger truncates and writes the action).
//
//   absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
//   sys->AddDevice({.devpath = "/devices/pci0000:00/0000:00:1f.2",
//                   .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
//                   .uevent = {{"PCI_ID", "8086:2922"}, {"MODALIAS", "pci:v00008086..."}}});
//   RunSomething("--sysfs-root", sys->root());
//
// Reusable by other projects' Bazel tests: depend on //testing:fake_sysfs.
#ifndef HOTRING_TESTING_FAKE_SYSFS_H_
#define HOTRING_TESTING_FAKE_SYSFS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::testing {

// Owns the temporary directory; removes the whole tree when destroyed. Move-only.
class FakeSysfs {
 public:
  enum class Kind { kClass, kBus };

  struct Device {
    // Must start with "/devices/". Missing parent directories are created as plain directories
    // (without a uevent file, so they are not devices themselves unless added too).
    std::string devpath;
    // Bus or class name; empty: the device is in no subsystem (udevadm does not see it).
    std::string subsystem;
    Kind kind = Kind::kClass;
    // The uevent file's KEY=VALUE lines, in order (DEVNAME, MAJOR, MINOR, MODALIAS, ...).
    std::vector<std::pair<std::string, std::string>> uevent;
    // Further attribute files in the device directory (name, content).
    std::vector<std::pair<std::string, std::string>> attributes;
  };

  // Creates an empty tree (devices/, bus/, class/, module/) under $TEST_TMPDIR, or /tmp.
  static absl::StatusOr<FakeSysfs> Create();

  FakeSysfs(FakeSysfs&& other) noexcept : root_(std::exchange(other.root_, std::string())) {}
  FakeSysfs& operator=(FakeSysfs&& other) noexcept;
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;
  ~FakeSysfs();

  // The tree's root, to pass as --sysfs-root.
  [[nodiscard]] const std::string& root() const { return root_; }
  // root() + relative ("/devices/x/uevent").
  [[nodiscard]] std::string Path(absl::string_view relative) const;
  [[nodiscard]] std::string UeventPath(absl::string_view devpath) const;

  // Adds a device: its directory, uevent file, attributes, `subsystem` link, and its link in
  // bus/<subsystem>/devices/ or class/<subsystem>/ (creating the bus or class as needed).
  absl::Status AddDevice(const Device& device);
  // bus/<name>/ with its uevent file and empty devices/ and drivers/.
  absl::Status AddBus(absl::string_view name);
  // bus/<bus>/drivers/<name>/uevent (adds the bus if needed).
  absl::Status AddDriver(absl::string_view bus, absl::string_view name);
  // module/<name>/uevent.
  absl::Status AddModule(absl::string_view name);
  // Writes (replaces) any file under the root, creating parent directories.
  absl::Status WriteFile(absl::string_view relative, absl::string_view content);

  // Unplugs a device: removes its directory tree and the links to it (a vanished device).
  absl::Status RemoveDevice(absl::string_view devpath);

  // Ways a device's uevent file can fail, to test that walkers report and go on.
  enum class UeventFault {
    kUnreadableAndUnwritable,  // the uevent "file" is a directory: open/read/write fail
    kWriteFails,               // a symlink to /dev/full: opens, but every write fails (ENOSPC)
  };
  absl::Status BreakUevent(absl::string_view devpath, UeventFault fault);

  // Content of a file under the root (e.g. what trigger wrote into a uevent file).
  absl::StatusOr<std::string> ReadFile(absl::string_view relative) const;
  absl::StatusOr<std::string> ReadUevent(absl::string_view devpath) const;

 private:
  explicit FakeSysfs(std::string root) : root_(std::move(root)) {}
  absl::Status MakeDirs(absl::string_view relative);
  absl::Status Symlink(absl::string_view target, absl::string_view relative_link);
  std::string root_;
};

// The uevent file content for KEY=VALUE pairs ("K=V\n" each).
[[nodiscard]] std::string FormatUeventFile(
    const std::vector<std::pair<std::string, std::string>>& vars);

// A bitmap attribute (an input device's capabilities/*, properties) written as words of a
// 64-bit kernel's `unsigned long` (most significant first, as recorded on x86-64), printed as
// the kernel of this build's word size prints it: unchanged on a 64-bit build, each word split
// into two 32-bit words on a 32-bit one (the leading word's zero high half left out, as the
// kernel leaves out leading zero words). A token that is not hex stays one token.
[[nodiscard]] std::string KernelBitmap(absl::string_view words64);

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_FAKE_SYSFS_H_

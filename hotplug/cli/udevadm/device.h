// UdevDevice: one device as systemd 252's sd-device sees it, read from a sysfs tree and the
// /run/udev database. Its properties are an ordered map filled lazily, in the order sd-device
// fills them (DEVPATH first; SUBSYSTEM and DRIVER when first asked for; the uevent file's
// variables when a uevent field is first asked for, MAJOR/MINOR after the file; the database's
// USEC_INITIALIZED and E: lines when it is first read; DEVLINKS, TAGS, CURRENT_TAGS last), so
// that udevadm's outputs list them in the same order as 252 for the same sequence of
// questions. Where 252 iterates a hash set (links, tags, attribute names) the database's or
// the directory's order is kept instead; 252's order there changes from run to run.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_DEVICE_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_DEVICE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udevadm {

// Where the logical paths /sys, /run/udev and /dev are on this machine. Outputs always show
// the logical paths. HOTRING_UDEVADM_ROOT=DIR moves all three below DIR (tests).
struct Roots {
  std::string sys = "/sys";
  std::string run = "/run/udev";
  std::string dev = "/dev";
  [[nodiscard]] static Roots FromEnvironment();
  // The physical path of a logical "/sys/...", "/run/udev/..." or "/dev/..." path.
  [[nodiscard]] std::string Map(absl::string_view logical) const;
};

// Owns its strings and its parent (read when first asked for).
class UdevDevice {
 public:
  // `syspath` is logical ("/sys/devices/..."). With `verify`, symlinks are resolved (within
  // the sysfs root) and the device must exist: NotFound (ENODEV) otherwise.
  static absl::StatusOr<std::unique_ptr<UdevDevice>> FromSyspath(const Roots& roots,
                                                                 absl::string_view syspath,
                                                                 bool verify = true);
  // "b8:1", "c4:64" through /sys/dev/{block,char}; "n3" is not supported (no rtnetlink).
  static absl::StatusOr<std::unique_ptr<UdevDevice>> FromDevnum(const Roots& roots, char type,
                                                                dev_t devnum);
  // SUBSYSTEM + sysname as sd_device_new_from_subsystem_sysname finds them.
  static absl::StatusOr<std::unique_ptr<UdevDevice>> FromSubsystemSysname(
      const Roots& roots, absl::string_view subsystem, absl::string_view sysname);
  // A database file name: "b8:1", "c4:64", "n3", "+pci:0000:00:1f.2".
  static absl::StatusOr<std::unique_ptr<UdevDevice>> FromDeviceId(const Roots& roots,
                                                                  absl::string_view id);

  [[nodiscard]] const std::string& syspath() const { return syspath_; }
  [[nodiscard]] absl::string_view devpath() const {
    return absl::string_view(syspath_).substr(4);
  }
  [[nodiscard]] std::string Sysname() const;
  [[nodiscard]] std::optional<std::string> Sysnum() const;
  [[nodiscard]] std::optional<std::string> Subsystem();
  // For drivers ("/sys/bus/usb/drivers/usbhid"): the bus.
  [[nodiscard]] const std::string& driver_subsystem() const { return driver_subsystem_; }
  [[nodiscard]] std::optional<std::string> DevType();
  [[nodiscard]] std::optional<std::pair<unsigned, unsigned>> Devnum();
  [[nodiscard]] std::optional<int> Ifindex();
  [[nodiscard]] std::optional<std::string> DevName();  // "/dev/..."
  [[nodiscard]] std::optional<uint64_t> Diskseq();
  [[nodiscard]] std::optional<std::string> Driver();
  [[nodiscard]] std::optional<std::string> DeviceId();
  [[nodiscard]] bool IsInitialized();
  [[nodiscard]] std::optional<uint64_t> UsecInitialized();
  [[nodiscard]] int DevlinkPriority();
  [[nodiscard]] const std::vector<std::string>& Devlinks();  // "/dev/..."
  [[nodiscard]] const std::vector<std::string>& Tags();
  [[nodiscard]] const std::vector<std::string>& CurrentTags();
  [[nodiscard]] bool HasTag(absl::string_view tag);
  // Every property after reading the uevent file and the database (the iteration 252 does).
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& Properties();
  [[nodiscard]] std::optional<std::string> Property(absl::string_view key);
  // An attribute's value as sd_device_get_sysattr_value reads it (trailing newlines dropped;
  // the last component of the driver, subsystem and module links). NotFound, or
  // FailedPrecondition for a directory, another link or an unreadable file
  // (PermissionDenied).
  [[nodiscard]] absl::StatusOr<std::string> SysattrValue(absl::string_view name);
  // Attribute names (files and links, subdirectories that are not devices), readable by owner.
  [[nodiscard]] std::vector<std::string> SysattrNames();
  // The parent device (nearest ancestor that is one), or nullptr.
  [[nodiscard]] UdevDevice* Parent();

  [[nodiscard]] const Roots& roots() const { return roots_; }

 private:
  UdevDevice(Roots roots, std::string syspath);
  void SetProperty(absl::string_view key, std::optional<absl::string_view> value);
  void ReadUevent();
  void ReadDatabase();
  bool PrepareProperties();
  void ListSysattrs(const std::string& subdir, std::vector<std::string>* out) const;

  Roots roots_;
  std::string syspath_;
  std::vector<std::pair<std::string, std::string>> properties_;
  bool subsystem_set_ = false;
  std::optional<std::string> subsystem_;
  std::string driver_subsystem_;
  bool driver_set_ = false;
  std::optional<std::string> driver_;
  bool uevent_loaded_ = false;
  std::optional<std::string> devtype_;
  std::optional<std::string> devname_;
  std::optional<std::pair<unsigned, unsigned>> devnum_;
  int ifindex_ = 0;
  uint64_t diskseq_ = 0;
  bool db_loaded_ = false;
  bool initialized_ = false;
  uint64_t usec_initialized_ = 0;
  int devlink_priority_ = 0;
  unsigned database_version_ = 0;
  std::vector<std::string> devlinks_;
  std::vector<std::string> tags_;
  std::vector<std::string> current_tags_;
  bool devlinks_outdated_ = false;
  bool tags_outdated_ = false;
  std::optional<std::string> device_id_;
  bool parent_set_ = false;
  std::unique_ptr<UdevDevice> parent_;
};

// The component-wise path comparison systemd's path_compare does ("/a" < "/a/b" < "/a-b").
[[nodiscard]] int PathCompare(absl::string_view a, absl::string_view b);

// Reads a whole small file; nullopt when it cannot be read.
[[nodiscard]] std::optional<std::string> ReadSmallFile(const std::string& path);

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_DEVICE_H_

// SysfsHost: the part of a RuleHost that reads and writes the filesystem: a sysfs tree (the
// real /sys or a recorded one), /proc/sys, and the other files TEST and IMPORT{file} name. A
// daemon's or a test's host derives from it and adds programs, builtins, the database and the
// system facts. Every call opens, reads and closes: no state, safe on one thread per instance.
#ifndef HOTRING_HOTPLUG_UDEVRULES_SYSFS_HOST_H_
#define HOTRING_HOTPLUG_UDEVRULES_SYSFS_HOST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "hotplug/udev/sysfs_view.h"
#include "hotplug/udevrules/rule_host.h"

namespace hotring::hotplug::udevrules {

class SysfsHost : public RuleHost {
 public:
  struct Roots {
    std::string sysfs = "/sys";            // where "/sys/..." paths and devpaths live
    std::string proc_sys = "/proc/sys";    // kernel parameters
    std::string files = "";                // prefix of every other absolute path ("" is /)
    // `sysfs` is a sysfs mount (udev::IsSysfsMount, asked once by whoever makes the roots; a
    // host is made for every event). Unset: asked by this host.
    std::optional<bool> sysfs_mounted;
  };
  explicit SysfsHost(Roots roots);

  bool ReadAttribute(absl::string_view devpath, absl::string_view name, std::string* out) override;
  bool Subsystem(absl::string_view devpath, std::string* out) override;
  bool Driver(absl::string_view devpath, std::string* out) override;
  bool Parent(absl::string_view devpath, std::string* out) override;
  bool FindDevice(absl::string_view subsystem, absl::string_view sysname, std::string* out) override;
  std::optional<uint32_t> FileMode(absl::string_view path) override;
  bool ListDirectory(absl::string_view path, std::vector<std::string>* names) override;
  absl::Status WriteAttribute(absl::string_view path, absl::string_view value) override;
  absl::Status ReadFile(absl::string_view path, size_t max_size, std::string* out) override;
  bool ReadSysctl(absl::string_view name, std::string* out) override;
  absl::Status WriteSysctl(absl::string_view name, absl::string_view value) override;
  // The uevent file's variables, DEVPATH and SUBSYSTEM (from its link), then the properties
  // DatabaseProperties adds. Not the driver link: the caller reads it where it wants DRIVER.
  bool DeviceProperties(absl::string_view devpath, OwnedProperties* out) override;

  // udev's device id of the device at `devpath` (its database file's name); "" when none.
  [[nodiscard]] std::string DeviceId(absl::string_view devpath);

 protected:
  // Another device's database properties, for DeviceProperties (none by default).
  virtual void DatabaseProperties(absl::string_view devpath, OwnedProperties* out) {}
  // Where an absolute path of the rules is on this machine.
  [[nodiscard]] std::string Resolve(absl::string_view path) const;
  [[nodiscard]] const udev::DirSysfsView& view() const { return view_; }
  // What the device reads (ReadAttribute, Subsystem, Driver, Parent) go through: the tree itself
  // here; a host that keeps an event's reads answers from its cache.
  [[nodiscard]] virtual const udev::SysfsView& sysfs() const { return view_; }
  [[nodiscard]] const Roots& roots() const { return roots_; }

 private:
  Roots roots_;
  udev::DirSysfsView view_;
};

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_SYSFS_HOST_H_

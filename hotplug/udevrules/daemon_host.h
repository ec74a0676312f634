// DaemonHost: the RuleHost of the daemon's udev rules stage. Sysfs and files through SysfsHost;
// PROGRAM and IMPORT{program} through a BlockingSpawner (this runs on a blocking pool's worker);
// IMPORT{builtin} through udev's builtins (builtin_calls.h does what they ask); the database from /run/udev/data; the
// kernel command line, the architecture and the names read once at start. One per event (it is
// cheap: it borrows everything shared from a DaemonHost::Shared).
#ifndef HOTRING_HOTPLUG_UDEVRULES_DAEMON_HOST_H_
#define HOTRING_HOTPLUG_UDEVRULES_DAEMON_HOST_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udev/database.h"
#include "hotplug/udevrules/builtin_calls.h"
#include "hotplug/udevrules/names.h"
#include "hotplug/udevrules/sysfs_host.h"
#include "io/process/blocking_spawner.h"

namespace hotring::hotplug::udevrules {

// What a worker needs to answer the rules, shared by every event. Owns nothing it points to:
// the stage owns those and outlives its jobs.
struct HostContext {
  SysfsHost::Roots roots;
  std::string dev_root = "/dev";  // where "/dev/x" nodes are, for builtins that probe them
  const udev::DatabaseDir* database = nullptr;
  // Which directories are devices, and their subsystems, kept across events (null: per event).
  udev::DeviceShapes* shapes = nullptr;
  const udev::BuiltinResources* builtins = nullptr;  // null: no builtin runs
  io::process::BlockingSpawner* spawner = nullptr;
  const NameLookup* names = nullptr;
  std::string kernel_cmdline;
  std::string arch;  // CONST{arch}
  std::string virt = "none";
  absl::Duration kill_grace = absl::Seconds(5);
};

class DaemonHost final : public SysfsHost {
 public:
  explicit DaemonHost(const HostContext& context);
  // With the builtins of one event (the stage replaces them on reload; an event keeps the
  // ones it started with). Null: context.builtins.
  DaemonHost(const HostContext& context, const udev::BuiltinResources* builtins);

  absl::Status RunProgram(absl::Span<const std::string> argv, absl::Span<const PropertyView> env,
                          absl::Duration timeout, size_t max_output, std::string* out) override;
  absl::Status RunBuiltin(absl::string_view name, absl::string_view command, absl::Span<const std::string> argv,
                          absl::string_view devpath, absl::Span<const PropertyView> properties,
                          OwnedProperties* out) override;
  // Sysfs reads are kept for the event (udevd's sd_device caches them the same way): the rules
  // ask the same parents for the same attributes line after line, and the builtins they call
  // read the same files and walk the same parents again. A write forgets them.
  absl::Status WriteAttribute(absl::string_view path, absl::string_view value) override;
  bool ReadDatabase(absl::string_view devpath, DatabaseEntry* out) override;
  bool DeviceProperties(absl::string_view devpath, OwnedProperties* out) override;
  void DeviceTags(absl::string_view devpath, std::vector<std::string>* out) override;
  absl::string_view KernelCommandLine() override { return context_.kernel_cmdline; }
  absl::string_view Constant(absl::string_view name) override;
  std::optional<uint32_t> UserId(absl::string_view name) override;
  std::optional<uint32_t> GroupId(absl::string_view name) override;

  // The event's own device and its entry (nullptr: none), which the caller read already.
  // Borrowed for the host's life.
  void SetEventDevice(absl::string_view devpath, const udev::DatabaseEntry* entry) {
    event_devpath_ = devpath;
    event_entry_ = entry;
  }
  // The database id of the device at `devpath` as its uevent file tells it ("" when none).
  [[nodiscard]] std::string DeviceIdOf(absl::string_view devpath);
  // What went wrong that udevd would log (a program's stderr, a failed builtin), "what" lines.
  [[nodiscard]] std::vector<std::string>& log() { return log_; }

 protected:
  void DatabaseProperties(absl::string_view devpath, OwnedProperties* out) override;
  // The event's reads, shared by the rules and the builtins.
  [[nodiscard]] const udev::SysfsView& sysfs() const override { return event_sysfs_; }

 private:
  const HostContext& context_;
  const udev::BuiltinResources* builtins_;
  std::vector<std::string> log_;
  udev::CachingSysfsView event_sysfs_;
  absl::flat_hash_map<std::string, std::optional<udev::DatabaseEntry>> entries_;  // by devpath
  absl::flat_hash_map<std::string, std::optional<OwnedProperties>> device_properties_;
  absl::string_view event_devpath_;
  const udev::DatabaseEntry* event_entry_ = nullptr;
};

// CONST{arch} of this build, in systemd's names ("x86-64", "arm64", "arm", ...).
[[nodiscard]] std::string BuildArchitecture();

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_DAEMON_HOST_H_

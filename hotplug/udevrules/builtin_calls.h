// The rules stage's side of udev's builtins (hotplug/udev/builtin_registry.h): what they share,
// loaded once at start (hwdb.bin mapped in place, the .link files, the system's facts), and one
// call as udevd makes it, with what the acting builtins ask done here: keyboard's key codes
// through EVIOCSKEYCODE (and axis overrides, attribute writes) on the device's node. The
// interface name net_setup_link chooses comes back as ID_NET_NAME, which the rules give to
// NAME (80-net-setup-link.rules) and the event renames over rtnetlink, as in udevd 252. `kmod`
// is not called here: the stage hands it to the modules stage.
#ifndef HOTRING_HOTPLUG_UDEVRULES_BUILTIN_CALLS_H_
#define HOTRING_HOTPLUG_UDEVRULES_BUILTIN_CALLS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udev/hwdb.h"
#include "hotplug/udev/net_setup_link.h"
#include "hotplug/udev/sysfs_links.h"
#include "hotplug/udev/system_builtins.h"
#include "hotplug/udevrules/rule_host.h"

namespace hotring::hotplug::udevrules {

// Where the builtins' resources come from.
struct BuiltinSources {
  std::string sysfs_root = "/sys";
  // hwdb.bin candidates, first found wins; empty: udevd's (udev::kHwdbPaths).
  std::vector<std::string> hwdb_paths;
  // .link directories, earlier hiding later; empty: udevd's (udev::kNetworkDirs).
  std::vector<std::string> network_dirs;
  std::string kernel_cmdline;
  std::string architecture;
  std::string virtualization = "none";
  std::string machine_id_file = "/etc/machine-id";
};

// What every builtin call shares. Owns the hwdb mapping, the .link files and the system
// objects; `resources` points into them (so the struct is not movable: held by unique_ptr).
struct BuiltinWorld {
  std::optional<udev::Hwdb> hwdb;
  std::unique_ptr<udev::SysfsLinks> links;
  std::optional<udev::LinkConfigs> link_configs;
  std::unique_ptr<udev::LinkSystem> link_system;
  std::unique_ptr<udev::BuiltinSystem> system;
  udev::BuiltinResources resources;

  BuiltinWorld() = default;
  BuiltinWorld(const BuiltinWorld&) = delete;
  BuiltinWorld& operator=(const BuiltinWorld&) = delete;
};

// Loads what the builtins read. Nothing missing is an error (udevd starts without hwdb.bin or
// .link files too: the builtins that need them fail per call); what udevd would warn about goes
// to `warnings`.
[[nodiscard]] std::unique_ptr<BuiltinWorld> LoadBuiltinWorld(const BuiltinSources& sources,
                                                             std::vector<std::string>* warnings);

// DEVNAME of `properties` moved beneath `dev_root` (nothing changes for "/dev"), so that the
// builtins open a test's nodes; the strings live in `storage`.
[[nodiscard]] std::vector<PropertyView> PropertiesBeneath(absl::Span<const PropertyView> properties,
                                                          absl::string_view dev_root, std::string* storage);

// Performs what keyboard asks: EVIOCSKEYCODE/EVIOCSABS on its node, then the attribute writes
// through `write` (sysfs devpath, attribute, value). Problems come back as log lines.
using AttributeWriter = absl::FunctionRef<absl::Status(absl::string_view devpath, absl::string_view name,
                                                       absl::string_view value)>;
[[nodiscard]] absl::Status ApplyKeyboard(const udev::KeyboardSetup& setup, AttributeWriter write,
                                         std::vector<std::string>* log);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_BUILTIN_CALLS_H_

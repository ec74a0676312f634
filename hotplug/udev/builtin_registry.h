// Every builtin systemd-udevd 252 has, by name, for a rules host: IMPORT{builtin}="NAME ARGS"
// and RUN{builtin}="NAME ARGS" become RunBuiltin(name, device, argv, resources). Each builtin
// is a function of the device (its sysfs, devpath and properties so far) and its argv; what
// udevd's builtin would do to the system beyond setting properties comes back as data for the
// caller to perform (keyboard: key codes and axis overrides; net_setup_link: the new name, MAC
// and alternative names). `kmod` is listed (for udevd's name lookup) but has no function: the
// modules stage loads modules.
//
//   const BuiltinInfo* b = LookupBuiltinCommand(command);          // udevd's lookup by prefix
//   absl::StatusOr<BuiltinResult> r = b->run(device, argv, resources);
//   if (r.ok()) { append r->properties; act on r->keyboard / r->link; }
//   else        { the import fails (NotFound: no result, as udevd's ENODATA/ENOENT) }
#ifndef HOTRING_HOTPLUG_UDEV_BUILTIN_REGISTRY_H_
#define HOTRING_HOTPLUG_UDEV_BUILTIN_REGISTRY_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/udev/blkid_builtin.h"
#include "hotplug/udev/builtin_device.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/hwdb.h"
#include "hotplug/udev/keyboard.h"
#include "hotplug/udev/net_naming.h"
#include "hotplug/udev/net_setup_link.h"
#include "hotplug/udev/sysfs_links.h"
#include "hotplug/udev/system_builtins.h"

namespace hotring::hotplug::udev {

// What the builtins share, loaded once by the host (udevd's builtin init) and borrowed by each
// call. A builtin whose resource is missing fails (FailedPrecondition), as udevd's hwdb does
// without hwdb.bin.
struct BuiltinResources {
  const Hwdb* hwdb = nullptr;                   // hwdb; net_id's ID_OUI_FROM_DATABASE
  NamingScheme naming = *NamingSchemeFromName("v252");  // net_id (NamingSchemeFor(cmdline))
  const SysfsLinks* links = nullptr;            // net_id: SR-IOV, device-tree aliases
  const LinkConfigs* link_configs = nullptr;    // net_setup_link: the .link files
  LinkSystem* link_system = nullptr;            // net_setup_link: rtnetlink/ethtool facts
  BuiltinSystem* system = nullptr;              // btrfs, uaccess
  BlkidContext blkid;                           // blkid
};

// What a builtin did: its properties, in udevd's order, and for the acting builtins what the
// caller is to do. Owns its data.
struct BuiltinResult {
  Properties properties;
  std::optional<KeyboardSetup> keyboard;  // keyboard
  std::optional<LinkSetup> link;          // net_setup_link (when a .link file applied)
};

using BuiltinFunction = absl::StatusOr<BuiltinResult> (*)(const BuiltinDevice& device,
                                                          absl::Span<const std::string> argv,
                                                          const BuiltinResources& resources);

// One builtin. Static data.
struct BuiltinInfo {
  absl::string_view name;
  absl::string_view help;
  bool run_once;         // udevd runs it at most once per event (blkid)
  BuiltinFunction run;   // nullptr: not run here (kmod)
  // It reads the device itself (a disk's superblocks, a filesystem's ioctl), not sysfs: it may
  // wait for the device's I/O (a CD's spin-up), which a caller on a worker pool says
  // (io::BlockingPool::WaitingElsewhere).
  bool waits_for_device = false;
};

// Every builtin, in udevd 252's order (which its prefix lookup depends on).
[[nodiscard]] absl::Span<const BuiltinInfo> Builtins();
// The builtin called exactly `name`; nullptr when none.
[[nodiscard]] const BuiltinInfo* FindBuiltin(absl::string_view name);
// udev_builtin_lookup: the first builtin whose name starts with the command's first word
// (leading whitespace skipped; "path" finds path_id, an empty word the first builtin).
[[nodiscard]] const BuiltinInfo* LookupBuiltinCommand(absl::string_view command);
// FindBuiltin(name)->run(...); NotFound for an unknown name, Unimplemented for kmod.
[[nodiscard]] absl::StatusOr<BuiltinResult> RunBuiltin(absl::string_view name, const BuiltinDevice& device,
                                                       absl::Span<const std::string> argv,
                                                       const BuiltinResources& resources);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_BUILTIN_REGISTRY_H_

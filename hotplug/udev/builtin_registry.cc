#include "hotplug/udev/builtin_registry.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "hotplug/udev/hwdb_builtin.h"
#include "hotplug/udev/net_id.h"

namespace hotring::hotplug::udev {
namespace {

absl::StatusOr<BuiltinResult> Props(absl::StatusOr<Properties> props) {
  if (!props.ok()) return props.status();
  BuiltinResult r;
  r.properties = std::move(*props);
  return r;
}

absl::StatusOr<BuiltinResult> RunBlkid(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                       const BuiltinResources& res) {
  return Props(BlkidBuiltin(d, argv, res.blkid));
}

absl::StatusOr<BuiltinResult> RunBtrfs(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                       const BuiltinResources& res) {
  if (res.system == nullptr) return absl::FailedPreconditionError("btrfs: no system given");
  return Props(BtrfsBuiltin(argv, *res.system));
}

absl::StatusOr<BuiltinResult> RunHwdb(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                      const BuiltinResources& res) {
  if (res.hwdb == nullptr) return absl::FailedPreconditionError("hwdb: no hwdb.bin loaded");
  return Props(HwdbBuiltin(d, argv, *res.hwdb));
}

absl::StatusOr<BuiltinResult> RunInputId(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                         const BuiltinResources& res) {
  return Props(InputId(d.sysfs, d.devpath));
}

absl::StatusOr<BuiltinResult> RunKeyboard(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                          const BuiltinResources& res) {
  HOTRING_ASSIGN_OR_RETURN(KeyboardSetup setup, KeyboardBuiltin(d));
  BuiltinResult r;
  r.keyboard = std::move(setup);
  return r;
}

absl::StatusOr<BuiltinResult> RunNetId(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                       const BuiltinResources& res) {
  return Props(NetId(d, NetIdContext{.scheme = res.naming, .hwdb = res.hwdb, .links = res.links}));
}

absl::StatusOr<BuiltinResult> RunNetSetupLink(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                              const BuiltinResources& res) {
  HOTRING_ASSIGN_OR_RETURN(
      NetSetupLinkResult link,
      NetSetupLink(d, argv, NetSetupLinkContext{.configs = res.link_configs, .system = res.link_system,
                                                .scheme = res.naming}));
  BuiltinResult r;
  r.properties = std::move(link.properties);
  r.link = std::move(link.setup);
  return r;
}

// udevd fails path_id and usb_id when they find nothing.
absl::StatusOr<BuiltinResult> RunPathId(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                        const BuiltinResources& res) {
  Properties p = PathId(d.sysfs, d.devpath);
  if (p.empty()) return absl::NotFoundError("path_id: no path");
  return Props(std::move(p));
}

absl::StatusOr<BuiltinResult> RunUsbId(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                       const BuiltinResources& res) {
  Properties p = UsbId(d.sysfs, d.devpath);
  if (p.empty()) return absl::NotFoundError("usb_id: not a USB device");
  if (d.Property("ID_BUS").has_value()) {
    // As udevd 252: a device whose bus is known already (a SCSI disk behind a USB bridge) keeps
    // its ID_BUS, ID_MODEL, ID_SERIAL...; only the ID_USB_ ones are set.
    p.erase(std::remove_if(p.begin(), p.end(),
                           [](const auto& kv) { return !absl::StartsWith(kv.first, "ID_USB_"); }),
            p.end());
  }
  return Props(std::move(p));
}

absl::StatusOr<BuiltinResult> RunUaccess(const BuiltinDevice& d, absl::Span<const std::string> argv,
                                         const BuiltinResources& res) {
  if (res.system == nullptr) return BuiltinResult{};
  return Props(UaccessBuiltin(d, *res.system));
}

constexpr BuiltinInfo kBuiltins[] = {
    {"blkid", "Filesystem and partition probing", true, RunBlkid, /*waits_for_device=*/true},
    {"btrfs", "btrfs volume management", false, RunBtrfs, /*waits_for_device=*/true},
    {"hwdb", "Hardware database", false, RunHwdb},
    {"input_id", "Input device properties", false, RunInputId},
    {"keyboard", "Keyboard scan code to key mapping", false, RunKeyboard},
    {"kmod", "Kernel module loader", false, nullptr},
    {"net_id", "Network device properties", false, RunNetId},
    {"net_setup_link", "Configure network link", false, RunNetSetupLink},
    {"path_id", "Compose persistent device path", true, RunPathId},
    {"usb_id", "USB device properties", true, RunUsbId},
    {"uaccess", "Manage device node user ACL", false, RunUaccess},
};

}  // namespace

absl::Span<const BuiltinInfo> Builtins() { return kBuiltins; }

const BuiltinInfo* FindBuiltin(absl::string_view name) {
  for (const BuiltinInfo& b : kBuiltins) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

const BuiltinInfo* LookupBuiltinCommand(absl::string_view command) {
  command = absl::StripLeadingAsciiWhitespace(command);
  size_t n = 0;
  while (n < command.size() && !absl::ascii_isspace(static_cast<unsigned char>(command[n]))) ++n;
  const absl::string_view word = command.substr(0, n);
  // strneq(name, command, n): the name's first n bytes are the word (a name shorter than the
  // word never matches, as its NUL differs).
  for (const BuiltinInfo& b : kBuiltins) {
    if (b.name.size() >= word.size() && b.name.substr(0, word.size()) == word) return &b;
  }
  return nullptr;
}

absl::StatusOr<BuiltinResult> RunBuiltin(absl::string_view name, const BuiltinDevice& device,
                                         absl::Span<const std::string> argv, const BuiltinResources& resources) {
  const BuiltinInfo* b = FindBuiltin(name);
  if (b == nullptr) return absl::NotFoundError(absl::StrCat("no builtin '", name, "'"));
  if (b->run == nullptr) return absl::UnimplementedError(absl::StrCat("builtin '", name, "' is not run here"));
  return b->run(device, argv, resources);
}

}  // namespace hotring::hotplug::udev

#include "testing/udevbuiltins/builtin_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "hotplug/udevrules/format.h"

namespace hotring::testing {

namespace udev = hotplug::udev;

std::vector<std::string> RunBuiltinLikeUdevadm(const udev::SysfsView& sysfs, absl::string_view devpath,
                                               absl::string_view command, absl::string_view dev_root,
                                               const udev::BuiltinResources& resources) {
  std::vector<std::pair<std::string, std::string>> owned;
  owned.emplace_back("DEVPATH", std::string(devpath));
  const std::optional<std::string> uevent = sysfs.Attribute(devpath, "uevent");
  for (absl::string_view line : absl::StrSplit(uevent.value_or(""), '\n', absl::SkipEmpty())) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    std::string value(line.substr(eq + 1));
    if (line.substr(0, eq) == "DEVNAME" && !dev_root.empty()) value = absl::StrCat(dev_root, "/", value);
    owned.emplace_back(std::string(line.substr(0, eq)), std::move(value));
  }
  owned.emplace_back("SUBSYSTEM", udev::SubsystemOf(sysfs, devpath));
  owned.emplace_back("ACTION", "add");
  std::vector<udev::PropertyView> views;
  for (const auto& [k, v] : owned) views.emplace_back(k, v);
  const udev::BuiltinDevice device{.sysfs = sysfs, .devpath = devpath, .properties = views};
  const std::vector<std::string> argv = hotplug::udevrules::SplitCommand(command);
  std::vector<std::string> out;
  const udev::BuiltinInfo* builtin = argv.empty() ? nullptr : udev::LookupBuiltinCommand(argv[0]);
  if (builtin == nullptr) return {"result failed"};
  absl::StatusOr<udev::BuiltinResult> r = udev::RunBuiltin(builtin->name, device, argv, resources);
  if (!r.ok()) {
    out.push_back("result failed");
    return out;
  }
  for (const auto& [k, v] : r->properties) out.push_back(absl::StrCat("property ", k, "=", v));
  if (r->keyboard.has_value()) {
    for (const auto& m : r->keyboard->keycodes) out.push_back(absl::StrCat("keycode ", m.scancode, " ", m.keycode));
    for (const auto& w : r->keyboard->writes) {
      out.push_back(absl::StrCat("write ", w.devpath, " ", w.name, " ", w.value));
    }
  }
  out.push_back("result ok");
  return out;
}

}  // namespace hotring::testing

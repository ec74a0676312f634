// The device enumeration of systemd 252's sd_device_enumerator, as `udevadm trigger` and
// `udevadm info --export-db` use it: which objects of sysfs are listed (devices: bus/*/devices/*
// and class/*/*, or subsystem/*/devices/*; subsystems: module/*, bus/* and bus/*/drivers/*,
// each with the parents the filters let through), the filters, and the order: devices of the
// prioritized subsystems (and their parents) first, each group sorted; md and dm block devices
// after everything else, the rest by path component.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_ENUMERATOR_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_ENUMERATOR_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "hotplug/cli/udevadm/device.h"

namespace hotring::hotplug::udevadm {

// Which devices are listed. Patterns are fnmatch(3) globs.
struct EnumeratorFilter {
  enum class Type { kDevices, kSubsystems, kAll };
  Type type = Type::kDevices;
  std::vector<std::string> subsystem_match, subsystem_nomatch;
  std::vector<std::pair<std::string, std::optional<std::string>>> attr_match, attr_nomatch;
  std::vector<std::pair<std::string, std::string>> property_match;  // KEY=VALUE globs
  std::vector<std::string> sysname_match;
  std::vector<std::string> tag_match;
  std::vector<std::string> parent_match;  // syspaths: the device or those below it
  enum class Initialized { kAll, kCompat, kYes, kNo };
  // kCompat: devices with a node or interface only once initialized (the library default).
  Initialized initialized = Initialized::kAll;
  std::vector<std::string> prioritized_subsystems;
};

// The devices in udevadm's order. An error only when sysfs cannot be read at all.
absl::StatusOr<std::vector<std::unique_ptr<UdevDevice>>> EnumerateDevices(
    const Roots& roots, const EnumeratorFilter& filter);

// The 252 comparison of two devpaths (md/dm last, then by path component).
[[nodiscard]] int DeviceCompare(absl::string_view a, absl::string_view b);

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_ENUMERATOR_H_

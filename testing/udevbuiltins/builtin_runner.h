// Runs hotring's builtins the way `udevadm test-builtin COMMAND /sys/DEVPATH` runs udevd's: the
// device's properties from its uevent file (with DEVPATH, SUBSYSTEM and ACTION=add), the
// command split into argv as udevd splits it, and the answer in the goldens' form ("property
// K=V", "keycode S K", "write DEVPATH ATTR VALUE", "result ok|failed"). Shared by the golden
// test and builtin_tool.
#ifndef HOTRING_TESTING_UDEVBUILTINS_BUILTIN_RUNNER_H_
#define HOTRING_TESTING_UDEVBUILTINS_BUILTIN_RUNNER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::testing {

// The answer lines of one builtin run (without the header lines of a golden block).
std::vector<std::string> RunBuiltinLikeUdevadm(const hotplug::udev::SysfsView& sysfs, absl::string_view devpath,
                                               absl::string_view command, absl::string_view dev_root,
                                               const hotplug::udev::BuiltinResources& resources);

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_UDEVBUILTINS_BUILTIN_RUNNER_H_

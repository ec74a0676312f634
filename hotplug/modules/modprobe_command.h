// `hotring modprobe`, and hotring invoked as `modprobe` (so the kernel's request_module, which
// runs `/sbin/modprobe -q -- NAME`, works in an initramfs without kmod): kmod's options,
// output and exit codes for loading, --dry-run, --resolve-alias and --show-depends.
#ifndef HOTRING_HOTPLUG_MODULES_MODPROBE_COMMAND_H_
#define HOTRING_HOTPLUG_MODULES_MODPROBE_COMMAND_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {

// `program` names the command in messages ("modprobe"). Returns the exit code (0 or 1, as
// kmod; 2 only for a usage error kmod would also reject).
int ModprobeMain(absl::string_view program, const std::vector<std::string>& args);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_MODPROBE_COMMAND_H_

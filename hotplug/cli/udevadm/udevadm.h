// `udevadm` (as argv[0], and `hotring udevadm`): a drop-in for the udevadm of systemd 252
// (Debian 12) with hotring as the device manager: info, trigger, settle, control, monitor,
// test, test-builtin, wait, verify, hwdb. What scripts parse (info -q property, --export-db,
// monitor --property, trigger --verbose) is printed as 252 prints it. docs/udevadm.md.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_UDEVADM_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_UDEVADM_H_

#include <string>
#include <vector>

namespace hotring::hotplug::udevadm {

// The version udevadm --version prints: 252's, so that scripts comparing it (`[ "$(udevadm
// --version)" -ge 240 ]`) take the same branch.
inline constexpr char kUdevVersion[] = "252";

// `udevadm ARGS` (without the program name); returns the exit code.
int UdevadmMain(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_UDEVADM_H_

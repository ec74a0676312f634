// The commands of the hotring binary that live in this package, one function each; the
// registry (registry.h) names them. Each parses its own arguments and returns the process exit
// code (0 ok, 1 failed, 2 bad arguments).
#ifndef HOTRING_HOTPLUG_CLI_COMMANDS_H_
#define HOTRING_HOTPLUG_CLI_COMMANDS_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hotring::hotplug {

int DaemonCommand(const std::vector<std::string>& args);
int SendCommand(const std::vector<std::string>& args);
// `hotring-send` (argv[0]) as the kernel's uevent helper: `send --autostart ARGS`.
int UeventHelperCommand(const std::vector<std::string>& args);
int SettleCommand(const std::vector<std::string>& args);
int ControlCommandMain(const std::vector<std::string>& args);
int MonitorCommand(const std::vector<std::string>& args);
int TriggerCommand(const std::vector<std::string>& args);
// busybox's mdev (hotplug/rules/mdev_applet.h), whose `mdev -d` runs the daemon through the
// one launcher every daemon starts with.
int MdevCommand(const std::vector<std::string>& args);
int ReportCommand(const std::vector<std::string>& args);
// `systemd-udevd` / `udevd` (argv[0]) and `hotring udevd`: a drop-in for systemd-udevd 252.
int UdevdCommand(const std::vector<std::string>& args);
// Probes the kernel's io_uring and says what hotring can use.
int SelfCheckCommand(const std::vector<std::string>& args);

// Asks the daemon on `socket` what is still pending and prints it to `out`, one event a line
// (after a settle timed out). Returns how many events were described.
int PrintPending(absl::string_view socket, std::FILE* out);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLI_COMMANDS_H_

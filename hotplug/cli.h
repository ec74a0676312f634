// The hotplug subcommands of the hotring binary: daemon, send, settle, control, trigger,
// monitor, and the pipeline benchmarks (bench events, bench coldplug, bench startup).
#ifndef HOTRING_HOTPLUG_CLI_H_
#define HOTRING_HOTPLUG_CLI_H_

#include <string>
#include <vector>

namespace hotring::hotplug {

// True if `command` is one of ours (for `bench`, the benchmark's name).
bool IsHotplugCommand(const std::string& command);
bool IsHotplugBench(const std::string& name);

// Runs a subcommand; returns the process exit code. `args` excludes the command itself.
int RunHotplugCommand(const std::string& command, const std::vector<std::string>& args);
int RunHotplugBench(const std::string& name, const std::vector<std::string>& args);

// `hotring-send` (argv[0]) as the kernel's uevent helper: `send --autostart`.
int RunAsUeventHelper(const std::vector<std::string>& args);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLI_H_

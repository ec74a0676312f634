// `hotring record` (this machine's devices into a recording, read-only) and `hotring replay`
// (a recording through a private daemon into a manifest, compared with a golden one).
#ifndef HOTRING_HOTPLUG_REPLAY_REPLAY_COMMAND_H_
#define HOTRING_HOTPLUG_REPLAY_REPLAY_COMMAND_H_

#include <string>
#include <vector>

namespace hotring::hotplug::replay {

// Both return the process exit code: 0 ok, 1 failed (or, for replay with --golden, the manifest
// differs), 2 bad arguments.
int RecordCommand(const std::vector<std::string>& args);
int ReplayCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::replay

#endif  // HOTRING_HOTPLUG_REPLAY_REPLAY_COMMAND_H_

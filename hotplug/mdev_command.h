// `hotring mdev` and the binary as `mdev`: busybox's mdev, its daemon mode included.
#ifndef HOTRING_HOTPLUG_MDEV_COMMAND_H_
#define HOTRING_HOTPLUG_MDEV_COMMAND_H_

#include <string>
#include <vector>

namespace hotring::hotplug {

int MdevCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_MDEV_COMMAND_H_

// `modprobe -c` / `--showconfig` as kmod 30 prints it.
#ifndef HOTRING_HOTPLUG_MODULES_SHOW_CONFIG_H_
#define HOTRING_HOTPLUG_MODULES_SHOW_CONFIG_H_

#include <string>

#include "hotplug/modules/module_index.h"

namespace hotring::hotplug::modules {

// The configuration by kind (blacklist, install, remove, alias, options, softdep: kmod's
// order; within a kind, files in reading order then the kernel command line), kmod's
// end-of-configuration line, then the dumps of modules.alias.bin and modules.symbols.bin.
// Indexes hotring built from text files are not dumped: kmod reads only the .bin files.
[[nodiscard]] std::string FormatShowConfig(const ModuleIndex& index);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_SHOW_CONFIG_H_

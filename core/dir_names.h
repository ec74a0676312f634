// Listing a directory by name: what sysfs walks (/sys/class/block, /sys/bus/*/devices) need.
#ifndef HOTRING_CORE_DIR_NAMES_H_
#define HOTRING_CORE_DIR_NAMES_H_

#include <string>
#include <vector>

namespace hotring {

// The names in directory `path`, sorted, without those that start with '.'; empty when it
// cannot be opened (a sysfs class that does not exist on this kernel is no error).
[[nodiscard]] std::vector<std::string> SortedDirNames(const std::string& path);

}  // namespace hotring

#endif  // HOTRING_CORE_DIR_NAMES_H_

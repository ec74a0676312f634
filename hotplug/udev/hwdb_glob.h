// The hwdb's key patterns matched as sd-hwdb matches them (glibc's fnmatch(pattern, subject, 0)
// in the C locale), in bounded time. The pattern is first read into one element per subject
// character it consumes (a byte, '?', a bracket set) or '*'; matching is then the usual greedy
// walk that returns to the last '*', at most (pattern + 1) * (subject + 1) steps whatever the
// pattern, where glibc's recursion is exponential in the number of '*' (a corrupt or hostile
// hwdb.bin must not stall the daemon). No allocation.
#ifndef HOTRING_HOTPLUG_UDEV_HWDB_GLOB_H_
#define HOTRING_HOTPLUG_UDEV_HWDB_GLOB_H_

#include "absl/strings/string_view.h"

namespace hotring::hotplug::udev {

// True when fnmatch(pattern, subject, 0) == 0 (both read up to their first NUL, as C strings).
[[nodiscard]] bool HwdbGlobMatch(absl::string_view pattern, absl::string_view subject);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_HWDB_GLOB_H_

// Shell glob matching as udev 252 does it: glibc's fnmatch(pattern, subject, 0) in the C locale
// ('*' and '?' also match '/' and a leading '.'; '\' quotes the next character; '[...]' with
// '!' or '^' negation, ranges, [:class:], [.c.] and [=c=]; an unterminated '[' is a literal).
// Unlike glibc's recursive fnmatch, the time is bounded: at most (pattern + 1) * (subject + 1)
// steps, whatever the number of '*'. No allocation.
#ifndef HOTRING_HOTPLUG_UDEVRULES_GLOB_H_
#define HOTRING_HOTPLUG_UDEVRULES_GLOB_H_

#include "absl/strings/string_view.h"

namespace hotring::hotplug::udevrules {

// True when `subject` matches `pattern` as fnmatch(pattern, subject, 0) == 0 would say.
[[nodiscard]] bool GlobMatch(absl::string_view pattern, absl::string_view subject);

// True when `text` holds one of udev's glob characters ('*', '?', '['): systemd's
// string_is_glob, which decides whether a value is compared as a pattern or as a string.
[[nodiscard]] bool HasGlobCharacters(absl::string_view text);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_GLOB_H_

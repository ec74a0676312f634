// A line diff for manifests: what changed between a golden manifest and a replay's, in the
// unified format (`---`/`+++` names, `@@` hunks, three lines of context), readable in a test
// log. Pure.
#ifndef HOTRING_HOTPLUG_REPLAY_DIFF_H_
#define HOTRING_HOTPLUG_REPLAY_DIFF_H_

#include <string>

#include "absl/strings/string_view.h"

namespace hotring::hotplug::replay {

// Empty when the texts are equal. Minimal (longest common subsequence) while the differing
// middle part is at most 4,000 lines on each side; beyond that the whole middle part is shown
// as removed and added (still a correct diff, not a minimal one), so time and memory stay
// bounded.
[[nodiscard]] std::string UnifiedDiff(absl::string_view old_name, absl::string_view old_text,
                                      absl::string_view new_name, absl::string_view new_text);

}  // namespace hotring::hotplug::replay

#endif  // HOTRING_HOTPLUG_REPLAY_DIFF_H_

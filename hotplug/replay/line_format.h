// The line syntax shared by recordings and manifests: a line is blank-separated fields, each
// either bare (printable ASCII without blank, '"', '\' or '#') or a double-quoted string with
// the escapes \\ \" \n \t \r and \xHH, so any byte string round-trips and every fact stays on
// one line (text diffs show one fact per changed line).
#ifndef HOTRING_HOTPLUG_REPLAY_LINE_FORMAT_H_
#define HOTRING_HOTPLUG_REPLAY_LINE_FORMAT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::replay {

// Longest line either format accepts (a sysfs attribute is at most a 4 KiB page; escaping can
// quadruple it).
inline constexpr size_t kMaxLineBytes = 64 * 1024;

// `value` as one field: bare when it can be, quoted otherwise (also when empty).
[[nodiscard]] std::string QuoteField(absl::string_view value);

// The fields of `line`, unquoted. InvalidArgument ("what is wrong", no line number) for an
// unterminated quote, a bad escape, a quote inside a bare field, or more than `max_fields`.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> SplitFields(absl::string_view line,
                                                                    size_t max_fields);

// Splits `text` into lines (the last may lack its newline); a '\r' before '\n' is kept (the
// line then fails to parse as a field list only if it matters). Borrowed views into `text`.
[[nodiscard]] std::vector<absl::string_view> SplitLines(absl::string_view text);

}  // namespace hotring::hotplug::replay

#endif  // HOTRING_HOTPLUG_REPLAY_LINE_FORMAT_H_

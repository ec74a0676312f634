// Reading a timeline (docs/timeline.md) as the daemon writes it (`--record-timeline FILE`) or
// hands it out (`timeline` control request) into one span per event, plus the gaps given up and
// the module loads. Pure: text in, data out.
#ifndef HOTRING_HOTPLUG_REPORT_TIMELINE_PARSE_H_
#define HOTRING_HOTPLUG_REPORT_TIMELINE_PARSE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::report {

// One event from reception to the end of handling; times in microseconds since the daemon
// started. A time is missing when the timeline ends before it (still pending), or begins after
// it (the daemon kept only the last lines). Owns its strings.
struct EventSpan {
  uint64_t id = 0;  // the daemon's release number (0: never released)
  std::optional<uint64_t> seqnum;
  std::string action;
  std::string subsystem;
  std::string devpath;
  std::optional<int64_t> received_us;
  std::optional<int64_t> released_us;
  std::optional<int64_t> started_us;
  std::optional<int64_t> handled_us;
  std::string result;  // handled, failed, timed_out; empty while unfinished
};

// SEQNUMs first..last given up at `at_us`; why: timeout, overflow or stopping.
struct GapRecord {
  int64_t at_us = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  std::string why;
};

// One step of handling (a module load) that ended at `end_us` after `took_us`, while handling
// the event with `seqnum`.
struct ModuleLoad {
  int64_t end_us = 0;
  int64_t took_us = 0;
  std::optional<uint64_t> seqnum;
  std::string module;
  bool ok = true;
};

// A parsed timeline. Owns everything.
struct Timeline {
  std::vector<EventSpan> events;  // in order of first appearance
  std::vector<GapRecord> gaps;
  std::vector<ModuleLoad> modules;
  size_t lines = 0;           // records read (comments and blank lines not counted)
  size_t bad_lines = 0;       // malformed records, skipped
  size_t unmatched = 0;       // records about an event whose earlier lines are missing
  std::vector<std::string> errors;  // the first few malformed records, with line numbers
};

// Parses a whole timeline. Malformed lines are skipped and counted (the first few described in
// `errors`); fails only when the text is not a timeline at all (a header of another format or
// version, or not one valid record).
[[nodiscard]] absl::StatusOr<Timeline> ParseTimeline(absl::string_view text);

}  // namespace hotring::hotplug::report

#endif  // HOTRING_HOTPLUG_REPORT_TIMELINE_PARSE_H_

// `hotring report`: where the time went, from a parsed timeline. Pure: data in, text out.
#ifndef HOTRING_HOTPLUG_REPORT_REPORT_H_
#define HOTRING_HOTPLUG_REPORT_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "hotplug/report/timeline_parse.h"

namespace hotring::hotplug::report {

// One event's wait for an earlier event on the same device, a parent or a child.
struct Wait {
  const EventSpan* event = nullptr;
  const EventSpan* blocker = nullptr;  // null: it waited for a free handler slot
  int64_t wait_us = 0;                 // released -> started
};

// The figures the report prints. Borrows the timeline's spans.
struct Summary {
  size_t events = 0;
  size_t handled = 0;
  size_t failed = 0;
  size_t timed_out = 0;
  size_t unfinished = 0;
  int64_t first_us = 0;  // first reception
  int64_t last_us = 0;   // last end of handling
  std::vector<const EventSpan*> slowest_events;    // received -> handled, longest first
  std::vector<const EventSpan*> slowest_handlers;  // started -> handled
  // Only waits of 1 ms or more (shorter ones are dispatch, not waiting).
  std::vector<const EventSpan*> longest_held;      // received -> released (behind a gap)
  std::vector<Wait> longest_waits;                 // released -> started
  std::vector<const ModuleLoad*> slowest_modules;
  std::vector<const GapRecord*> timeout_gaps;      // gaps given up by the reorder timeout
};

// `top`: entries per list.
[[nodiscard]] Summary Summarize(const Timeline& timeline, size_t top);

// The event `span` most plausibly waited for: among earlier events on the same DEVPATH, a parent
// or a child, the one whose handling ended last at or before `span` started.
[[nodiscard]] const EventSpan* FindBlocker(const Timeline& timeline, const EventSpan& span);

// The report as text: a summary line, then one table per list.
[[nodiscard]] std::string FormatReport(const Timeline& timeline, const Summary& summary);

}  // namespace hotring::hotplug::report

#endif  // HOTRING_HOTPLUG_REPORT_REPORT_H_

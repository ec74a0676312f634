// TimelineRecorder: one compact text line per event transition (received, released, started,
// handled; gaps given up; module loads when a stage reports them), for `hotring report`. Keeps
// the last `keep` lines in memory for the `timeline` control request and, with
// `--record-timeline FILE`, appends every line to FILE. The format is docs/timeline.md; the
// parser is hotplug/report/.
#ifndef HOTRING_HOTPLUG_TIMELINE_H_
#define HOTRING_HOTPLUG_TIMELINE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/clock.h"
#include "core/unique_fd.h"
#include "hotplug/event.h"

namespace hotring::hotplug {

// The first line of every timeline (file or reply).
inline constexpr absl::string_view kTimelineHeader = "# hotring timeline 1";

// Owns the kept lines, the file and its write buffer.
class TimelineRecorder {
 public:
  // `origin`: time 0 of the timeline (the daemon's start). `keep`: lines kept in memory.
  TimelineRecorder(MonoTime origin, size_t keep) : origin_(origin), keep_(keep) {}
  TimelineRecorder(const TimelineRecorder&) = delete;
  TimelineRecorder& operator=(const TimelineRecorder&) = delete;
  ~TimelineRecorder() { (void)Flush(); }

  // Appends to `path` from now on (created 0644 if missing; truncated: one run per file).
  absl::Status OpenFile(const std::string& path);
  // False when neither memory nor a file wants lines: callers skip the clock read.
  [[nodiscard]] bool enabled() const { return keep_ > 0 || file_.valid(); }

  // R <t_us> <SEQNUM|-> <ACTION> <SUBSYSTEM|-> <DEVPATH>. Formatted apart from AddLine so the
  // daemon can format it before the event moves and add it once it knows it is no duplicate.
  [[nodiscard]] std::string ReceivedLine(MonoTime t, const Event& event) const;
  void AddLine(std::string line);
  // L <t_us> <id> <SEQNUM|-> <DEVPATH>       (id: the scheduler's, 1, 2, 3, ... in release order)
  void Released(MonoTime t, uint64_t id, const Event& event);
  // S <t_us> <id>
  void Started(MonoTime t, uint64_t id);
  // H <t_us> <id> <handled|failed|timed_out>
  void Handled(MonoTime t, uint64_t id, absl::string_view result);
  // G <t_us> <first> <last> <why>            (SEQNUMs given up; why: timeout|overflow|stopping)
  void Gap(MonoTime t, uint64_t first, uint64_t last, absl::string_view why);
  // M <t_us> <SEQNUM|-> <duration_us> <what> <ok|error>   (a step, e.g. a module load, that
  // ended at t while handling the event with that SEQNUM; spaces in `what` become '_')
  void Step(MonoTime t, const Event& event, absl::Duration took, absl::string_view what, bool ok);

  // Writes buffered lines to the file (the daemon calls it when idle and at exit).
  absl::Status Flush();

  // Kept lines from number `from` on (lines are numbered from 0 since the start; those no
  // longer kept are skipped), as many as fit in `max_bytes`. Returns the number of the first
  // line not returned.
  uint64_t Lines(uint64_t from, size_t max_bytes, std::vector<std::string>& out) const;
  [[nodiscard]] uint64_t total() const { return total_; }
  [[nodiscard]] uint64_t first_kept() const { return total_ - kept_.size(); }
  [[nodiscard]] uint64_t write_errors() const { return write_errors_; }

 private:
  [[nodiscard]] int64_t Micros(MonoTime t) const;

  MonoTime origin_;
  size_t keep_;
  uint64_t total_ = 0;
  std::deque<std::string> kept_;
  UniqueFd file_;
  std::string buffer_;  // lines not yet written to the file
  uint64_t write_errors_ = 0;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_TIMELINE_H_

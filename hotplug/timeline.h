// TimelineRecorder: one compact text line per event transition (received, released, started,
// handled; gaps given up; steps such as module loads), for `hotring report`. Keeps the last
// `keep` records in memory for the `timeline` control request and, with `--record-timeline
// FILE`, appends every line to FILE. The format is docs/timeline.md; the parser is
// hotplug/report/. Kept records are packed bytes formatted only when asked for: an in-order
// event costs its ACTION SUBSYSTEM DEVPATH and about twenty bytes for its three records (as
// structs with a string each they were 64 bytes a record and a heap block for the text: a
// full memory of 4,096 records held 340 KiB of an idle daemon's heap).
#ifndef HOTRING_HOTPLUG_TIMELINE_H_
#define HOTRING_HOTPLUG_TIMELINE_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/unique_fd.h"
#include "hotplug/event.h"

namespace hotring::hotplug {

// The first line of every timeline (file or reply).
inline constexpr absl::string_view kTimelineHeader = "# hotring timeline 1";

// One transition, as kept in memory. Owns its text.
struct TimelineRecord {
  enum class Kind : uint8_t {
    kReceived,             // R: a = SEQNUM+1 (0: none), text = "ACTION SUBSYSTEM DEVPATH"
    kReceivedAndReleased,  // R then L at the same time: a = SEQNUM+1, b = id, text as for R
    kReleased,             // L: a = SEQNUM+1, b = id, text = DEVPATH
    kStarted,              // S: b = id
    kHandled,              // H: b = id, text = result
    kGap,                  // G: a = first, b = last, text = why
    kStep,                 // M: a = SEQNUM+1, b = took_us, text = "WHAT ok|error"
  };
  Kind kind = Kind::kStarted;
  int64_t t_us = 0;
  uint64_t a = 0;
  uint64_t b = 0;
  std::string text;
};

// Appends the record's line(s) to `out`, each ending in '\n' (two for kReceivedAndReleased).
void AppendTimelineLines(const TimelineRecord& record, std::string& out);

// Owns the kept records, the file and its write buffer.
class TimelineRecorder {
 public:
  // `origin`: time 0 of the timeline (the daemon's start). `keep`: records kept in memory.
  TimelineRecorder(MonoTime origin, size_t keep) : origin_(origin), keep_(keep) {}
  TimelineRecorder(const TimelineRecorder&) = delete;
  TimelineRecorder& operator=(const TimelineRecorder&) = delete;
  ~TimelineRecorder() { (void)Flush(); }

  // Writes to `path` from now on (created 0644 if missing, truncated: one run per file).
  absl::Status OpenFile(const std::string& path);
  // False when neither memory nor a file wants records: callers skip the work.
  [[nodiscard]] bool enabled() const { return keep_ > 0 || file_.valid(); }

  // R: the record is built before the event may move into the reorderer and added once the
  // daemon knows it is no duplicate.
  [[nodiscard]] TimelineRecord ReceivedRecord(MonoTime t, const Event& event) const;
  void Add(TimelineRecord record);
  // R and L at once: an event released as it arrived (in order, or without SEQNUM).
  void ReceivedAndReleased(MonoTime t, uint64_t id, const Event& event);
  void Released(MonoTime t, uint64_t id, const Event& event);
  void Started(MonoTime t, uint64_t id);
  void Handled(MonoTime t, uint64_t id, absl::string_view result);
  void Gap(MonoTime t, uint64_t first, uint64_t last, absl::string_view why);
  void Step(MonoTime t, const Event& event, absl::Duration took, absl::string_view what, bool ok);

  // Writes buffered lines to the file (the daemon calls it when idle and at exit).
  absl::Status Flush();

  // Lines of the kept records from record number `from` on (records are numbered from 0 since
  // the start; those no longer kept are skipped): at most `max_lines` lines of at most
  // `max_line` bytes each (longer ones are cut), as many as fit in `max_bytes` counting
  // `overhead` bytes per line. At least one record when any is left. Returns the number of the
  // first record not returned.
  uint64_t Lines(uint64_t from, size_t max_bytes, std::vector<std::string>& out,
                 size_t max_lines = SIZE_MAX, size_t max_line = SIZE_MAX,
                 size_t overhead = 1) const;
  [[nodiscard]] uint64_t total() const { return total_; }
  [[nodiscard]] uint64_t first_kept() const { return total_ - kept_count_; }
  // Bytes the kept records take.
  [[nodiscard]] size_t kept_bytes() const { return kept_.size(); }
  [[nodiscard]] uint64_t write_errors() const { return write_errors_; }

 private:
  [[nodiscard]] int64_t Micros(MonoTime t) const;
  // Packs `record` after the kept ones, the oldest going when `keep_` are kept.
  void Keep(const TimelineRecord& record);

  MonoTime origin_;
  size_t keep_;
  uint64_t total_ = 0;
  // The kept records back to back, oldest first: the kind's byte, then t_us, a, b and the
  // text's length as LEB128 numbers, then the text. A deque frees its blocks as the oldest go.
  std::deque<char> kept_;
  size_t kept_count_ = 0;
  UniqueFd file_;
  std::string buffer_;  // lines not yet written to the file
  uint64_t write_errors_ = 0;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_TIMELINE_H_

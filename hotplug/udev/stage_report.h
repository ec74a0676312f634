// What the two udev stages (the rules engine, hotplug/udevrules, and the built-in fallback,
// hotplug/udevcompat) do alike around one event: on a worker, the job's report of it (database
// entry and links written or removed, failures with their log lines, the libudev
// announcement) and the database writes that fill it; on the reactor, the stage's counters,
// its log lines and the announcement on netlink group 2. One place, so that both stages count,
// log and announce the same way (`hotring control status` shows both as STAGE_NAME).
#ifndef HOTRING_HOTPLUG_UDEV_STAGE_REPORT_H_
#define HOTRING_HOTPLUG_UDEV_STAGE_REPORT_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"
#include "hotplug/event.h"
#include "hotplug/udev/database.h"

namespace hotring::hotplug::udev {

// A worker job's report of one event, the part both stages share. Owns its strings.
struct EventReport {
  std::string datagram;          // the libudev announcement; empty: nothing to send
  std::string not_announced;     // why not
  std::vector<std::string> log;  // warnings for the log, one line each
  uint64_t db_written = 0;
  uint64_t db_removed = 0;
  uint64_t links_made = 0;
  uint64_t links_removed = 0;
  uint64_t links_refused = 0;  // a link that would leave the dev root, or a conflicting inode
  uint64_t failures = 0;       // errors other than refused links

  // A failure, with its line for the log.
  void Fail(std::string line);
  // A failure (its message for the log) when `status` is not OK. Returns status.ok().
  bool Check(const absl::Status& status);
  // A link that could not be made: refused (FailedPrecondition: outside the dev root, or another
  // inode in its place) or a failure; its message for the log either way.
  void LinkFailed(const absl::Status& status);
};

// Writes data/<id>: counted as written, or as a failure.
void WriteEntry(const DatabaseDir& db, absl::string_view id, absl::string_view content, bool persist,
                EventReport& report);
// Removes data/<id>: counted as removed when the device had an entry (`had_entry`), or as a
// failure.
void RemoveEntry(const DatabaseDir& db, absl::string_view id, bool had_entry, EventReport& report);

// The counters both stages keep.
struct StageCounters {
  uint64_t events = 0;
  uint64_t db_written = 0;
  uint64_t db_removed = 0;
  uint64_t links_made = 0;
  uint64_t links_removed = 0;
  uint64_t links_refused = 0;
  uint64_t monitor_sent = 0;
  uint64_t monitor_skipped = 0;
  uint64_t errors = 0;
};

// A stage's reactor side of its events: owns the sender socket on group 2 (none when the
// stage does not announce) and the counters; logs as "STAGE: EVENT: what".
class StageReporter {
 public:
  // `stage` names the log lines and the counters ("udevrules"); `monitor`: announce on group 2.
  static absl::StatusOr<StageReporter> Open(std::string stage, bool monitor);

  // An event came in.
  void Received() { ++counters_.events; }
  // The event's job did not run (the pool's error): an error, logged.
  void JobFailed(const Event& event, const absl::Status& status);
  // Adds the report's counts and logs its lines as warnings.
  void Took(const Event& event, const EventReport& report);
  // Sends the report's datagram on group 2 (multicast never blocks); or, when the stage
  // announces, counts and logs (at info) why there was none.
  void Announce(const Event& event, const EventReport& report);

  [[nodiscard]] StageCounters& counters() { return counters_; }
  [[nodiscard]] const StageCounters& counters() const { return counters_; }
  // Appends each (name, value) of `named`, in its order, as ("STAGE_name", value).
  void AppendCounters(std::initializer_list<std::pair<const char*, uint64_t>> named,
                      std::vector<std::pair<std::string, uint64_t>>& out) const;

 private:
  StageReporter(std::string stage, bool monitor, UniqueFd sender)
      : stage_(std::move(stage)), monitor_(monitor), sender_(std::move(sender)) {}

  std::string stage_;
  bool monitor_;
  UniqueFd sender_;
  StageCounters counters_;
};

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_STAGE_REPORT_H_

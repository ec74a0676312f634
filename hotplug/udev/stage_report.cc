#include "hotplug/udev/stage_report.h"

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/udev/monitor.h"
#include "io/netlink.h"

namespace hotring::hotplug::udev {

void EventReport::Fail(std::string line) {
  ++failures;
  log.push_back(std::move(line));
}

bool EventReport::Check(const absl::Status& status) {
  if (!status.ok()) Fail(std::string(status.message()));
  return status.ok();
}

void EventReport::LinkFailed(const absl::Status& status) {
  if (absl::IsFailedPrecondition(status)) {
    ++links_refused;
  } else {
    ++failures;
  }
  log.push_back(std::string(status.message()));
}

void WriteEntry(const DatabaseDir& db, absl::string_view id, absl::string_view content, bool persist,
                EventReport& report) {
  if (report.Check(db.Write(id, content, persist))) ++report.db_written;
}

void RemoveEntry(const DatabaseDir& db, absl::string_view id, bool had_entry, EventReport& report) {
  if (report.Check(db.Remove(id)) && had_entry) ++report.db_removed;
}

absl::StatusOr<StageReporter> StageReporter::Open(std::string stage, bool monitor) {
  UniqueFd sender;
  if (monitor) {
    HOTRING_ASSIGN_OR_RETURN(sender, io::OpenUeventSender());
  }
  return StageReporter(std::move(stage), monitor, std::move(sender));
}

void StageReporter::JobFailed(const Event& event, const absl::Status& status) {
  ++counters_.errors;
  LogWarning("%s: %s: %s", stage_, EventLabel(event), status.ToString());
}

void StageReporter::Took(const Event& event, const EventReport& report) {
  counters_.db_written += report.db_written;
  counters_.db_removed += report.db_removed;
  counters_.links_made += report.links_made;
  counters_.links_removed += report.links_removed;
  counters_.links_refused += report.links_refused;
  counters_.errors += report.failures;
  for (const std::string& line : report.log) LogWarning("%s: %s: %s", stage_, EventLabel(event), line);
}

void StageReporter::Announce(const Event& event, const EventReport& report) {
  if (!report.datagram.empty() && sender_.valid()) {
    // A listener with a full buffer loses this message (and sees ENOBUFS); the stage goes on.
    if (absl::Status sent = io::SendToGroup(sender_.get(), kUdevMonitorGroup, report.datagram); sent.ok()) {
      ++counters_.monitor_sent;
    } else {
      ++counters_.errors;
      LogWarning("%s: %s: monitor: %s", stage_, EventLabel(event), sent.ToString());
    }
  } else if (monitor_) {
    ++counters_.monitor_skipped;
    LogInfo("%s: %s: not announced: %s", stage_, EventLabel(event), report.not_announced);
  }
}

void StageReporter::AppendCounters(std::initializer_list<std::pair<const char*, uint64_t>> named,
                                   std::vector<std::pair<std::string, uint64_t>>& out) const {
  for (const auto& [name, value] : named) out.emplace_back(absl::StrCat(stage_, "_", name), value);
}

}  // namespace hotring::hotplug::udev

#include "hotplug/daemon/burst_log.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/log.h"

namespace hotring::hotplug {

void BurstLog::Start(MonoTime now, const BurstCounters& counters) {
  start_ = now;
  received_base_ = counters.received - 1;
  modules_base_ = counters.modules_loaded.value_or(0);
  failed_base_ = counters.failed;
}

void BurstLog::Settled(MonoTime now, const BurstCounters& counters) {
  if (!start_.has_value()) return;
  const absl::Duration took = Since(*start_, now);
  std::string line = absl::StrCat(coldplug_reported_ ? "settled" : "coldplug", ": ",
                                  counters.received - received_base_, " events");
  if (counters.modules_loaded.has_value()) {
    absl::StrAppend(&line, ", ", *counters.modules_loaded - modules_base_, " modules");
  }
  absl::StrAppend(&line, " in ", absl::ToInt64Milliseconds(took), " ms");
  const uint64_t failed = counters.failed - failed_base_;
  if (failed > 0) absl::StrAppend(&line, "; ", failed, " failed or timed out");
  std::vector<std::string> drops;
  if (counters.dropped != nullptr) {
    for (const auto& [reason, count] : *counters.dropped) {
      if (count > 0 && reason != "duplicate") drops.push_back(absl::StrCat(reason, "=", count));
    }
  }
  std::sort(drops.begin(), drops.end());
  if (!drops.empty()) absl::StrAppend(&line, "; dropped ", absl::StrJoin(drops, " "));
  if (counters.probe_errors > 0) absl::StrAppend(&line, "; probe errors ", counters.probe_errors);
  if (coldplug_reported_) {
    LogInfo("%s", line);
  } else {
    LogNotice("%s", line);
  }
  coldplug_reported_ = true;
  start_.reset();
}

void BurstLog::Failure(const std::string& line) {
  constexpr uint64_t kLogged = 3;
  ++failure_lines_;
  if (failure_lines_ <= kLogged) {
    LogWarning("%s%s", line,
               failure_lines_ == kLogged ? " (further failures: counted, summed up when settled)"
                                         : "");
  } else {
    LogInfo("%s", line);
  }
}

}  // namespace hotring::hotplug

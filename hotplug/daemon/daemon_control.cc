// The Daemon's side of what its control sockets and the stages ask of the event flow
// (EventFlow, StepRecorder): stopping, reloading, udevd's knobs (exec queue, children_max,
// global properties), the status counters and the pending report.
#include "hotplug/daemon/daemon.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "hotplug/daemon/pending.h"

namespace hotring::hotplug {

void Daemon::RequestStop(absl::string_view why, StopMode mode) {
  if (stopping_) return;
  LogNotice("stopping (%s): %d held, %d queued, %d running%s", why, reorderer_.held(),
            scheduler_.queued(), scheduler_.running(),
            mode == StopMode::kFinishRunning ? "; only the running ones finish" : "");
  stopping_ = true;
  switch (mode) {
    case StopMode::kDrain:
      // Finishing what was accepted means running it, also when the queue was stopped.
      if (exec_stopped_) LogNotice("exec queue started again to finish what was accepted");
      exec_stopped_ = false;
      break;
    case StopMode::kFinishRunning:
      discard_queued_ = true;
      break;
  }
  stop_.NotifyAll();
  Pump();  // a stopped queue's events are discarded now
}

absl::Status Daemon::Reload() { return handler_->Reload(); }

void Daemon::SetExecQueueStopped(bool stopped) {
  if (stopped == exec_stopped_) return;
  if (stopped && stopping_) return;  // a draining stop runs the queue to its end
  exec_stopped_ = stopped;
  LogInfo("exec queue %s: %d queued", stopped ? "stopped" : "started", scheduler_.queued());
  if (!stopped) Pump();
}

void Daemon::SetChildrenMax(size_t children_max) {
  LogInfo("children_max %d (was %d)", children_max, scheduler_.children_max());
  scheduler_.set_children_max(children_max);
  Pump();
}

absl::Status Daemon::SetGlobalProperty(absl::string_view key,
                                       std::optional<absl::string_view> value) {
  // udevd's own bound is its memory; this one keeps a client from growing the daemon.
  constexpr size_t kMaxGlobalProperties = 256;
  auto it = std::find_if(global_properties_.begin(), global_properties_.end(),
                         [&](const auto& entry) { return entry.first == key; });
  if (!value.has_value()) {
    if (it == global_properties_.end()) return absl::OkStatus();
    global_properties_.erase(it);
    LogInfo("global property %s unset", key);
  } else if (it != global_properties_.end()) {
    it->second = std::string(*value);
    LogInfo("global property %s=%s", key, *value);
  } else if (global_properties_.size() >= kMaxGlobalProperties) {
    return absl::ResourceExhaustedError(
        absl::StrCat("at most ", kMaxGlobalProperties, " global properties"));
  } else {
    global_properties_.emplace_back(std::string(key), std::string(*value));
    LogInfo("global property %s=%s", key, *value);
  }
  auto snapshot = std::make_shared<GlobalProperties>();
  snapshot->entries = global_properties_;
  handler_->SetGlobalProperties(std::move(snapshot));
  return absl::OkStatus();
}

void Daemon::Step(const Event& event, absl::string_view what, MonoTime started,
                  absl::Duration took, bool ok) {
  // The record's time is the step's end (the report draws it back from there).
  timeline_.Step(started + took, event, took, what, ok);
}

void Daemon::LetDevicesBelowStart(const Event& event) {
  // The handler holds a reference to its record's event: find the record by that address
  // (a few hundred live events at most, and once per event that loads a driver).
  for (const auto& [id, record] : events_) {
    if (&record.event != &event) continue;
    if (const absl::Status released = scheduler_.ReleaseDescendants(id); !released.ok()) {
      LogError("scheduler: %s", released.ToString());
      return;
    }
    Pump();
    return;
  }
}

void Daemon::AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const {
  auto add = [&](absl::string_view key, uint64_t value) {
    fields.emplace_back(std::string(key), absl::StrCat(value));
  };
  add("received", counters_.received);
  add("handled", counters_.handled);
  add("failed", counters_.failed);
  add("timed_out", counters_.timed_out);
  add("killed", counters_.killed);
  add("held", reorderer_.held());
  add("queued", scheduler_.queued());
  add("running", scheduler_.running());
  add("reorder_timeouts", counters_.reorder_timeouts);
  add("missing_seqnums", counters_.missing_seqnums);
  add("discarded", counters_.discarded);
  add("exec_queue_stopped", exec_stopped_ ? 1 : 0);
  add("global_properties", global_properties_.size());
  if (netlink_ != nullptr) netlink_->AppendStatus(fields);
  if (udev_control_ != nullptr) udev_control_->AppendStatus(fields);
  add("children_max", scheduler_.children_max());
  add("ring_cq_overflows", reactor_->cq_overflows());
  add("ring_cq_lost", reactor_->cq_lost());
  // Jobs of the blocking pools handed back to the reactor, and the wake-ups they took.
  add("ring_remote_taken", reactor_->remote_taken());
  add("ring_remote_wakes", reactor_->remote_wakes());
  add("uptime_ms", absl::ToInt64Milliseconds(Since(started_at_, MonoNow())));
  std::vector<std::pair<std::string, uint64_t>> stage_counters;
  handler_->AppendCounters(stage_counters);
  for (const auto& [key, value] : stage_counters) add(key, value);
  std::vector<std::pair<std::string, uint64_t>> dropped(counters_.dropped.begin(),
                                                        counters_.dropped.end());
  std::sort(dropped.begin(), dropped.end());
  for (const auto& [reason, count] : dropped) add(absl::StrCat("dropped_", reason), count);
}

ControlReply Daemon::PendingReply(uint32_t cookie) const {
  std::vector<uint64_t> ids;
  ids.reserve(events_.size());
  for (const auto& [id, record] : events_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<LiveEvent> live;
  live.reserve(ids.size());
  for (const uint64_t id : ids) {
    const EventRecord& record = events_.find(id)->second;
    live.push_back(LiveEvent{&record.event, record.released_at, record.started_at});
  }
  return PendingReport(
      cookie, live, reorderer_,
      PendingState{.queued = scheduler_.queued(),
                   .running = scheduler_.running(),
                   .children_max = scheduler_.children_max(),
                   .reorder_timeout = options_.reorder_timeout},
      [this](const Event& event) { return handler_->Describe(event); }, MonoNow());
}

BurstCounters Daemon::Burst() const {
  BurstCounters burst;
  burst.received = counters_.received;
  burst.failed = counters_.failed + counters_.timed_out;
  std::vector<std::pair<std::string, uint64_t>> stage_counters;
  handler_->AppendCounters(stage_counters);
  for (const auto& [key, value] : stage_counters) {
    if (key == "modules_loaded") burst.modules_loaded = value;
  }
  burst.probe_errors = settling_->probe_errors();
  burst.dropped = &counters_.dropped;
  return burst;
}

void Daemon::BurstSettled() { burst_log_.Settled(MonoNow(), Burst()); }

}  // namespace hotring::hotplug

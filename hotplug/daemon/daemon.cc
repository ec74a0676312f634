#include "hotplug/daemon/daemon.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/event_parser.h"
#include "io/netlink.h"
#include "io/ops.h"

namespace hotring::hotplug {
namespace {

constexpr size_t kMaxRememberedCookies = 4096;

size_t DefaultChildrenMax() {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  return 8 + 2 * static_cast<size_t>(cpus);
}

std::optional<uint64_t> ReadSeqnumFile(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  uint64_t value;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) return std::nullopt;
  return value;
}

EventResult ResultOf(HandlerOutcome outcome) {
  switch (outcome) {
    case HandlerOutcome::kHandled:
      return EventResult::kHandled;
    case HandlerOutcome::kFailed:
      return EventResult::kFailed;
    case HandlerOutcome::kTimedOut:
      return EventResult::kTimedOut;
  }
  return EventResult::kFailed;
}

// "5-7, 9" for the log line naming SEQNUMs given up on.
std::string FormatSeqnums(const std::vector<SeqnumRange>& ranges) {
  std::vector<std::string> parts;
  for (const SeqnumRange& r : ranges) {
    if (parts.size() == 16) {
      parts.push_back("...");
      break;
    }
    parts.push_back(r.first == r.last ? absl::StrCat(r.first)
                                      : absl::StrCat(r.first, "-", r.last));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

Daemon::Daemon(DaemonOptions options, std::unique_ptr<Handler> handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      null_handler_(dynamic_cast<const NullHandler*>(handler_.get()) != nullptr),
      reorderer_(ReordererOptions{.timeout = options_.reorder_timeout,
                                  .expect_seqnum = options_.expect_seqnum}),
      scheduler_(options_.children_max > 0 ? options_.children_max : DefaultChildrenMax()),
      timeline_(MonoNow(), options_.timeline_keep) {}

Daemon::~Daemon() {
  // Tasks go first (members declared last), then the sockets; the socket file goes with the
  // control server.
  workers_.CancelAll();
  services_.CancelAll();
  control_.reset();
  udev_control_.reset();
  netlink_.reset();
  // The handler's own tasks (module loads) await on the reactor: they go before it does.
  handler_.reset();
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options,
                                                       std::unique_ptr<Handler> handler) {
  if (options.netlink && !options.expect_seqnum.has_value()) {
    // Kernel events are numbered by the kernel: continue from where it is.
    const std::optional<uint64_t> last = ReadSeqnumFile(options.seqnum_file);
    if (last.has_value()) options.expect_seqnum = *last + 1;
  }
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(options), std::move(handler)));
  HOTRING_RETURN_IF_ERROR(daemon->Init());
  return daemon;
}

absl::Status Daemon::Init() {
  ::signal(SIGPIPE, SIG_IGN);
  io::Reactor::Options reactor_options;
  if (options_.ring_entries > 0) {
    reactor_options.sq_entries = options_.ring_entries;
    reactor_options.cq_entries = 2 * options_.ring_entries;
  }
  HOTRING_ASSIGN_OR_RETURN(reactor_, io::Reactor::Create(reactor_options));
  HOTRING_ASSIGN_OR_RETURN(io::SignalFd signals, io::SignalFd::Create({SIGTERM, SIGINT, SIGHUP}));
  signals_.emplace(std::move(signals));
  settling_.emplace(Settling::Options{.handled_devices_max = options_.handled_devices_max,
                                      .probe_dev_root = options_.probe_dev_root,
                                      .sysfs_root = options_.sysfs_root},
                    *reactor_, static_cast<EventFlow&>(*this), services_);
  // The control socket first: its bind is the lock against a second daemon.
  HOTRING_ASSIGN_OR_RETURN(control_, ControlServer::Bind(*reactor_, options_.socket, *this,
                                                         *settling_, timeline_));
  if (options_.netlink) {
    HOTRING_ASSIGN_OR_RETURN(
        netlink_, NetlinkSource::Open(*reactor_,
                                      NetlinkSource::Options{
                                          .receive_buffer = options_.netlink_rcvbuf,
                                          .inherited = std::move(options_.netlink_fd),
                                          .trust_userspace = options_.netlink_trust_userspace,
                                          .sysfs_root = options_.sysfs_root},
                                      *this, services_));
    settling_->SetNetlinkFd(netlink_->fd());
  }
  if (!options_.udev_queue.empty()) {
    const size_t slash = options_.udev_queue.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string dir = options_.udev_queue.substr(0, slash);
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus(absl::StrCat("mkdir(", dir, ")"));
      }
    }
    udev_queue_.emplace(options_.udev_queue);
  }
  if (!options_.udev_control.empty()) {
    HOTRING_ASSIGN_OR_RETURN(udev_control_,
                             UdevControlServer::Bind(*reactor_, options_.udev_control, *this));
    if (netlink_ != nullptr) udev_control_->SetNetlinkFd(netlink_->fd());
  }
  // Inherited but not used (--no-netlink): not kept open for nothing.
  options_.netlink_fd.Reset();
  if (options_.rebroadcast_group != 0) {
    if (options_.rebroadcast_group < 2 || options_.rebroadcast_group > io::kUeventMaxGroup) {
      return absl::InvalidArgumentError("--rebroadcast GROUP must be 2..32");
    }
    HOTRING_ASSIGN_OR_RETURN(rebroadcast_fd_, io::OpenUeventSender());
  }
  for (const DropReason reason : AllDropReasons()) {
    counters_.dropped[DropReasonName(reason)] = 0;
  }
  if (!options_.record_timeline.empty()) {
    HOTRING_RETURN_IF_ERROR(timeline_.OpenFile(options_.record_timeline));
  }
  handler_->SetStepRecorder(this);
  counters_.dropped["not_kernel"] = 0;
  counters_.dropped["not_root"] = 0;
  return absl::OkStatus();
}

absl::Status Daemon::Run() { return reactor_->BlockOn(Main()); }

Task<absl::Status> Daemon::Main() {
  started_at_ = MonoNow();
  services_.Spawn(control_->Serve());
  if (netlink_ != nullptr) services_.Spawn(netlink_->Receive());
  if (udev_control_ != nullptr) services_.Spawn(udev_control_->Serve());
  services_.Spawn(ReorderTimer());
  services_.Spawn(TrimWhenIdle());
  // What the stages do between events (udev rules: watched nodes); stopped with the services.
  services_.Spawn(handler_->Serve(*reactor_));
  TaskScope signal_scope;
  signal_scope.Spawn(WatchSignals());
  LogNotice("daemon ready: socket %s, handler %s, children_max %d, reorder timeout %s%s%s",
            options_.socket, handler_->Name(), scheduler_.children_max(),
            absl::FormatDuration(options_.reorder_timeout),
            netlink_ == nullptr     ? ""
            : netlink_->inherited() ? ", kernel uevents on (inherited socket)"
                                    : ", kernel uevents on",
            udev_control_ == nullptr ? "" : absl::StrCat(", udev control ", options_.udev_control));
  if (options_.on_ready) options_.on_ready();
  while (!stopping_) co_await stop_.Wait();
  // No more input (and no more udev control clients: they are refused, as by an exiting udevd).
  // Finish everything already accepted, held events included; or, after udevd's exit, only
  // what runs.
  services_.CancelAll();
  udev_control_.reset();
  ExpireResult rest = reorderer_.ReleaseAll();
  NoteMissing(rest.missing, "stopping");
  Release(rest.released, MonoNow());
  Pump();
  while (!Idle() && !force_stop_) co_await idle_.Wait();
  if (force_stop_) {
    LogWarning("forced stop: %d events abandoned", scheduler_.queued() + scheduler_.running());
    workers_.CancelAll();
  }
  CheckIdle();
  if (counters_.discarded > 0) {
    LogNotice("%d held or queued events discarded (udevadm control --exit)", counters_.discarded);
  }
  udev_queue_.reset();  // also after a forced stop: nothing is pending once we are gone
  (void)timeline_.Flush();
  LogNotice("daemon stopped: %d received, %d handled, %d failed, %d timed out",
            counters_.received, counters_.handled, counters_.failed, counters_.timed_out);
  co_return absl::OkStatus();
}

Task<void> Daemon::WatchSignals() {
  // SIGTERM, SIGINT and SIGHUP are blocked for the signalfd: a watcher that ended on a read
  // error would leave the daemon deaf to them for good. It reads again after a pause that
  // doubles up to a second, and logs the first error of a run and then every 64th.
  constexpr absl::Duration kFirstPause = absl::Milliseconds(10);
  absl::Duration pause = kFirstPause;
  uint64_t errors_in_a_row = 0;
  for (;;) {
    absl::StatusOr<int> sig = co_await signals_->Next(*reactor_);
    if (!sig.ok()) {
      if (errors_in_a_row++ % 64 == 0) {
        LogError("signalfd: %s (read error %d in a row; reading again in %s)",
                 sig.status().ToString(), errors_in_a_row, absl::FormatDuration(pause));
      }
      (void)co_await io::Sleep(*reactor_, pause);
      pause = std::min(pause * 2, absl::Seconds(1));
      continue;
    }
    errors_in_a_row = 0;
    pause = kFirstPause;
    if (*sig == SIGHUP) {
      const absl::Status reloaded = handler_->Reload();
      if (reloaded.ok()) {
        LogNotice("reloaded (SIGHUP)");
      } else {
        LogError("reload failed: %s", reloaded.ToString());
      }
    } else if (!stopping_) {
      RequestStop(*sig == SIGTERM ? "SIGTERM" : "SIGINT", StopMode::kDrain);
    } else {
      force_stop_ = true;
      idle_.NotifyAll();
    }
  }
}

void Daemon::Drop(absl::string_view reason, absl::string_view detail) {
  uint64_t& count = counters_.dropped[reason];
  ++count;
  // A line for the first few of each reason; the rest are counted (`control status`) and
  // summed up when the burst settles, so a flood of bad input cannot flood a rate-limited log.
  if (count <= 3) {
    LogWarning("dropped (%s, %d so far%s): %s", reason, count,
               count == 3 ? "; further ones only counted" : "", detail);
  } else {
    LogDebug("dropped (%s, %d so far): %s", reason, count, detail);
  }
}

size_t Daemon::Pending() const {
  return reorderer_.held() + scheduler_.queued() + scheduler_.running();
}

bool Daemon::Idle() const { return Pending() == 0; }

void Daemon::AcceptSent(Event&& event, const AckTarget& ack, bool want_ack) {
  Accept(std::move(event), want_ack ? std::optional<AckTarget>(ack) : std::nullopt);
}

void Daemon::AcceptKernel(Event&& event) {
  Accept(std::move(event), std::nullopt, /*drop_when_full=*/false);
}

void Daemon::AcceptResync(Event&& event) { Accept(std::move(event), std::nullopt); }

bool Daemon::Full() const { return Pending() >= options_.max_pending; }

absl::flat_hash_set<std::string> Daemon::LiveDevpaths() const {
  absl::flat_hash_set<std::string> live;
  for (const auto& [id, record] : events_) live.insert(record.event.devpath);
  return live;
}

void Daemon::Accept(Event&& event, std::optional<AckTarget> ack, bool drop_when_full) {
  const MonoTime now = MonoNow();
  if (event.seqnum.has_value()) {
    AcceptSequenced(std::move(event), std::move(ack), drop_when_full, now);
    NoteBusy();
    return;
  }
  // No SEQNUM: no reordering; a retransmission is recognised by its cookie.
  if (ack.has_value()) {
    if (auto it = cookie_to_id_.find(ack->cookie); it != cookie_to_id_.end()) {
      Drop(DropReason::kDuplicate, absl::StrCat(EventLabel(event), " (cookie) seen before"));
      if (it->second != 0) {
        events_[it->second].acks.push_back(*ack);
      } else {
        control_->SendAck(*ack, std::nullopt, EventResult::kDuplicate);
      }
      return;
    }
  }
  if (drop_when_full && Pending() >= options_.max_pending) {
    Drop(DropReason::kQueueFull, absl::StrCat(EventLabel(event), ": ", Pending(), " pending"));
    return;
  }
  ++counters_.received;
  if (!burst_log_.running()) burst_log_.Start(now, Burst());
  const uint64_t id = ReleaseOne(std::move(event), now, /*just_received=*/true);
  if (ack.has_value()) {
    EventRecord& record = events_.find(id)->second;
    record.acks.push_back(*ack);
    record.cookie = ack->cookie;
    cookie_to_id_[ack->cookie] = id;
    cookie_order_.push_back(ack->cookie);
    while (cookie_order_.size() > kMaxRememberedCookies) {
      const uint32_t old = cookie_order_.front();
      cookie_order_.pop_front();
      if (auto it = cookie_to_id_.find(old); it != cookie_to_id_.end() && it->second == 0) {
        cookie_to_id_.erase(it);
      }
    }
  }
  Pump();
  NoteBusy();
}

void Daemon::NoteBusy() {
  // Checked after the event went as far as it could: one a handler finished at once (no task)
  // never makes the file appear.
  if (udev_queue_.has_value() && !Idle()) udev_queue_->Busy();
}

void Daemon::AcceptSequenced(Event&& event, std::optional<AckTarget> ack, bool drop_when_full,
                             MonoTime now) {
  {
    const uint64_t seqnum = *event.seqnum;
    const bool was_holding = reorderer_.held() > 0;
    if (drop_when_full && Pending() >= options_.max_pending) {
      Drop(DropReason::kQueueFull, absl::StrCat("SEQNUM=", seqnum, ": ", Pending(), " pending"));
      return;
    }
    // The member buffers keep their capacity from event to event; taken out while in use.
    std::vector<Event> released = std::move(released_);
    std::vector<SeqnumRange> missing = std::move(missing_);
    released.clear();
    missing.clear();
    // In order with nothing held (the usual case) the event runs as it is, without a detour
    // through the reorderer's vector.
    const std::optional<PushDisposition> passed = reorderer_.PassThrough(seqnum);
    // Built before the event may move into the reorderer; added unless it is a duplicate. An
    // event that passes through gets one record for its reception and release instead.
    TimelineRecord received;
    if (!passed.has_value()) received = timeline_.ReceivedRecord(now, event);
    // Which of its rules gave a gap up on the way (a zero timeout's, or the bound's) is the
    // reorderer's to say: its own counters tell.
    const uint64_t timeouts_before = reorderer_.counters().timeouts;
    const PushDisposition disposition =
        passed.has_value() ? *passed : reorderer_.Push(std::move(event), now, released, missing);
    if (disposition == PushDisposition::kDuplicateOfHeld ||
        disposition == PushDisposition::kDuplicateOfReleased) {
      Drop(DropReason::kDuplicate, absl::StrCat("SEQNUM=", seqnum, " seen before"));
      // Ack when the first copy is done; at once if it already is.
      if (!ack.has_value()) {
        // Nothing to ack.
      } else if (disposition == PushDisposition::kDuplicateOfHeld) {
        held_acks_[seqnum].push_back(*ack);
      } else if (auto id = seqnum_to_id_.find(seqnum); id != seqnum_to_id_.end()) {
        events_[id->second].acks.push_back(*ack);
      } else {
        control_->SendAck(*ack, seqnum, EventResult::kDuplicate);
      }
    } else {
      ++counters_.received;
      if (!burst_log_.running()) burst_log_.Start(now, Burst());
      if (!passed.has_value()) timeline_.Add(std::move(received));
      if (ack.has_value()) held_acks_[seqnum].push_back(*ack);
      if (reorderer_.counters().timeouts != timeouts_before) {
        ++counters_.reorder_timeouts;
        NoteMissing(missing, "reorder timeout");
      } else {
        NoteMissing(missing, "too many held events");
      }
      if (passed.has_value()) {
        (void)ReleaseOne(std::move(event), now, /*just_received=*/true);
        Pump();
      } else {
        Release(released, now);
      }
      if (!was_holding && reorderer_.held() > 0) reorder_changed_.NotifyAll();
    }
    released_ = std::move(released);
    missing_ = std::move(missing);
  }
}

void Daemon::NoteMissing(const std::vector<SeqnumRange>& missing, absl::string_view why) {
  if (missing.empty()) return;
  uint64_t count = 0;
  for (const SeqnumRange& r : missing) count += r.count();
  counters_.missing_seqnums += count;
  LogWarning("%s: gave up waiting for SEQNUM %s", why, FormatSeqnums(missing));
  if (timeline_.enabled()) {
    const MonoTime now = MonoNow();
    const absl::string_view kind = why == "reorder timeout" ? "timeout"
                                   : why == "stopping"      ? "stopping"
                                                            : "overflow";
    for (const SeqnumRange& r : missing) timeline_.Gap(now, r.first, r.last, kind);
  }
}

uint64_t Daemon::ReleaseOne(Event&& event, MonoTime now, bool just_received) {
  const uint64_t id = scheduler_.Enqueue(event.devpath, KeysOf(event));
  const std::optional<uint64_t> seqnum = event.seqnum;
  // Built in place: the event is moved once, into its record.
  EventRecord& record = events_.try_emplace(id, std::move(event)).first->second;
  record.released_at = now;
  if (just_received) {
    timeline_.ReceivedAndReleased(now, id, record.event);
  } else {
    timeline_.Released(now, id, record.event);
  }
  if (seqnum.has_value()) {
    seqnum_to_id_.insert_or_assign(*seqnum, id);
    if (!held_acks_.empty()) {
      if (auto it = held_acks_.find(*seqnum); it != held_acks_.end()) {
        record.acks = std::move(it->second);
        held_acks_.erase(it);
      }
    }
  }
  return id;
}

void Daemon::Release(std::vector<Event>& events, MonoTime now) {
  if (events.empty()) return;
  for (Event& event : events) (void)ReleaseOne(std::move(event), now);
  Pump();
}

void Daemon::Pump() {
  // Not re-entrant: a handler that completes at once finishes inside StartEvent and pumps
  // again; that nested call only asks this loop for another round, so the stack stays flat.
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  if (exec_stopped_ && !discard_queued_) return;
  pumping_ = true;
  // The member keeps its capacity between calls; taken out so nothing else can touch it.
  std::vector<uint64_t> runnable = std::move(runnable_);
  do {
    pump_again_ = false;
    runnable.clear();
    scheduler_.TakeRunnable(runnable);
    for (const uint64_t id : runnable) {
      if (discard_queued_) {
        DiscardEvent(id);
      } else {
        StartEvent(id);
      }
    }
  } while (pump_again_);
  runnable_ = std::move(runnable);
  pumping_ = false;
}

namespace {

// Awaits a handler task that Start() already ran to its first suspension (Task's own awaiter
// would start it again). Completes at once if it is already done.
class StartedHandler {
 public:
  explicit StartedHandler(Task<HandlerResult>& task) : task_(task) {}
  bool await_ready() const noexcept { return task_.done(); }
  void await_suspend(std::coroutine_handle<> awaiting) noexcept {
    task_.handle().promise().continuation = awaiting;
  }
  HandlerResult await_resume() { return task_.TakeResult(); }

 private:
  Task<HandlerResult>& task_;
};

}  // namespace

void Daemon::StartEvent(uint64_t id) {
  EventRecord& started = events_.find(id)->second;
  started.started_at = MonoNow();
  timeline_.Started(*started.started_at, id);
  if (null_handler_) {
    // NullHandler::Handle completes at once with a default result: skip its coroutine frame.
    FinishEvent(id, HandlerResult{});
    return;
  }
  // events_ is a node map: the record stays put while other events come and go, so the
  // handler may keep its reference across suspensions.
  const Event& event = started.event;
  handler_->Starting(event);
  Task<HandlerResult> handling = handler_->Handle(*reactor_, event);
  handling.Start();
  if (handling.done()) {
    FinishEvent(id, handling.TakeResult());
    return;
  }
  // It waits for something (a child process): a worker task owns it from here, so dropping the
  // worker (forced stop, shutdown) cancels whatever the handler waits on.
  workers_.Spawn(AwaitHandler(id, std::move(handling)));
}

Task<void> Daemon::AwaitHandler(uint64_t id, Task<HandlerResult> handling) {
  const HandlerResult result = co_await StartedHandler(handling);
  FinishEvent(id, result);
}

void Daemon::FinishEvent(uint64_t id, const HandlerResult& result) {
  const auto record_it = events_.find(id);
  EventRecord& record = record_it->second;
  const Event& event = record.event;
  const EventResult outcome = ResultOf(result.outcome);
  // The duration only feeds log lines and monitors: no clock read when nobody wants it.
  const bool log_it = result.outcome == HandlerOutcome::kHandled ? LogEnabled(LogLevel::kInfo)
                                                                 : LogEnabled(LogLevel::kWarning);
  const absl::Duration took = log_it || control_->has_monitors()
                                  ? Since(record.released_at, MonoNow())
                                  : absl::ZeroDuration();
  CountOutcome(event, result, took, log_it);
  if (timeline_.enabled()) timeline_.Handled(MonoNow(), id, EventResultName(outcome));
  for (const AckTarget& target : record.acks) control_->SendAck(target, event.seqnum, outcome);
  control_->NotifyMonitors(event, outcome, took);
  if (rebroadcast_fd_.valid()) {
    const absl::Status sent = io::SendToGroup(rebroadcast_fd_.get(), options_.rebroadcast_group,
                                              EncodeKernelUevent(event));
    if (!sent.ok()) LogWarning("rebroadcast: %s", sent.ToString());
  }
  ForgetKeys(record);
  // The device's last handled state, for `settle --for`.
  settling_->Handled(std::move(record.event));
  // Nothing above inserts into events_, so the iterator is still valid.
  ReleaseSlot(record_it, id);
}

void Daemon::DiscardEvent(uint64_t id) {
  const auto record_it = events_.find(id);
  const EventRecord& record = record_it->second;
  ++counters_.discarded;
  LogDebug("%s: discarded", EventLabel(record.event));
  for (const AckTarget& target : record.acks) {
    control_->SendAck(target, record.event.seqnum, EventResult::kFailed);
  }
  ForgetKeys(record);
  ReleaseSlot(record_it, id);
}

void Daemon::ForgetKeys(const EventRecord& record) {
  if (record.event.seqnum.has_value()) seqnum_to_id_.erase(*record.event.seqnum);
  if (record.cookie != 0) {
    if (auto it = cookie_to_id_.find(record.cookie); it != cookie_to_id_.end()) it->second = 0;
  }
}

void Daemon::ReleaseSlot(absl::node_hash_map<uint64_t, EventRecord>::iterator record,
                         uint64_t id) {
  events_.erase(record);
  if (const absl::Status finished = scheduler_.Finish(id); !finished.ok()) {
    LogError("scheduler: %s", finished.ToString());
  }
  Pump();
  if (netlink_ != nullptr && !Full()) netlink_->RoomFreed();
  CheckIdle();
}

void Daemon::CountOutcome(const Event& event, const HandlerResult& result, absl::Duration took,
                          bool log_it) {
  switch (result.outcome) {
    case HandlerOutcome::kHandled:
      ++counters_.handled;
      if (log_it) {
        LogInfo("%s SUBSYSTEM=%s: handled in %d us", EventLabel(event), event.subsystem,
                absl::ToInt64Microseconds(took));
      }
      break;
    case HandlerOutcome::kFailed:
      ++counters_.failed;
      if (log_it) {
        burst_log_.Failure(absl::StrCat(EventLabel(event), " SUBSYSTEM=", event.subsystem,
                                        ": failed (", result.detail, ") after ",
                                        absl::ToInt64Microseconds(took), " us"));
      }
      break;
    case HandlerOutcome::kTimedOut:
      ++counters_.timed_out;
      if (log_it) {
        burst_log_.Failure(absl::StrCat(EventLabel(event), " SUBSYSTEM=", event.subsystem, ": ",
                                        result.detail));
      }
      break;
  }
  if (result.killed) ++counters_.killed;
}

void Daemon::CheckIdle() {
  if (!Idle()) return;
  if (udev_queue_.has_value()) udev_queue_->Idle();
  (void)timeline_.Flush();
  settling_->Idle();
  idle_.NotifyAll();
}

Task<void> Daemon::TrimWhenIdle() {
  // Long enough that a burst's pauses (a coldplug walk, a settle) do not trim between its
  // events, short enough that a board gets its memory back soon after.
  constexpr absl::Duration kIdleFor = absl::Seconds(2);
  for (;;) {
      const uint64_t mark = counters_.received;
    (void)co_await io::Sleep(*reactor_, kIdleFor);
    if (!Idle() || counters_.received != mark) continue;
    ReleaseIdleMemory();
    // Until an event is handled nothing has grown; requests alone (status) do not count.
    do {
      co_await idle_.Wait();
    } while (!Idle());
  }
}

void Daemon::ReleaseIdleMemory() {
  const bool control = control_->ReleaseIdleMemory();
  const bool netlink = netlink_ != nullptr && netlink_->ReleaseIdleMemory();
  // The flow's tables and buffers are empty when idle but keep the room the burst's peak
  // needed (up to --max-pending events: a few hundred KiB); the heap trim below returns it.
  (void)ReleaseIfEmpty(events_);
  (void)ReleaseIfEmpty(runnable_);
  (void)ReleaseIfEmpty(released_);
  (void)ReleaseIfEmpty(missing_);
  (void)ReleaseIfEmpty(seqnum_to_id_);
  (void)ReleaseIfEmpty(held_acks_);
  (void)scheduler_.ReleaseIdleMemory();
  handler_->ReleaseIdleMemory();  // before the heap trim, which returns what it frees
  size_t text = 0;
  if (!idle_memory_.has_value()) {
    // The first release (after start-up) calls madvise itself: it tells whether the kernel
    // takes it at all (a kernel without the advise calls refuses every range).
    idle_memory_ = IdleMemory::ForThisProgram();
    idle_memory_->TrimHeap();
    text = idle_memory_->ReleaseText();
    text_releasable_ = text > 0;
  } else {
    idle_memory_->TrimHeap();
    // Later ones let the kernel drop the text's mappings once the loop waits: the code that
    // ran between a madvise here and the wait (the return to the loop, five 64 KiB
    // fault-around windows) was mapped again at once, 320 KiB of an idle daemon's 1 MiB.
    for (const AddressRange& r : idle_memory_->text()) {
      if (!text_releasable_) break;
      if (!reactor_->QueueMadvise(reinterpret_cast<void*>(r.start), r.end - r.start,
                                  MADV_DONTNEED)) {
        text = idle_memory_->ReleaseText();
        break;
      }
      text += r.end - r.start;
    }
  }
  LogDebug("idle: memory given back (receive buffers: control %s, netlink %s; heap; %d KiB of "
           "program text unmapped)",
           control ? "yes" : "no", netlink ? "yes" : "no", text / 1024);
}

Task<void> Daemon::ReorderTimer() {
  for (;;) {
    const std::optional<MonoTime> deadline = reorderer_.NextDeadline();
    if (!deadline.has_value()) {
      co_await reorder_changed_.Wait();
      continue;
    }
    // Deadlines only move later (the oldest hold's), so sleeping to this one and checking
    // again is exact enough and needs one timer for the whole reorderer.
    (void)co_await io::SleepUntil(*reactor_, *deadline);
    ExpireResult expired = reorderer_.Expire(MonoNow());
    if (expired.released.empty()) continue;
    ++counters_.reorder_timeouts;
    NoteMissing(expired.missing, "reorder timeout");
    Release(expired.released, MonoNow());
    CheckIdle();
  }
}

}  // namespace hotring::hotplug

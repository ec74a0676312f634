#include "hotplug/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/flags.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/event_parser.h"
#include "hotplug/probe/fs_probe.h"
#include "hotplug/sysfs.h"
#include "hotplug/probe/partition_table.h"
#include "io/netlink.h"
#include "io/socket.h"

namespace hotring::hotplug {
namespace {

constexpr uint16_t kControlRingGroup = 1;
constexpr uint16_t kNetlinkRingGroup = 2;
constexpr size_t kMaxMonitors = 32;
constexpr size_t kMaxSettlers = 256;
constexpr size_t kMaxRememberedCookies = 4096;
// Lets an overrun storm pass before the sysfs walk, so one storm costs one resync.
constexpr absl::Duration kResyncDelay = absl::Milliseconds(100);

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

bool SameAddress(const io::SocketAddress& a, const io::SocketAddress& b) {
  return a.length == b.length && std::memcmp(&a.storage, &b.storage, a.length) == 0;
}

}  // namespace

Daemon::Daemon(DaemonOptions options, std::unique_ptr<Handler> handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      null_handler_(dynamic_cast<const NullHandler*>(handler_.get()) != nullptr),
      reorderer_(ReordererOptions{.timeout = options_.reorder_timeout,
                                  .expect_seqnum = options_.expect_seqnum}),
      scheduler_(options_.children_max > 0 ? options_.children_max : DefaultChildrenMax()),
      handled_devices_(options_.handled_devices_max),
      timeline_(MonoNow(), options_.timeline_keep) {}

Daemon::~Daemon() {
  // Tasks go first (members declared last), then the sockets; the socket file goes last.
  workers_.CancelAll();
  services_.CancelAll();
  control_receiver_.reset();
  netlink_receiver_.reset();
  // The handler's own tasks (module loads) await on the reactor: they go before it does.
  handler_.reset();
  if (!control_path_.empty()) ::unlink(control_path_.c_str());
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

  const std::string& socket = options_.socket;
  if (socket.empty()) return absl::InvalidArgumentError("--socket must not be empty");
  if (socket[0] != '@') {
    const size_t slash = socket.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string dir = socket.substr(0, slash);
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus(absl::StrCat("mkdir(", dir, ")"));
      }
    }
  }
  HOTRING_ASSIGN_OR_RETURN(control_fd_, io::BindUnix(SOCK_DGRAM, socket));
  if (socket[0] != '@') {
    control_path_ = socket;
    // Anyone may connect; only uid 0 (or ours) is accepted, checked per datagram, so a refused
    // sender is counted rather than silently kept out by the file mode.
    ::chmod(socket.c_str(), 0666);
  }
  HOTRING_RETURN_IF_ERROR(io::EnablePassCred(control_fd_.get()));
  (void)io::SetReceiveBuffer(control_fd_.get(), 8 << 20);
  // A datagram of up to kMaxWireBytes fits next to the recvmsg header, name and credentials;
  // a longer one still arrives (MSG_TRUNC) and is dropped as oversize.
  // Ring sizes: the daemon hands every buffer back before it waits again, so a ring only has to
  // cover what the kernel fills during one wait (a multishot pass takes up to 32 datagrams).
  // A ring that runs dry loses nothing: the receive ends with ENOBUFS, the datagrams stay in the
  // socket and the receiver re-arms. Bigger rings cost: the kernel takes buffers in ring order,
  // so each copy lands in memory not touched since the last lap (1024 x 4 KiB instead of
  // 128 x 4 KiB cost about 10% more daemon CPU per event in a netlink burst). The control ring
  // has 64 buffers, twice a multishot pass. The netlink ring has 32, one pass: each of its
  // buffers is a page a burst keeps resident (4 KiB for a uevent of a few hundred bytes, sized
  // for the largest the kernel sends), and 64 of them put a 100,000-uevent burst above a small
  // board's 4 MiB; a burst that drains a full socket re-arms the receive once per 32 uevents.
  HOTRING_ASSIGN_OR_RETURN(control_ring_, io::BufferRing::Create(*reactor_, kControlRingGroup,
                                                                 64, kMaxWireBytes + 1024));
  if (options_.netlink) {
    io::UeventListenerOptions listen;
    listen.receive_buffer = options_.netlink_rcvbuf;
    const bool inherited = options_.netlink_fd.valid();
    absl::StatusOr<io::UeventListener> listener =
        inherited ? io::AdoptUeventListener(std::move(options_.netlink_fd))
                  : io::OpenUeventListener(listen);
    if (!listener.ok()) {
      return absl::Status(listener.status().code(),
                          absl::StrCat("kernel uevent socket: ", listener.status().message(),
                                       " (use --no-netlink to run without kernel events)"));
    }
    LogInfo("netlink: listening on group 1, receive buffer %d bytes%s%s", listener->receive_buffer,
            listener->receive_buffer_forced ? " (forced)" : "", inherited ? " (inherited)" : "");
    netlink_fd_ = std::move(listener->fd);
    netlink_inherited_ = inherited;
    HOTRING_ASSIGN_OR_RETURN(netlink_ring_,
                             io::BufferRing::Create(*reactor_, kNetlinkRingGroup, 32, 4096));
    if (options_.netlink_trust_userspace) {
      LogWarning("--netlink-trust-userspace: accepting uevents from ANY sender on the netlink "
                 "socket; for tests in a private network namespace only");
    }
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
  services_.Spawn(ReceiveControl());
  if (netlink_fd_.valid()) services_.Spawn(ReceiveNetlink());
  services_.Spawn(ReorderTimer());
  services_.Spawn(TrimWhenIdle());
  TaskScope signal_scope;
  signal_scope.Spawn(WatchSignals());
  LogNotice("daemon ready: socket %s, handler %s, children_max %d, reorder timeout %s%s",
            options_.socket, handler_->Name(), scheduler_.children_max(),
            absl::FormatDuration(options_.reorder_timeout),
            !netlink_fd_.valid() ? ""
            : netlink_inherited_ ? ", kernel uevents on (inherited socket)"
                                 : ", kernel uevents on");
  if (options_.on_ready) options_.on_ready();
  while (!stopping_) co_await stop_.Wait();
  // No more input; finish everything already accepted, held events included.
  services_.CancelAll();
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
  (void)timeline_.Flush();
  LogNotice("daemon stopped: %d received, %d handled, %d failed, %d timed out",
            counters_.received, counters_.handled, counters_.failed, counters_.timed_out);
  co_return absl::OkStatus();
}

void Daemon::RequestStop(absl::string_view why) {
  if (stopping_) return;
  LogNotice("stopping (%s): %d held, %d queued, %d running", why, reorderer_.held(),
            scheduler_.queued(), scheduler_.running());
  stopping_ = true;
  stop_.NotifyAll();
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
      RequestStop(*sig == SIGTERM ? "SIGTERM" : "SIGINT");
    } else {
      force_stop_ = true;
      idle_.NotifyAll();
    }
  }
}

Task<void> Daemon::ReceiveControl() {
  io::MultishotReceiver& receiver =
      control_receiver_.emplace(*reactor_, control_fd_.get(), control_ring_);
  for (;;) {
    absl::StatusOr<io::Datagram> datagram = co_await receiver.Receive();
    if (!datagram.ok()) {
      LogError("control socket: %s", datagram.status().ToString());
      (void)co_await io::Sleep(*reactor_, absl::Milliseconds(10));
      continue;
    }
    HandleControlDatagram(*datagram);
  }
}

void Daemon::HandleControlDatagram(const io::Datagram& datagram) {
  if (!datagram.credentials.has_value()) {
    Drop(DropReason::kNoCredentials, "control datagram without credentials");
    return;
  }
  const ucred& cred = *datagram.credentials;
  if (cred.uid != 0 && cred.uid != ::getuid()) {
    Drop(DropReason::kUnprivileged,
         absl::StrCat("control datagram from pid ", cred.pid, " uid ", cred.uid));
    return;
  }
  if (datagram.truncated) {
    Drop(DropReason::kOversize, absl::StrCat("control datagram over ", kMaxWireBytes, " bytes"));
    return;
  }
  absl::StatusOr<WireMessage> message = ParseWireMessage(datagram.payload);
  if (!message.ok()) {
    const std::optional<DropReason> reason = DropReasonOf(message.status());
    Drop(reason.value_or(DropReason::kTruncated), message.status().message());
    return;
  }
  switch (message->type) {
    case WireType::kEvent: {
      const uint32_t cookie = message->cookie;
      const bool want_ack = (message->flags & kWireFlagWantAck) != 0;
      absl::StatusOr<Event> event = EventFromMessage(std::move(*message));
      if (!event.ok()) {
        const std::optional<DropReason> reason = DropReasonOf(event.status());
        Drop(reason.value_or(DropReason::kBadVariable), event.status().message());
        return;
      }
      Accept(std::move(*event), AckTarget{datagram.peer, cookie}, want_ack);
      return;
    }
    case WireType::kControlRequest:
      HandleControlRequest(std::move(*message), datagram.peer);
      return;
    case WireType::kAck:
    case WireType::kControlReply:
    case WireType::kMonitorEvent:
      Drop(DropReason::kBadType,
           absl::StrCat("a daemon does not take '", WireTypeName(message->type), "' messages"));
      return;
  }
}

void Daemon::HandleControlRequest(WireMessage message, const io::SocketAddress& from) {
  absl::StatusOr<ControlRequest> request = ControlRequestFromMessage(std::move(message));
  if (!request.ok()) {
    const std::optional<DropReason> reason = DropReasonOf(request.status());
    Drop(reason.value_or(DropReason::kBadField), request.status().message());
    return;
  }
  ControlReply reply;
  reply.cookie = request->cookie;
  switch (request->command) {
    case ControlCommand::kStatus:
      reply = StatusReply(request->cookie);
      break;
    case ControlCommand::kExit:
      reply.message = "stopping";
      SendTo(from, ControlReplyMessage(reply), false);
      RequestStop("control exit");
      return;
    case ControlCommand::kReload: {
      const absl::Status reloaded = handler_->Reload();
      reply.ok = reloaded.ok();
      reply.message = reloaded.ok() ? "reloaded" : std::string(reloaded.message());
      LogNotice("reload requested: %s", reloaded.ok() ? "ok" : reloaded.ToString());
      break;
    }
    case ControlCommand::kSettle:
      for (const auto& [key, value] : request->options) {
        if (key == "FOR") {
          SettleFor(*request, from);
          return;
        }
      }
      // Idle without netlink: nothing can be pending that the daemon has not seen (datagrams on
      // the control socket are read in order, so a `send` before this request came first).
      if (Idle() && !netlink_fd_.valid()) {
        LogBurstSummary();
        break;
      }
      if (settlers_.size() >= kMaxSettlers) {
        reply.ok = false;
        reply.message = "too many settle requests waiting";
        break;
      }
      // A retransmitted request replaces its earlier copy.
      settlers_.erase(std::remove_if(settlers_.begin(), settlers_.end(),
                                     [&](const AckTarget& t) {
                                       return SameAddress(t.address, from) &&
                                              t.cookie == request->cookie;
                                     }),
                      settlers_.end());
      settlers_.push_back(AckTarget{from, request->cookie});
      CheckIdle();
      return;  // answered by CheckIdle, or by SettleNetlink
    case ControlCommand::kMonitor: {
      auto it = std::find_if(monitors_.begin(), monitors_.end(),
                             [&](const Monitor& m) { return SameAddress(m.address, from); });
      if (it != monitors_.end()) {
        it->cookie = request->cookie;  // a re-subscription (monitors renew periodically)
      } else if (monitors_.size() >= kMaxMonitors) {
        reply.ok = false;
        reply.message = "too many monitors";
      } else {
        monitors_.push_back(Monitor{from, request->cookie});
        LogInfo("monitor subscribed (%d now)", monitors_.size());
      }
      break;
    }
    case ControlCommand::kPending:
      reply = PendingReply(request->cookie);
      break;
    case ControlCommand::kTimeline:
      reply = TimelineReply(*request);
      break;
    case ControlCommand::kUnmonitor:
      monitors_.erase(std::remove_if(monitors_.begin(), monitors_.end(),
                                     [&](const Monitor& m) {
                                       return SameAddress(m.address, from);
                                     }),
                      monitors_.end());
      break;
  }
  SendTo(from, ControlReplyMessage(reply), false);
}

ControlReply Daemon::StatusReply(uint32_t cookie) const {
  ControlReply reply;
  reply.cookie = cookie;
  auto add = [&](absl::string_view key, uint64_t value) {
    reply.fields.emplace_back(std::string(key), absl::StrCat(value));
  };
  add("received", counters_.received);
  add("handled", counters_.handled);
  add("failed", counters_.failed);
  add("timed_out", counters_.timed_out);
  add("killed", counters_.killed);
  add("held", reorderer_.held());
  add("queued", scheduler_.queued());
  add("running", scheduler_.running());
  add("acks_sent", counters_.acks_sent);
  add("reorder_timeouts", counters_.reorder_timeouts);
  add("missing_seqnums", counters_.missing_seqnums);
  add("netlink_received", counters_.netlink_received);
  add("netlink_overruns", counters_.netlink_overruns);
  add("netlink_paused", counters_.netlink_paused);
  add("resyncs", counters_.resyncs);
  add("resync_events", counters_.resync_events);
  add("monitors", monitors_.size());
  add("monitor_drops", counters_.monitor_drops);
  add("reply_failures", counters_.reply_failures);
  add("probe_errors", counters_.probe_errors);
  add("devices_remembered", handled_devices_.size());
  add("timeline_records", timeline_.total());
  add("timeline_write_errors", timeline_.write_errors());
  add("children_max", scheduler_.children_max());
  add("ring_cq_overflows", reactor_->cq_overflows());
  add("ring_cq_lost", reactor_->cq_lost());
  add("uptime_ms", absl::ToInt64Milliseconds(Since(started_at_, MonoNow())));
  std::vector<std::pair<std::string, uint64_t>> stage_counters;
  handler_->AppendCounters(stage_counters);
  for (const auto& [key, value] : stage_counters) add(key, value);
  std::vector<std::pair<std::string, uint64_t>> dropped(counters_.dropped.begin(),
                                                        counters_.dropped.end());
  std::sort(dropped.begin(), dropped.end());
  for (const auto& [reason, count] : dropped) add(absl::StrCat("dropped_", reason), count);
  return reply;
}

void Daemon::Drop(DropReason reason, absl::string_view detail) {
  Drop(DropReasonName(reason), detail);
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

void Daemon::Accept(Event&& event, std::optional<AckTarget> ack, bool want_ack,
                    bool drop_when_full) {
  if (!want_ack) ack.reset();
  const MonoTime now = MonoNow();
  if (event.seqnum.has_value()) {
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
        SendAck(*ack, seqnum, EventResult::kDuplicate);
      }
    } else {
      ++counters_.received;
      NoteReceived(now);
      if (!passed.has_value()) timeline_.Add(std::move(received));
      if (ack.has_value()) held_acks_[seqnum].push_back(*ack);
      NoteMissing(missing, "too many held events");
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
    return;
  }
  // No SEQNUM: no reordering; a retransmission is recognised by its cookie.
  if (ack.has_value()) {
    if (auto it = cookie_to_id_.find(ack->cookie); it != cookie_to_id_.end()) {
      Drop(DropReason::kDuplicate, absl::StrCat(EventLabel(event), " (cookie) seen before"));
      if (it->second != 0) {
        events_[it->second].acks.push_back(*ack);
      } else {
        SendAck(*ack, std::nullopt, EventResult::kDuplicate);
      }
      return;
    }
  }
  if (drop_when_full && Pending() >= options_.max_pending) {
    Drop(DropReason::kQueueFull, absl::StrCat(EventLabel(event), ": ", Pending(), " pending"));
    return;
  }
  ++counters_.received;
  NoteReceived(now);
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
  const uint64_t id = scheduler_.Enqueue(event.devpath);
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
  pumping_ = true;
  // The member keeps its capacity between calls; taken out so nothing else can touch it.
  std::vector<uint64_t> runnable = std::move(runnable_);
  do {
    pump_again_ = false;
    runnable.clear();
    scheduler_.TakeRunnable(runnable);
    for (const uint64_t id : runnable) StartEvent(id);
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
  const absl::Duration took = log_it || !monitors_.empty()
                                  ? Since(record.released_at, MonoNow())
                                  : absl::ZeroDuration();
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
        LogFailure(absl::StrCat(EventLabel(event), " SUBSYSTEM=", event.subsystem, ": failed (",
                                result.detail, ") after ", absl::ToInt64Microseconds(took),
                                " us"));
      }
      break;
    case HandlerOutcome::kTimedOut:
      ++counters_.timed_out;
      if (log_it) {
        LogFailure(absl::StrCat(EventLabel(event), " SUBSYSTEM=", event.subsystem, ": ",
                                result.detail));
      }
      break;
  }
  if (timeline_.enabled()) timeline_.Handled(MonoNow(), id, EventResultName(outcome));
  if (result.killed) ++counters_.killed;
  for (const AckTarget& target : record.acks) SendAck(target, event.seqnum, outcome);
  NotifyMonitors(event, outcome, took);
  if (rebroadcast_fd_.valid()) {
    const absl::Status sent =
        io::SendToGroup(rebroadcast_fd_.get(), options_.rebroadcast_group, EncodeKernelUevent(event));
    if (!sent.ok()) LogWarning("rebroadcast: %s", sent.ToString());
  }
  if (event.seqnum.has_value()) seqnum_to_id_.erase(*event.seqnum);
  if (record.cookie != 0) {
    if (auto it = cookie_to_id_.find(record.cookie); it != cookie_to_id_.end()) it->second = 0;
  }
  // The device's last handled state, for `settle --for`.
  HandledDevice* handled = handled_devices_.Record(std::move(record.event));
  if (handled != nullptr && !device_settlers_.empty()) OfferToDeviceSettlers(*handled);
  // Nothing above inserts into events_, so the iterator is still valid.
  events_.erase(record_it);
  if (const absl::Status finished = scheduler_.Finish(id); !finished.ok()) {
    LogError("scheduler: %s", finished.ToString());
  }
  Pump();
  if (netlink_waiting_for_room_ && Pending() < options_.max_pending) room_.NotifyAll();
  CheckIdle();
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
  const bool control = control_receiver_.has_value() && control_receiver_->ReleaseIdleMemory();
  const bool netlink = netlink_receiver_.has_value() && netlink_receiver_->ReleaseIdleMemory();
  const size_t text = idle_memory_.Release();
  LogDebug("idle: memory given back (receive buffers: control %s, netlink %s; heap; %d KiB of "
           "program text unmapped)",
           control ? "yes" : "no", netlink ? "yes" : "no", text / 1024);
}

void Daemon::CheckIdle() {
  if (!Idle()) return;
  (void)timeline_.Flush();
  if (!settlers_.empty()) {
    if (!netlink_fd_.valid()) {
      AnswerSettlers();
    } else if (!settle_check_running_) {
      settle_check_running_ = true;
      services_.Spawn(SettleNetlink());
    }
  }
  idle_.NotifyAll();
}

void Daemon::AnswerSettlers() {
  LogBurstSummary();
  std::vector<AckTarget> settlers = std::move(settlers_);
  settlers_.clear();
  for (const AckTarget& settler : settlers) {
    ControlReply reply;
    reply.cookie = settler.cookie;
    reply.message = "settled";
    SendTo(settler.address, ControlReplyMessage(reply), false);
  }
}

bool Daemon::NetlinkUnread() const {
  pollfd p{netlink_fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

// `hotring trigger --settle` writes to sysfs and then asks to settle. The kernel queued each
// uevent on our netlink socket inside the write, so it is there before the request is, but it
// may not have been read yet: the multishot receive drains a busy socket in rounds of a few
// dozen datagrams, and the control socket's completion can come between two rounds. Being idle
// is not enough; the daemon answers only once the socket is empty and every completion it had
// already produced was dispatched. Two trips through the ring do that: the first lets the
// kernel run the receives it deferred to our next io_uring_enter, the second starts after the
// whole batch of the first was dispatched.
Task<void> Daemon::SettleNetlink() {
  for (;;) {
    (void)co_await io::Nop(*reactor_);
    (void)co_await io::Nop(*reactor_);
    if (settlers_.empty() || !Idle()) break;  // CheckIdle starts us again once idle
    if (!NetlinkUnread()) {
      AnswerSettlers();
      break;
    }
    // Unread uevents: the receive is re-armed (or waits for ring buffers); check again soon.
    (void)co_await io::Sleep(*reactor_, absl::Milliseconds(1));
  }
  settle_check_running_ = false;
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

void Daemon::SendTo(const io::SocketAddress& to, const WireMessage& message, bool is_monitor) {
  const std::string bytes = EncodeWireMessage(message);
  if (::sendto(control_fd_.get(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
               to.get(), to.length) == static_cast<ssize_t>(bytes.size())) {
    return;
  }
  const int err = errno;
  if (is_monitor) {
    ++counters_.monitor_drops;
    if (err == ECONNREFUSED || err == ENOENT) {
      monitors_.erase(std::remove_if(monitors_.begin(), monitors_.end(),
                                     [&](const Monitor& m) { return SameAddress(m.address, to); }),
                      monitors_.end());
      LogInfo("monitor gone; %d left", monitors_.size());
    }
    return;
  }
  ++counters_.reply_failures;
  LogDebug("reply not sent: %s", strerror(err));
}

void Daemon::SendAck(const AckTarget& target, std::optional<uint64_t> seqnum,
                     EventResult result) {
  Ack ack;
  ack.cookie = target.cookie;
  ack.seqnum = seqnum;
  ack.result = result;
  SendTo(target.address, AckMessage(ack), false);
  ++counters_.acks_sent;
}

void Daemon::NotifyMonitors(const Event& event, EventResult result, absl::Duration duration) {
  if (monitors_.empty()) return;
  MonitorEvent monitor_event;
  monitor_event.event = event;
  monitor_event.result = result;
  monitor_event.duration_us = static_cast<uint64_t>(absl::ToInt64Microseconds(duration));
  // Copy: a failed send may remove a monitor from the list.
  const std::vector<Monitor> monitors = monitors_;
  for (const Monitor& monitor : monitors) {
    SendTo(monitor.address, MonitorEventMessage(monitor_event, monitor.cookie), true);
  }
}

Task<void> Daemon::ReceiveNetlink() {
  io::MultishotReceiver& receiver =
      netlink_receiver_.emplace(*reactor_, netlink_fd_.get(), netlink_ring_);
  bool in_storm = false;
  for (;;) {
    // At the --max-pending bound, stop reading: the uevents wait in the socket (its receive
    // buffer is forced large for this), where dropping them would lose them for good. The
    // receive ring may still fill behind us; those few are taken over the bound on resume.
    if (Pending() >= options_.max_pending) {
      ++counters_.netlink_paused;
      LogDebug("netlink: %d events pending (--max-pending): reading paused", Pending());
      netlink_waiting_for_room_ = true;
      do {
        co_await room_.Wait();
      } while (Pending() >= options_.max_pending);
      netlink_waiting_for_room_ = false;
    }
    absl::StatusOr<io::Datagram> datagram = co_await receiver.Receive();
    if (!datagram.ok()) {
      if (io::IsSocketOverrun(datagram.status())) {
        ++counters_.netlink_overruns;
        if (!in_storm) {
          LogWarning("netlink: receive queue overrun (ENOBUFS): the kernel dropped uevents; "
                     "re-synchronising from %s", options_.sysfs_root);
          in_storm = true;
        }
        if (!resync_pending_) {
          resync_pending_ = true;
          services_.Spawn(ResyncLater());
        }
        continue;
      }
      LogError("netlink: %s", datagram.status().ToString());
      (void)co_await io::Sleep(*reactor_, absl::Milliseconds(10));
      continue;
    }
    in_storm = resync_pending_;
    const io::NetlinkOrigin origin = io::CheckNetlinkOrigin(datagram->peer, datagram->credentials);
    if (origin != io::NetlinkOrigin::kKernel && !options_.netlink_trust_userspace) {
      Drop(io::NetlinkDropReason(origin), "uevent not sent by the kernel");
      continue;
    }
    if (datagram->truncated) {
      Drop(DropReason::kOversize, "netlink datagram larger than a ring buffer");
      continue;
    }
    absl::StatusOr<Event> event = ParseKernelUevent(datagram->payload);
    if (!event.ok()) {
      const std::optional<DropReason> reason = DropReasonOf(event.status());
      Drop(reason.value_or(DropReason::kTruncated), event.status().message());
      continue;
    }
    ++counters_.netlink_received;
    Accept(std::move(*event), std::nullopt, false, /*drop_when_full=*/false);
  }
}

Task<void> Daemon::ResyncLater() {
  (void)co_await io::Sleep(*reactor_, kResyncDelay);
  resync_pending_ = false;
  Resync();
}

void Daemon::Resync() {
  ++counters_.resyncs;
  absl::StatusOr<std::vector<Event>> events = SynthesizeAddEvents(options_.sysfs_root);
  if (!events.ok()) {
    LogError("resync: %s", events.status().ToString());
    return;
  }
  // A device whose event is still queued or running gets handled anyway: skip it.
  absl::flat_hash_set<std::string> pending;
  for (const auto& [id, record] : events_) pending.insert(record.event.devpath);
  size_t synthesized = 0;
  for (Event& event : *events) {
    if (pending.contains(event.devpath)) continue;
    ++synthesized;
    Accept(std::move(event), std::nullopt, false);
  }
  counters_.resync_events += synthesized;
  LogNotice("resync: synthesized %d add events from %s", synthesized, options_.sysfs_root);
}

// ---- settle --for, pending, timeline, summaries ----

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

void Daemon::SettleFor(const ControlRequest& request, const io::SocketAddress& from) {
  ControlReply reply;
  reply.cookie = request.cookie;
  std::vector<SettleCondition> conditions;
  // A requester that gave up is forgotten at its deadline (default: 10 minutes).
  int64_t timeout_ms = 600'000;
  for (const auto& [key, value] : request.options) {
    if (key == "TIMEOUT_MS") {
      if (!absl::SimpleAtoi(value, &timeout_ms) || timeout_ms < 0) timeout_ms = 600'000;
      timeout_ms = std::min<int64_t>(timeout_ms, 86'400'000);
    }
    if (key != "FOR") continue;
    absl::StatusOr<SettleCondition> condition = ParseSettleCondition(value);
    if (!condition.ok() || conditions.size() == 32) {
      reply.ok = false;
      reply.message = condition.ok() ? "at most 32 FOR conditions"
                                     : std::string(condition.status().message());
      SendTo(from, ControlReplyMessage(reply), false);
      return;
    }
    conditions.push_back(*std::move(condition));
  }
  // A retransmitted request replaces its earlier copy.
  device_settlers_.erase(std::remove_if(device_settlers_.begin(), device_settlers_.end(),
                                        [&](const DeviceSettler& s) {
                                          return SameAddress(s.target.address, from) &&
                                                 s.target.cookie == request.cookie;
                                        }),
                         device_settlers_.end());
  SettleWaiter waiter(std::move(conditions));
  handled_devices_.ForEach([&](HandledDevice& device) {
    for (const SettleCondition& c : waiter.conditions()) {
      if (WantsProbe(device, c)) {
        Probe(device);
        break;
      }
    }
    return waiter.Offer(device);
  });
  if (waiter.done()) {
    SendSettled(from, request.cookie, waiter);
    return;
  }
  const MonoTime now = MonoNow();
  device_settlers_.erase(std::remove_if(device_settlers_.begin(), device_settlers_.end(),
                                        [&](const DeviceSettler& s) { return s.expires < now; }),
                         device_settlers_.end());
  if (device_settlers_.size() >= kMaxSettlers) {
    reply.ok = false;
    reply.message = "too many settle requests waiting";
    SendTo(from, ControlReplyMessage(reply), false);
    return;
  }
  device_settlers_.push_back(DeviceSettler{AckTarget{from, request.cookie}, std::move(waiter),
                                           now + absl::Milliseconds(timeout_ms)});
}

void Daemon::OfferToDeviceSettlers(HandledDevice& device) {
  for (const DeviceSettler& settler : device_settlers_) {
    bool probe = false;
    for (size_t i = 0; i < settler.waiter.conditions().size(); ++i) {
      probe |= !settler.waiter.met(i) && WantsProbe(device, settler.waiter.conditions()[i]);
    }
    if (probe) {
      Probe(device);
      break;
    }
  }
  std::vector<DeviceSettler> done;
  for (auto it = device_settlers_.begin(); it != device_settlers_.end();) {
    if (it->waiter.Offer(device)) {
      done.push_back(std::move(*it));
      it = device_settlers_.erase(it);
    } else {
      ++it;
    }
  }
  for (const DeviceSettler& settler : done) {
    SendSettled(settler.target.address, settler.target.cookie, settler.waiter);
  }
}

void Daemon::SendSettled(const io::SocketAddress& to, uint32_t cookie,
                         const SettleWaiter& waiter) {
  ControlReply reply;
  reply.cookie = cookie;
  reply.message = "settled";
  // One `devname` per condition, in the request's order ("" for a device without a node):
  // root=LABEL=... mounts the device that matched.
  for (size_t i = 0; i < waiter.conditions().size(); ++i) {
    reply.fields.emplace_back("devname", waiter.met_by(i));
  }
  SendTo(to, ControlReplyMessage(reply), false);
}

void Daemon::Probe(HandledDevice& device) {
  device.probed = true;
  const std::string path = absl::StrCat(options_.probe_dev_root, "/", device.properties.devname());
  // A few small preads on the reactor thread: done only for a waiting LABEL=/UUID= or
  // PARTUUID=/PARTLABEL= settle, once per handled block device.
  absl::StatusOr<std::optional<probe::FsIdentity>> fs = probe::ProbeFilesystemAt(path);
  device.fs.reset();
  if (!fs.ok()) {
    ProbeFailed(path, device, fs.status());
  } else if (fs->has_value()) {
    device.fs = std::make_unique<probe::FsIdentity>(**std::move(fs));
    LogInfo("probe %s: %s LABEL=%s UUID=%s", path, device.fs->type, device.fs->label,
            device.fs->uuid);
  }
  ProbePartition(device);
}

void Daemon::ProbeFailed(absl::string_view path, const HandledDevice& device,
                         const absl::Status& status) {
  ++counters_.probe_errors;
  if (counters_.probe_errors <= 3) {
    LogWarning("probe %s (%s): %s", path, device.properties.devpath(), status.ToString());
  }
}

void Daemon::ProbePartition(HandledDevice& device) {
  device.partition.reset();
  const std::optional<absl::string_view> partn_text = device.properties.Get("PARTN");
  int partn = 0;
  if (!partn_text.has_value() || !absl::SimpleAtoi(*partn_text, &partn) || partn <= 0) return;
  // The table is the parent disk's: the partition's DEVPATH is below the disk's.
  const absl::string_view devpath = device.properties.devpath();
  const size_t slash = devpath.rfind('/');
  const HandledDevice* disk =
      slash == absl::string_view::npos ? nullptr : handled_devices_.Find(devpath.substr(0, slash));
  if (disk == nullptr || disk->properties.devname().empty()) return;
  const std::string path = absl::StrCat(options_.probe_dev_root, "/", disk->properties.devname());
  // 4 KiB-sector disks keep their GPT header in sector 1 of 4 KiB: the sysfs attribute says.
  uint32_t sector_size = 512;
  if (std::ifstream in(absl::StrCat(options_.sysfs_root, disk->properties.devpath(),
                                    "/queue/logical_block_size"));
      !(in >> sector_size) || (sector_size != 512 && sector_size != 4096)) {
    sector_size = 512;
  }
  absl::StatusOr<std::optional<probe::PartitionTable>> table =
      probe::ProbePartitionTableAt(path, sector_size);
  if (!table.ok()) {
    ProbeFailed(path, device, table.status());
    return;
  }
  if (!table->has_value()) return;
  for (const probe::PartitionEntry& entry : (*table)->entries) {
    if (entry.number != partn) continue;
    device.partition = std::make_unique<PartitionIdentity>(PartitionIdentity{entry.uuid, entry.name});
    LogInfo("probe %s: partition %d PARTUUID=%s PARTLABEL=%s", path, partn, entry.uuid,
            entry.name);
    return;
  }
}

namespace {

// "/a/b" and "/a/b/c" (either way round), or equal: the scheduler's blocking relation.
absl::string_view Relation(absl::string_view earlier, absl::string_view later) {
  if (earlier == later) return "same device";
  if (later.size() > earlier.size() && absl::StartsWith(later, earlier) &&
      later[earlier.size()] == '/') {
    return "parent";
  }
  if (earlier.size() > later.size() && absl::StartsWith(earlier, later) &&
      earlier[later.size()] == '/') {
    return "child";
  }
  return "";
}

std::string SeqnumText(const Event& event) {
  return event.seqnum.has_value() ? absl::StrCat(*event.seqnum) : "-";
}

std::string Millis(absl::Duration d) { return absl::StrCat(absl::ToInt64Milliseconds(d), " ms"); }

}  // namespace

ControlReply Daemon::PendingReply(uint32_t cookie) const {
  // At most this many events are described: the reply must fit one datagram.
  constexpr size_t kMaxDescribed = 20;
  constexpr size_t kMaxLine = 300;
  ControlReply reply;
  reply.cookie = cookie;
  const MonoTime now = MonoNow();
  reply.fields.emplace_back("held", absl::StrCat(reorderer_.held()));
  reply.fields.emplace_back("queued", absl::StrCat(scheduler_.queued()));
  reply.fields.emplace_back("running", absl::StrCat(scheduler_.running()));
  size_t described = 0;
  size_t total = 0;
  auto add = [&](const Event& event, std::string where) {
    ++total;
    if (described == kMaxDescribed) return;
    ++described;
    std::string line = absl::StrCat(SeqnumText(event), " ", event.devpath, " ", where);
    if (line.size() > kMaxLine) line.resize(kMaxLine);
    reply.fields.emplace_back("event", std::move(line));
  };
  // Release order: the running and queued events, oldest first; then what is held.
  std::vector<uint64_t> ids;
  ids.reserve(events_.size());
  for (const auto& [id, record] : events_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const uint64_t id : ids) {
    const EventRecord& record = events_.find(id)->second;
    if (record.started_at.has_value()) {
      const std::string what = handler_->Describe(record.event);
      add(record.event, absl::StrCat("running for ", Millis(Since(*record.started_at, now)),
                                     what.empty() ? "" : ": ", what));
    }
  }
  for (const uint64_t id : ids) {
    const EventRecord& record = events_.find(id)->second;
    if (record.started_at.has_value()) continue;
    if (described == kMaxDescribed) {
      ++total;
      continue;
    }
    // The latest earlier live event on a related DEVPATH is the one it waits for.
    const EventRecord* blocker = nullptr;
    absl::string_view relation;
    for (const uint64_t other : ids) {
      if (other >= id) break;
      const EventRecord& r = events_.find(other)->second;
      const absl::string_view rel = Relation(r.event.devpath, record.event.devpath);
      if (!rel.empty()) {
        blocker = &r;
        relation = rel;
      }
    }
    const std::string queued_for = Millis(Since(record.released_at, now));
    if (blocker != nullptr) {
      add(record.event, absl::StrCat("queued for ", queued_for, " behind SEQNUM ",
                                     SeqnumText(blocker->event), " ", blocker->event.devpath,
                                     " (", relation, ", ",
                                     blocker->started_at.has_value() ? "running" : "queued",
                                     ")"));
    } else {
      add(record.event, absl::StrCat("queued for ", queued_for, ": all ",
                                     scheduler_.children_max(), " handler slots busy"));
    }
  }
  const std::optional<uint64_t> expected = reorderer_.expected();
  reorderer_.VisitHeld([&](const Event& event, MonoTime since) {
    add(event, absl::StrCat("held for ", Millis(Since(since, now)), " behind a gap: SEQNUM ",
                            expected.has_value() ? absl::StrCat(*expected) : "?",
                            " not received (released after ",
                            absl::FormatDuration(options_.reorder_timeout), ")"));
    return true;
  });
  if (total > described) reply.fields.emplace_back("more", absl::StrCat(total - described));
  return reply;
}

ControlReply Daemon::TimelineReply(const ControlRequest& request) const {
  ControlReply reply;
  reply.cookie = request.cookie;
  uint64_t from = 0;
  for (const auto& [key, value] : request.options) {
    if (key == "FROM" && !absl::SimpleAtoi(value, &from)) {
      reply.ok = false;
      reply.message = "FROM wants a line number";
      return reply;
    }
  }
  std::vector<std::string> lines;
  // One datagram: room for the header and the three counts; each line is a `line=...\0` field
  // (6 bytes more than the line); a record's two lines (R and L) of a 4 KiB DEVPATH are cut to
  // fit.
  const uint64_t next = timeline_.Lines(from, kMaxWireBytes - 256, lines, kMaxWireFields - 8,
                                        3800, 6);
  reply.fields.emplace_back("first", absl::StrCat(timeline_.first_kept()));
  reply.fields.emplace_back("next", absl::StrCat(next));
  reply.fields.emplace_back("total", absl::StrCat(timeline_.total()));
  for (std::string& line : lines) reply.fields.emplace_back("line", std::move(line));
  return reply;
}

void Daemon::LogFailure(const std::string& line) {
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

uint64_t Daemon::ModulesLoaded() const {
  std::vector<std::pair<std::string, uint64_t>> counters;
  handler_->AppendCounters(counters);
  for (const auto& [key, value] : counters) {
    if (key == "modules_loaded") return value;
  }
  return 0;
}

void Daemon::NoteReceived(MonoTime now) {
  if (burst_start_.has_value()) return;
  burst_start_ = now;
  burst_received_base_ = counters_.received - 1;
  burst_modules_base_ = ModulesLoaded();
  burst_failed_base_ = counters_.failed + counters_.timed_out;
}

void Daemon::LogBurstSummary() {
  if (!burst_start_.has_value()) return;
  const absl::Duration took = Since(*burst_start_, MonoNow());
  std::vector<std::pair<std::string, uint64_t>> counters;
  handler_->AppendCounters(counters);
  bool has_modules = false;
  for (const auto& [key, value] : counters) has_modules |= key == "modules_loaded";
  std::string line = absl::StrCat(coldplug_reported_ ? "settled" : "coldplug", ": ",
                                  counters_.received - burst_received_base_, " events");
  if (has_modules) absl::StrAppend(&line, ", ", ModulesLoaded() - burst_modules_base_, " modules");
  absl::StrAppend(&line, " in ", absl::ToInt64Milliseconds(took), " ms");
  const uint64_t failed = counters_.failed + counters_.timed_out - burst_failed_base_;
  if (failed > 0) absl::StrAppend(&line, "; ", failed, " failed or timed out");
  std::vector<std::string> drops;
  for (const auto& [reason, count] : counters_.dropped) {
    if (count > 0 && reason != "duplicate") drops.push_back(absl::StrCat(reason, "=", count));
  }
  std::sort(drops.begin(), drops.end());
  if (!drops.empty()) absl::StrAppend(&line, "; dropped ", absl::StrJoin(drops, " "));
  if (counters_.probe_errors > 0) absl::StrAppend(&line, "; probe errors ", counters_.probe_errors);
  if (coldplug_reported_) {
    LogInfo("%s", line);
  } else {
    LogNotice("%s", line);
  }
  coldplug_reported_ = true;
  burst_start_.reset();
}

}  // namespace hotring::hotplug

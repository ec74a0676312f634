#include "hotplug/daemon/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/event_parser.h"
#include "io/ops.h"
#include "io/netlink.h"
#include "io/socket.h"

namespace hotring::hotplug {
namespace {

constexpr uint16_t kControlRingGroup = 1;
constexpr size_t kMaxMonitors = 32;

}  // namespace

bool SameAddress(const io::SocketAddress& a, const io::SocketAddress& b) {
  return a.length == b.length && std::memcmp(&a.storage, &b.storage, a.length) == 0;
}

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Bind(
    io::Reactor& reactor, const std::string& socket, EventFlow& flow, Settling& settling,
    const TimelineRecorder& timeline) {
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
  HOTRING_ASSIGN_OR_RETURN(UniqueFd fd, io::BindUnix(SOCK_DGRAM, socket));
  std::string path;
  if (socket[0] != '@') {
    path = socket;
    // Anyone may connect; only uid 0 (or ours) is accepted, checked per datagram, so a refused
    // sender is counted rather than silently kept out by the file mode.
    ::chmod(socket.c_str(), 0666);
  }
  HOTRING_RETURN_IF_ERROR(io::EnablePassCred(fd.get()));
  (void)io::SetReceiveBuffer(fd.get(), 8 << 20);
  // A datagram of up to kMaxWireBytes fits next to the recvmsg header, name and credentials;
  // a longer one still arrives (MSG_TRUNC) and is dropped as oversize. The daemon hands every
  // buffer back before it waits again, so the ring only covers what the kernel fills during
  // one wait: 64 buffers, twice a multishot pass. A ring that runs dry loses nothing (the
  // receive ends with ENOBUFS, the datagrams stay in the socket and the receiver re-arms).
  HOTRING_ASSIGN_OR_RETURN(std::shared_ptr<io::BufferRing> ring,
                           io::BufferRing::Create(reactor, kControlRingGroup, 64,
                                                  kMaxWireBytes + 1024));
  std::unique_ptr<ControlServer> server(new ControlServer(
      reactor, std::move(fd), std::move(path), std::move(ring), flow, settling, timeline));
  settling.SetReplySender(server.get());
  return server;
}

ControlServer::~ControlServer() {
  receiver_.reset();
  if (!path_.empty()) ::unlink(path_.c_str());
}

Task<void> ControlServer::Serve() {
  io::MultishotReceiver& receiver = receiver_.emplace(reactor_, fd_.get(), ring_);
  for (;;) {
    absl::StatusOr<io::Datagram> datagram = co_await receiver.Receive();
    if (!datagram.ok()) {
      LogError("control socket: %s", datagram.status().ToString());
      (void)co_await io::Sleep(reactor_, absl::Milliseconds(10));
      continue;
    }
    HandleDatagram(*datagram);
  }
}

bool ControlServer::ReleaseIdleMemory() {
  return receiver_.has_value() && receiver_->ReleaseIdleMemory();
}

void ControlServer::HandleDatagram(const io::Datagram& datagram) {
  if (!datagram.credentials.has_value()) {
    flow_.Drop(DropReason::kNoCredentials, "control datagram without credentials");
    return;
  }
  const ucred& cred = *datagram.credentials;
  if (cred.uid != 0 && cred.uid != ::getuid()) {
    flow_.Drop(DropReason::kUnprivileged,
               absl::StrCat("control datagram from pid ", cred.pid, " uid ", cred.uid));
    return;
  }
  if (datagram.truncated) {
    flow_.Drop(DropReason::kOversize,
               absl::StrCat("control datagram over ", kMaxWireBytes, " bytes"));
    return;
  }
  absl::StatusOr<WireMessage> message = ParseWireMessage(datagram.payload);
  if (!message.ok()) {
    const std::optional<DropReason> reason = DropReasonOf(message.status());
    flow_.Drop(reason.value_or(DropReason::kTruncated), message.status().message());
    return;
  }
  switch (message->type) {
    case WireType::kEvent: {
      const uint32_t cookie = message->cookie;
      const bool want_ack = (message->flags & kWireFlagWantAck) != 0;
      absl::StatusOr<Event> event = EventFromMessage(std::move(*message));
      if (!event.ok()) {
        const std::optional<DropReason> reason = DropReasonOf(event.status());
        flow_.Drop(reason.value_or(DropReason::kBadVariable), event.status().message());
        return;
      }
      flow_.AcceptSent(std::move(*event), AckTarget{datagram.peer, cookie}, want_ack);
      return;
    }
    case WireType::kControlRequest:
      HandleRequest(std::move(*message), datagram.peer);
      return;
    case WireType::kAck:
    case WireType::kControlReply:
    case WireType::kMonitorEvent:
      flow_.Drop(DropReason::kBadType, absl::StrCat("a daemon does not take '",
                                                    WireTypeName(message->type), "' messages"));
      return;
  }
}

void ControlServer::HandleRequest(WireMessage message, const io::SocketAddress& from) {
  absl::StatusOr<ControlRequest> request = ControlRequestFromMessage(std::move(message));
  if (!request.ok()) {
    const std::optional<DropReason> reason = DropReasonOf(request.status());
    flow_.Drop(reason.value_or(DropReason::kBadField), request.status().message());
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
      Reply(from, reply);
      flow_.RequestStop("control exit", StopMode::kDrain);
      return;
    case ControlCommand::kReload: {
      const absl::Status reloaded = flow_.Reload();
      reply.ok = reloaded.ok();
      reply.message = reloaded.ok() ? "reloaded" : std::string(reloaded.message());
      LogNotice("reload requested: %s", reloaded.ok() ? "ok" : reloaded.ToString());
      break;
    }
    case ControlCommand::kSettle:
      settling_.Request(*request, from);  // answered by Settling, now or later
      return;
    case ControlCommand::kMonitor:
      Subscribe(from, request->cookie, reply);
      break;
    case ControlCommand::kUnmonitor:
      Unsubscribe(from);
      break;
    case ControlCommand::kPending:
      reply = flow_.PendingReply(request->cookie);
      break;
    case ControlCommand::kTimeline:
      reply = TimelineReply(*request);
      break;
  }
  Reply(from, reply);
}

void ControlServer::Subscribe(const io::SocketAddress& from, uint32_t cookie,
                              ControlReply& reply) {
  auto it = std::find_if(monitors_.begin(), monitors_.end(),
                         [&](const Monitor& m) { return SameAddress(m.address, from); });
  if (it != monitors_.end()) {
    it->cookie = cookie;  // a re-subscription (monitors renew periodically)
  } else if (monitors_.size() >= kMaxMonitors) {
    reply.ok = false;
    reply.message = "too many monitors";
  } else {
    monitors_.push_back(Monitor{from, cookie});
    LogInfo("monitor subscribed (%d now)", monitors_.size());
  }
}

void ControlServer::Unsubscribe(const io::SocketAddress& from) {
  monitors_.erase(std::remove_if(monitors_.begin(), monitors_.end(),
                                 [&](const Monitor& m) { return SameAddress(m.address, from); }),
                  monitors_.end());
}

ControlReply ControlServer::StatusReply(uint32_t cookie) const {
  ControlReply reply;
  reply.cookie = cookie;
  flow_.AppendStatus(reply.fields);
  AppendStatus(reply.fields);
  settling_.AppendStatus(reply.fields);
  reply.fields.emplace_back("timeline_records", absl::StrCat(timeline_.total()));
  reply.fields.emplace_back("timeline_write_errors", absl::StrCat(timeline_.write_errors()));
  return reply;
}

void ControlServer::AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const {
  fields.emplace_back("acks_sent", absl::StrCat(acks_sent_));
  fields.emplace_back("monitors", absl::StrCat(monitors_.size()));
  fields.emplace_back("monitor_drops", absl::StrCat(monitor_drops_));
  fields.emplace_back("reply_failures", absl::StrCat(reply_failures_));
}

ControlReply ControlServer::TimelineReply(const ControlRequest& request) const {
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
  const uint64_t next =
      timeline_.Lines(from, kMaxWireBytes - 256, lines, kMaxWireFields - 8, 3800, 6);
  reply.fields.emplace_back("first", absl::StrCat(timeline_.first_kept()));
  reply.fields.emplace_back("next", absl::StrCat(next));
  reply.fields.emplace_back("total", absl::StrCat(timeline_.total()));
  for (std::string& line : lines) reply.fields.emplace_back("line", std::move(line));
  return reply;
}

void ControlServer::Reply(const io::SocketAddress& to, const ControlReply& reply) {
  Send(to, ControlReplyMessage(reply), false);
}

void ControlServer::Send(const io::SocketAddress& to, const WireMessage& message,
                         bool is_monitor) {
  const std::string bytes = EncodeWireMessage(message);
  if (::sendto(fd_.get(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL, to.get(),
               to.length) == static_cast<ssize_t>(bytes.size())) {
    return;
  }
  const int err = errno;
  if (is_monitor) {
    ++monitor_drops_;
    if (err == ECONNREFUSED || err == ENOENT) {
      Unsubscribe(to);
      LogInfo("monitor gone; %d left", monitors_.size());
    }
    return;
  }
  ++reply_failures_;
  LogDebug("reply not sent: %s", std::strerror(err));
}

void ControlServer::SendAck(const AckTarget& target, std::optional<uint64_t> seqnum,
                            EventResult result) {
  Ack ack;
  ack.cookie = target.cookie;
  ack.seqnum = seqnum;
  ack.result = result;
  Send(target.address, AckMessage(ack), false);
  ++acks_sent_;
}

void ControlServer::NotifyMonitors(const Event& event, EventResult result,
                                   absl::Duration duration) {
  if (monitors_.empty()) return;
  MonitorEvent monitor_event;
  monitor_event.event = event;
  monitor_event.result = result;
  monitor_event.duration_us = static_cast<uint64_t>(absl::ToInt64Microseconds(duration));
  // Copy: a failed send may remove a monitor from the list.
  const std::vector<Monitor> monitors = monitors_;
  for (const Monitor& monitor : monitors) {
    Send(monitor.address, MonitorEventMessage(monitor_event, monitor.cookie), true);
  }
}

}  // namespace hotring::hotplug

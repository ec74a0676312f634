#include "hotplug/daemon/netlink_source.h"

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/event_parser.h"
#include "hotplug/sysfs.h"
#include "io/netlink.h"
#include "io/ops.h"

namespace hotring::hotplug {
namespace {

constexpr uint16_t kNetlinkRingGroup = 2;
// Lets an overrun storm pass before the sysfs walk, so one storm costs one resync.
constexpr absl::Duration kResyncDelay = absl::Milliseconds(100);

}  // namespace

absl::StatusOr<std::unique_ptr<NetlinkSource>> NetlinkSource::Open(io::Reactor& reactor,
                                                                   Options options,
                                                                   EventFlow& flow,
                                                                   TaskScope& scope) {
  std::unique_ptr<NetlinkSource> source(
      new NetlinkSource(reactor, std::move(options), flow, scope));
  Options& o = source->options_;
  io::UeventListenerOptions listen;
  listen.receive_buffer = o.receive_buffer;
  const bool inherited = o.inherited.valid();
  absl::StatusOr<io::UeventListener> listener =
      inherited ? io::AdoptUeventListener(std::move(o.inherited)) : io::OpenUeventListener(listen);
  if (!listener.ok()) {
    return absl::Status(listener.status().code(),
                        absl::StrCat("kernel uevent socket: ", listener.status().message(),
                                     " (use --no-netlink to run without kernel events)"));
  }
  LogInfo("netlink: listening on group 1, receive buffer %d bytes%s%s", listener->receive_buffer,
          listener->receive_buffer_forced ? " (forced)" : "", inherited ? " (inherited)" : "");
  source->fd_ = std::move(listener->fd);
  source->inherited_ = inherited;
  // The ring covers what the kernel fills during one wait (the daemon hands every buffer back
  // before it waits again): 32 buffers, one multishot pass. Each is a page a burst keeps
  // resident (4 KiB, sized for the largest uevent the kernel sends), and 64 of them put a
  // 100,000-uevent burst above a small board's 4 MiB; a burst that drains a full socket
  // re-arms the receive once per 32 uevents. Bigger rings also cost CPU: the kernel takes
  // buffers in ring order, so each copy lands in memory not touched since the last lap (1024 x
  // 4 KiB instead of 128 x 4 KiB cost about 10% more daemon CPU per event in a netlink burst).
  HOTRING_ASSIGN_OR_RETURN(source->ring_,
                           io::BufferRing::Create(reactor, kNetlinkRingGroup, 32, 4096));
  if (o.trust_userspace) {
    LogWarning("--netlink-trust-userspace: accepting uevents from ANY sender on the netlink "
               "socket; for tests in a private network namespace only");
  }
  return source;
}

Task<void> NetlinkSource::Receive() {
  io::MultishotReceiver& receiver = receiver_.emplace(reactor_, fd_.get(), ring_);
  bool in_storm = false;
  for (;;) {
    // At the --max-pending bound, stop reading. The receive ring may still fill behind us;
    // those few are taken over the bound on resume.
    if (flow_.Full()) {
      ++paused_;
      LogDebug("netlink: --max-pending reached: reading paused");
      waiting_for_room_ = true;
      do {
        co_await room_.Wait();
      } while (flow_.Full());
      waiting_for_room_ = false;
    }
    absl::StatusOr<io::Datagram> datagram = co_await receiver.Receive();
    if (!datagram.ok()) {
      if (io::IsSocketOverrun(datagram.status())) {
        ++overruns_;
        if (!in_storm) {
          LogWarning("netlink: receive queue overrun (ENOBUFS): the kernel dropped uevents; "
                     "re-synchronising from %s", options_.sysfs_root);
          in_storm = true;
        }
        if (!resync_pending_) {
          resync_pending_ = true;
          scope_.Spawn(ResyncLater());
        }
        continue;
      }
      LogError("netlink: %s", datagram.status().ToString());
      (void)co_await io::Sleep(reactor_, absl::Milliseconds(10));
      continue;
    }
    in_storm = resync_pending_;
    Handle(*datagram);
  }
}

void NetlinkSource::Handle(const io::Datagram& datagram) {
  const io::NetlinkOrigin origin = io::CheckNetlinkOrigin(datagram.peer, datagram.credentials);
  if (origin != io::NetlinkOrigin::kKernel && !options_.trust_userspace) {
    flow_.Drop(io::NetlinkDropReason(origin), "uevent not sent by the kernel");
    return;
  }
  if (datagram.truncated) {
    flow_.Drop(DropReason::kOversize, "netlink datagram larger than a ring buffer");
    return;
  }
  absl::StatusOr<Event> event = ParseKernelUevent(datagram.payload);
  if (!event.ok()) {
    const std::optional<DropReason> reason = DropReasonOf(event.status());
    flow_.Drop(reason.value_or(DropReason::kTruncated), event.status().message());
    return;
  }
  ++received_;
  flow_.AcceptKernel(std::move(*event));
}

void NetlinkSource::RoomFreed() {
  if (waiting_for_room_) room_.NotifyAll();
}

bool NetlinkSource::ReleaseIdleMemory() {
  return receiver_.has_value() && receiver_->ReleaseIdleMemory();
}

Task<void> NetlinkSource::ResyncLater() {
  (void)co_await io::Sleep(reactor_, kResyncDelay);
  resync_pending_ = false;
  Resync();
}

void NetlinkSource::Resync() {
  ++resyncs_;
  absl::StatusOr<std::vector<Event>> events = SynthesizeAddEvents(options_.sysfs_root);
  if (!events.ok()) {
    LogError("resync: %s", events.status().ToString());
    return;
  }
  // A device whose event is still queued or running gets handled anyway: skipped.
  const absl::flat_hash_set<std::string> live = flow_.LiveDevpaths();
  size_t synthesized = 0;
  for (Event& event : *events) {
    if (live.contains(event.devpath)) continue;
    ++synthesized;
    flow_.AcceptResync(std::move(event));
  }
  resync_events_ += synthesized;
  LogNotice("resync: synthesized %d add events from %s", synthesized, options_.sysfs_root);
}

void NetlinkSource::AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const {
  fields.emplace_back("netlink_received", absl::StrCat(received_));
  fields.emplace_back("netlink_overruns", absl::StrCat(overruns_));
  fields.emplace_back("netlink_paused", absl::StrCat(paused_));
  fields.emplace_back("resyncs", absl::StrCat(resyncs_));
  fields.emplace_back("resync_events", absl::StrCat(resync_events_));
}

}  // namespace hotring::hotplug

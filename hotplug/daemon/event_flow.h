// What the daemon's parts (the netlink source, the control server, settling) ask of the event
// flow, and the few types they share with it. The Daemon implements EventFlow; its parts hold
// a reference to it and never see its reorderer, scheduler or event records.
#ifndef HOTRING_HOTPLUG_DAEMON_EVENT_FLOW_H_
#define HOTRING_HOTPLUG_DAEMON_EVENT_FLOW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "hotplug/drop_reason.h"
#include "hotplug/event.h"
#include "hotplug/wire.h"
#include "io/socket.h"

namespace hotring::hotplug {

// A client of the control socket to tell something: its address and its request's cookie.
struct AckTarget {
  io::SocketAddress address;
  uint32_t cookie = 0;
};

// True when two socket addresses are the same client.
[[nodiscard]] bool SameAddress(const io::SocketAddress& a, const io::SocketAddress& b);

// Sends replies, acks and monitor datagrams to clients (the control server, whose socket it
// is). Never blocks: a client that cannot take a datagram loses it (counted).
class ReplySender {
 public:
  virtual ~ReplySender() = default;
  virtual void Reply(const io::SocketAddress& to, const ControlReply& reply) = 0;
};

// How a stop treats what was accepted and has not started.
enum class StopMode {
  // Finish everything: held events are released, queued ones run (SIGTERM, `control exit`).
  kDrain,
  // udevd's exit: events already running finish, held and queued ones are discarded (counted,
  // never handled), as systemd-udevd 252 does on `udevadm control --exit`.
  kFinishRunning,
};

// The event flow as the servers see it.
class EventFlow {
 public:
  virtual ~EventFlow() = default;
  // Takes an event a client sent (validated); `ack`: whom to tell when it is done, if asked.
  // Dropped (queue_full) at --max-pending.
  virtual void AcceptSent(Event&& event, const AckTarget& ack, bool want_ack) = 0;
  // Takes a kernel uevent (validated). Never dropped for a full queue: the netlink source
  // stops reading at the bound instead.
  virtual void AcceptKernel(Event&& event) = 0;
  // Takes an add event synthesized from sysfs after an overrun (dropped at --max-pending).
  virtual void AcceptResync(Event&& event) = 0;
  // Held + queued + running has reached --max-pending.
  [[nodiscard]] virtual bool Full() const = 0;
  // The DEVPATHs of the events queued or running now.
  [[nodiscard]] virtual absl::flat_hash_set<std::string> LiveDevpaths() const = 0;
  // Counts (and logs the first few of) an input dropped for `reason` (a DropReasonName, or
  // the netlink origin checks' names).
  virtual void Drop(absl::string_view reason, absl::string_view detail) = 0;
  void Drop(DropReason reason, absl::string_view detail) { Drop(DropReasonName(reason), detail); }
  // Stops reading input and ends the daemon once what `mode` keeps is done.
  virtual void RequestStop(absl::string_view why, StopMode mode) = 0;
  // `control reload`: the stages re-read their configuration.
  virtual absl::Status Reload() = 0;
  // Nothing held, queued or running.
  [[nodiscard]] virtual bool Idle() const = 0;
  // The flow's counters and state for `control status`, in order.
  virtual void AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const = 0;
  // What is pending and where, for a settle that timed out (`control pending`).
  [[nodiscard]] virtual ControlReply PendingReply(uint32_t cookie) const = 0;
  // A settle request found the daemon settled: the burst that just ended gets its summary line.
  virtual void BurstSettled() = 0;
  // While stopped, events are still received, held and queued, and none starts (`udevadm
  // control --stop-exec-queue`); starting again runs what waits (`--start-exec-queue`).
  virtual void SetExecQueueStopped(bool stopped) = 0;
  // How many events may run at once from now on (1..4096); running ones are not stopped.
  virtual void SetChildrenMax(size_t children_max) = 0;
  // Sets a global property for the events started from now on (GlobalProperties in
  // hotplug/handler.h), or unsets it when `value` is nullopt. ResourceExhausted beyond 256
  // properties.
  virtual absl::Status SetGlobalProperty(absl::string_view key,
                                         std::optional<absl::string_view> value) = 0;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_EVENT_FLOW_H_

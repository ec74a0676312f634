// ControlServer: the daemon's control socket (a Unix datagram socket, /run/hotring/control by
// default). It receives events from `hotring send` and requests from the other commands
// (status, exit, reload, settle, monitor, pending, timeline), checks each sender's credentials,
// and answers: acks when an event is done, replies, and handled events to subscribed monitors.
// Owns the socket, its receive ring and the monitor list; the event flow is borrowed.
#ifndef HOTRING_HOTPLUG_DAEMON_CONTROL_SERVER_H_
#define HOTRING_HOTPLUG_DAEMON_CONTROL_SERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/idle_memory.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "hotplug/daemon/event_flow.h"
#include "hotplug/daemon/settling.h"
#include "hotplug/event.h"
#include "hotplug/timeline.h"
#include "hotplug/wire.h"
#include "io/buffer_ring.h"
#include "io/multishot.h"
#include "io/reactor.h"

namespace hotring::hotplug {

class ControlServer final : public ReplySender {
 public:
  // Binds `socket` (a path, whose directory is made, or "@name" for an abstract socket): the
  // bind is the lock against a second daemon on the same socket.
  static absl::StatusOr<std::unique_ptr<ControlServer>> Bind(io::Reactor& reactor,
                                                             const std::string& socket,
                                                             EventFlow& flow, Settling& settling,
                                                             const TimelineRecorder& timeline);
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;
  ~ControlServer() override;

  // Receives and answers until the task is dropped.
  Task<void> Serve();

  // Tells `target` that its event is done.
  void SendAck(const AckTarget& target, std::optional<uint64_t> seqnum, EventResult result);
  // Tells the subscribed monitors that `event` was handled.
  void NotifyMonitors(const Event& event, EventResult result, absl::Duration duration);
  [[nodiscard]] bool has_monitors() const { return !monitors_.empty(); }
  void Reply(const io::SocketAddress& to, const ControlReply& reply) override;
  // Gives the receive ring's buffer pages back while idle; true when it could.
  bool ReleaseIdleMemory();

  // This server's counters for `control status`, in order.
  void AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const;

 private:
  struct Monitor {
    io::SocketAddress address;
    uint32_t cookie = 0;
  };

  ControlServer(io::Reactor& reactor, UniqueFd fd, std::string path,
                std::shared_ptr<io::BufferRing> ring, EventFlow& flow, Settling& settling,
                const TimelineRecorder& timeline)
      : reactor_(reactor),
        fd_(std::move(fd)),
        path_(std::move(path)),
        ring_(std::move(ring)),
        flow_(flow),
        settling_(settling),
        timeline_(timeline) {}
  void HandleDatagram(const io::Datagram& datagram);
  void HandleRequest(WireMessage message, const io::SocketAddress& from);
  [[nodiscard]] ControlReply StatusReply(uint32_t cookie) const;
  [[nodiscard]] ControlReply TimelineReply(const ControlRequest& request) const;
  void Subscribe(const io::SocketAddress& from, uint32_t cookie, ControlReply& reply);
  void Unsubscribe(const io::SocketAddress& from);
  void Send(const io::SocketAddress& to, const WireMessage& message, bool is_monitor);

  io::Reactor& reactor_;
  UniqueFd fd_;
  std::string path_;  // unlinked when the server goes (empty for abstract names)
  std::shared_ptr<io::BufferRing> ring_;
  std::optional<io::MultishotReceiver> receiver_;  // made by Serve
  EventFlow& flow_;
  Settling& settling_;
  const TimelineRecorder& timeline_;
  std::vector<Monitor> monitors_;
  uint64_t acks_sent_ = 0;
  uint64_t monitor_drops_ = 0;    // monitor datagrams that could not be queued
  uint64_t reply_failures_ = 0;   // acks and replies the kernel refused to queue
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_CONTROL_SERVER_H_

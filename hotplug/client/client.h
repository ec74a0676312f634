// ControlClient: the tools' end of the daemon's control socket (send, settle, control,
// monitor). An autobound datagram socket that sends to the daemon's name and accepts a reply
// only from that name and from uid 0 or our own uid, so no other local process can forge one.
#ifndef HOTRING_HOTPLUG_CLIENT_CLIENT_H_
#define HOTRING_HOTPLUG_CLIENT_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "hotplug/client/retry_schedule.h"
#include "hotplug/wire.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::hotplug {

// Where the daemon listens unless told otherwise.
inline constexpr absl::string_view kDefaultSocket = "/run/hotring/control";

class ControlClient {
 public:
  static absl::StatusOr<ControlClient> Open(absl::string_view socket_name);

  // Sends one message without blocking. Unavailable when no daemon listens (ENOENT,
  // ECONNREFUSED); ResourceExhausted when one does but its queue is full (EAGAIN). Callers
  // retry either, but only the first means there is no daemon.
  absl::Status Send(const WireMessage& message);

  // Waits up to `timeout` for a message from the daemon with `cookie`; other datagrams are
  // ignored. DeadlineExceeded when none came.
  Task<absl::StatusOr<WireMessage>> Receive(io::Reactor& reactor, uint32_t cookie,
                                            absl::Duration timeout);

  // Sends `request` and waits for its reply until `timeout`, on a RetrySchedule: after a send
  // the kernel queued, it waits up to `retransmit` for the reply and then sends again; after a
  // send that reached no daemon (none bound yet, or its queue full) it sends again after a
  // short backoff (1 ms, doubling up to 50 ms), since nothing can answer that datagram.
  Task<absl::StatusOr<WireMessage>> Request(io::Reactor& reactor, WireMessage request,
                                            absl::Duration timeout, absl::Duration retransmit);

  [[nodiscard]] const std::string& socket_name() const { return name_; }
  [[nodiscard]] int fd() const { return fd_.get(); }

 private:
  ControlClient(std::string name, io::SocketAddress daemon, UniqueFd fd)
      : name_(std::move(name)), daemon_(daemon), fd_(std::move(fd)) {}
  [[nodiscard]] bool FromDaemon(const io::ReceivedMessage& message) const;
  std::string name_;
  io::SocketAddress daemon_;
  UniqueFd fd_;
};

// How a ControlClient::Send status maps onto the retry schedule: queued, no daemon, queue
// full; any other error is returned as it is (it will not go away by sending again).
absl::StatusOr<SendOutcome> OutcomeOf(const absl::Status& sent);

// One control request, one reply, on a reactor of its own (for the tools).
absl::StatusOr<ControlReply> Ask(absl::string_view socket, ControlRequest request,
                                 absl::Duration timeout);

// Waits until the daemon on `socket` has nothing held, queued or running. OK also when no
// daemon listens (nothing can be pending); DeadlineExceeded after `timeout`.
absl::Status Settle(absl::string_view socket, absl::Duration timeout);

// The timeline lines the daemon on `socket` kept (`report`), fetched page by page (one
// datagram each), each ending in a newline; without the format's header line.
absl::StatusOr<std::string> FetchTimelineLines(absl::string_view socket);

// Waits until every condition ("KEY=VALUE", as `settle --for` takes them) was met by a handled
// device. Unavailable when no daemon listens (then no device will be handled by one);
// DeadlineExceeded after `timeout`; InvalidArgument when the daemon refused a condition.
absl::Status SettleFor(absl::string_view socket, const std::vector<std::string>& conditions,
                       absl::Duration timeout);

// SettleFor that also says which device met each condition: its DEVNAME (relative to /dev, ""
// when it has none), one per condition in their order.
absl::StatusOr<std::vector<std::string>> SettleForDevices(
    absl::string_view socket, const std::vector<std::string>& conditions, absl::Duration timeout);

// A random request cookie (never 0).
[[nodiscard]] uint32_t NewCookie();

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLIENT_CLIENT_H_

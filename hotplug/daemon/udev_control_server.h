// UdevControlServer: udev 252's control socket (/run/udev/control), so that Debian's own
// `udevadm control` and `udevadm settle` (and anything built on libudev) drive hotring as they
// drive systemd-udevd. A SOCK_SEQPACKET socket; one connection at a time, as udevd takes them:
// accept (peer uid 0 only), wait until every kernel uevent queued before the connection was
// read (what makes `udevadm settle`'s ping meaningful: a queued event is pending, so
// /run/udev/queue exists, before the ping is answered), then act on each message until END or
// EXIT and hang up, which is the only answer a client gets. Messages (hotplug/udev/
// control_message.h): SET_LOG_LEVEL, STOP/START_EXEC_QUEUE, RELOAD, SET_ENV, SET_CHILDREN_MAX,
// PING, EXIT. Owns the listening socket; the event flow is borrowed. The socket file is left
// when the server goes, as udevd leaves it (libudev subscribes to udevd's events while it
// exists, also between the initramfs daemon's exit and the real root's start).
#ifndef HOTRING_HOTPLUG_DAEMON_UDEV_CONTROL_SERVER_H_
#define HOTRING_HOTPLUG_DAEMON_UDEV_CONTROL_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "hotplug/daemon/event_flow.h"
#include "hotplug/udev/control_message.h"
#include "io/reactor.h"

namespace hotring::hotplug {

class UdevControlServer {
 public:
  // Binds `path` (making its directory, 0755, when missing) and listens. A socket there that
  // answers (a running udevd or another daemon) is an error; a stale one is replaced.
  static absl::StatusOr<std::unique_ptr<UdevControlServer>> Bind(io::Reactor& reactor,
                                                                 const std::string& path,
                                                                 EventFlow& flow);
  UdevControlServer(const UdevControlServer&) = delete;
  UdevControlServer& operator=(const UdevControlServer&) = delete;

  // The kernel uevent socket whose backlog a connection waits for (-1: none).
  void SetNetlinkFd(int fd) { netlink_fd_ = fd; }

  // Accepts and converses until EXIT (then the listening socket is closed: later clients are
  // refused, as by an exiting udevd) or until the task is dropped.
  Task<void> Serve();

  // Counters for `control status`, in order.
  void AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const;

 private:
  UdevControlServer(io::Reactor& reactor, UniqueFd fd, EventFlow& flow)
      : reactor_(reactor), fd_(std::move(fd)), flow_(flow) {}
  // One client: its messages, until it has sent everything, EXIT, a bad message or silence.
  Task<void> Converse(UniqueFd connection);
  // Resumes once every uevent the kernel queued before the call was handed to the flow (in the
  // socket or in the receive ring): then a ping is answered, as udevd answers it.
  Task<void> AwaitUeventsRead();
  // Acts on one message; false when the conversation ends (END, EXIT).
  bool Act(const udev::ControlMessage& message);
  void SetEnv(const std::string& assignment);

  io::Reactor& reactor_;
  UniqueFd fd_;  // the listening socket; closed on EXIT
  EventFlow& flow_;
  int netlink_fd_ = -1;
  bool exiting_ = false;
  uint64_t connections_ = 0;
  uint64_t messages_ = 0;  // requests (END not counted)
  uint64_t refused_ = 0;  // connections or messages from another uid, bad messages, silence
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_UDEV_CONTROL_SERVER_H_

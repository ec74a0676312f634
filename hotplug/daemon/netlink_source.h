// NetlinkSource: the kernel's uevents, from the NETLINK_KOBJECT_UEVENT socket (group 1). Checks
// that each came from the kernel, parses it and hands it to the event flow. At --max-pending it
// stops reading (the uevents wait in the socket's receive buffer, forced large for this, where
// dropping them would lose them for good). An overrun (ENOBUFS: the kernel dropped uevents)
// is counted, said once per storm, and answered by one re-synchronisation from sysfs: an add
// event for every device not already pending. Owns the socket, its receive ring and receiver.
#ifndef HOTRING_HOTPLUG_DAEMON_NETLINK_SOURCE_H_
#define HOTRING_HOTPLUG_DAEMON_NETLINK_SOURCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/notifier.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "core/unique_fd.h"
#include "hotplug/daemon/event_flow.h"
#include "io/buffer_ring.h"
#include "io/multishot.h"
#include "io/reactor.h"

namespace hotring::hotplug {

class NetlinkSource {
 public:
  struct Options {
    int receive_buffer = 128 << 20;
    // An inherited listener (--netlink-fd) to take over instead of opening one.
    UniqueFd inherited;
    bool trust_userspace = false;  // tests in a private network namespace only
    std::string sysfs_root = "/sys";  // what a resync walks
  };
  // `scope`: where the delayed resync runs (the daemon's service tasks).
  static absl::StatusOr<std::unique_ptr<NetlinkSource>> Open(io::Reactor& reactor,
                                                             Options options, EventFlow& flow,
                                                             TaskScope& scope);
  NetlinkSource(const NetlinkSource&) = delete;
  NetlinkSource& operator=(const NetlinkSource&) = delete;

  // Receives until the task is dropped.
  Task<void> Receive();
  // The flow went below --max-pending: a paused reader reads on.
  void RoomFreed();
  // Gives the receive ring's pages back while idle; true when it could.
  bool ReleaseIdleMemory();

  [[nodiscard]] int fd() const { return fd_.get(); }
  [[nodiscard]] bool inherited() const { return inherited_; }
  // Counters for `control status`, in order.
  void AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const;

 private:
  NetlinkSource(io::Reactor& reactor, Options options, EventFlow& flow, TaskScope& scope)
      : reactor_(reactor), options_(std::move(options)), flow_(flow), scope_(scope) {}
  void Handle(const io::Datagram& datagram);
  Task<void> ResyncLater();
  void Resync();

  io::Reactor& reactor_;
  Options options_;
  EventFlow& flow_;
  TaskScope& scope_;
  UniqueFd fd_;
  bool inherited_ = false;
  std::shared_ptr<io::BufferRing> ring_;
  std::optional<io::MultishotReceiver> receiver_;  // made by Receive
  Notifier room_;
  bool waiting_for_room_ = false;
  bool resync_pending_ = false;
  uint64_t received_ = 0;
  uint64_t overruns_ = 0;       // ENOBUFS: the kernel dropped uevents
  uint64_t paused_ = 0;         // times the reader waited for --max-pending room
  uint64_t resyncs_ = 0;        // sysfs re-synchronisations after overruns
  uint64_t resync_events_ = 0;  // add events synthesized by them
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_NETLINK_SOURCE_H_

// Settling: who waits for the daemon, and when they are answered.
//  - `settle`: answered once nothing is held, queued or running and no kernel uevent is left
//    unread on the netlink socket.
//  - `settle --for KEY=VALUE...`: answered once devices meeting every condition were handled,
//    at once when remembered devices already do. The daemon remembers the last handled state
//    of recent devices (HandledDevices) and probes a block device's superblock or its disk's
//    partition table when a LABEL=/UUID=/PARTUUID=/PARTLABEL= condition needs it.
// Owns the waiting settlers and the handled-devices record; replies go through a ReplySender.
#ifndef HOTRING_HOTPLUG_DAEMON_SETTLING_H_
#define HOTRING_HOTPLUG_DAEMON_SETTLING_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/clock.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "hotplug/daemon/event_flow.h"
#include "hotplug/daemon/handled_devices.h"
#include "hotplug/event.h"
#include "hotplug/wire.h"
#include "io/reactor.h"

namespace hotring::hotplug {

class Settling {
 public:
  struct Options {
    size_t handled_devices_max = 4096;  // handled events remembered for `settle --for`
    std::string probe_dev_root = "/dev";  // where DEVNAME nodes are, for LABEL=/UUID= probes
    std::string sysfs_root = "/sys";      // a disk's logical block size, for its GPT
  };

  // `netlink_fd`: the kernel uevent socket to see drained before a plain settle is answered
  // (-1: none). `scope`: where the drain check runs (the daemon's service tasks).
  Settling(Options options, io::Reactor& reactor, EventFlow& flow, TaskScope& scope)
      : options_(std::move(options)),
        reactor_(reactor),
        flow_(flow),
        scope_(scope),
        handled_(options_.handled_devices_max) {}
  Settling(const Settling&) = delete;
  Settling& operator=(const Settling&) = delete;

  // Replies go here; set once, before any request (the control server, which calls us).
  void SetReplySender(ReplySender* sender) { sender_ = sender; }
  void SetNetlinkFd(int fd) { netlink_fd_ = fd; }

  // A `settle` request (with FOR= options: `settle --for`).
  void Request(const ControlRequest& request, const io::SocketAddress& from);
  // An event was handled: remember the device and tell the `settle --for` requests. The event
  // is moved in (the record keeps what it needs of it).
  void Handled(Event&& event);
  // The flow became idle: answer the plain settlers once netlink is drained.
  void Idle();

  // Counters for `control status`, in order.
  void AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const;
  [[nodiscard]] uint64_t probe_errors() const { return probe_errors_; }

 private:
  // A `settle --for` request waiting for its devices.
  struct DeviceSettler {
    AckTarget target;
    SettleWaiter waiter;
    MonoTime expires;  // the requester's TIMEOUT_MS: forgotten after it (it stopped waiting)
  };

  void SettleFor(const ControlRequest& request, const io::SocketAddress& from);
  void OfferToDeviceSettlers(HandledDevice& device);
  // The reply to a `settle --for` whose conditions are all met, with the devices that met them.
  void SendSettled(const io::SocketAddress& to, uint32_t cookie, const SettleWaiter& waiter);
  void AnswerSettlers();
  // Answers the plain settlers once no uevent is left unread on the netlink socket.
  Task<void> SettleNetlink();
  // Reads the device's superblock for LABEL/UUID (once per handling).
  void Probe(HandledDevice& device);
  // A partition's entry (PARTUUID, PARTLABEL), read from its parent disk's table.
  void ProbePartition(HandledDevice& device);
  // Counts a probe that failed (a malformed superblock or table, a read error); logs the first.
  void ProbeFailed(absl::string_view path, const HandledDevice& device,
                   const absl::Status& status);
  void Reply(const io::SocketAddress& to, const ControlReply& reply);

  Options options_;
  io::Reactor& reactor_;
  EventFlow& flow_;
  TaskScope& scope_;
  ReplySender* sender_ = nullptr;
  int netlink_fd_ = -1;
  HandledDevices handled_;
  std::vector<AckTarget> settlers_;
  std::vector<DeviceSettler> device_settlers_;
  bool drain_check_running_ = false;  // SettleNetlink is running
  uint64_t probe_errors_ = 0;  // LABEL/UUID probes that failed or found a malformed superblock
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_SETTLING_H_

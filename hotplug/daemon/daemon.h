// Daemon: the event flow of `hotring daemon`, on one thread. Events arrive from the kernel
// (NetlinkSource) and from clients (ControlServer); they are validated, put back in SEQNUM order
// (Reorderer: one timer for the oldest hold), queued by device (Scheduler: devpath blocking,
// children_max) and handed to the handler chain; when one is done the daemon acks its sender,
// tells monitors, rebroadcasts it, records it for settling and starts what it unblocked.
// The sources, the control server and settling are its parts; it owns them, the reactor, the
// signalfd, the reorderer, the scheduler, the handler chain, the event records and every task
// that runs on them.
#ifndef HOTRING_HOTPLUG_DAEMON_DAEMON_H_
#define HOTRING_HOTPLUG_DAEMON_DAEMON_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/idle_memory.h"
#include "core/notifier.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "core/unique_fd.h"
#include "hotplug/daemon/burst_log.h"
#include "hotplug/daemon/control_server.h"
#include "hotplug/daemon/event_flow.h"
#include "hotplug/daemon/netlink_source.h"
#include "hotplug/daemon/settling.h"
#include "hotplug/daemon/udev_control_server.h"
#include "hotplug/daemon/udev_queue_file.h"
#include "hotplug/drop_reason.h"
#include "hotplug/event.h"
#include "hotplug/handler.h"
#include "hotplug/reorderer.h"
#include "hotplug/scheduler.h"
#include "hotplug/timeline.h"
#include "hotplug/wire.h"
#include "io/reactor.h"
#include "io/signals.h"

namespace hotring::hotplug {

struct DaemonOptions {
  std::string socket = "/run/hotring/control";  // a path, or "@name" for an abstract socket
  // First SEQNUM expected. Unset: /sys/kernel/uevent_seqnum + 1 when `seqnum_file` is readable
  // and netlink is on (kernel numbering), else the first SEQNUM seen.
  std::optional<uint64_t> expect_seqnum;
  std::string seqnum_file = "/sys/kernel/uevent_seqnum";
  absl::Duration reorder_timeout = absl::Seconds(5);
  size_t children_max = 0;      // 0: 8 + 2 x CPUs
  // Held + queued + running, about 1 KiB each. At the bound the netlink receiver stops reading
  // (the uevents wait in the socket's receive buffer, nothing is lost) and events from the
  // control socket are dropped (queue_full; `send --wait` retransmits). 4,096: a few MiB at
  // worst on a small board, more than the devices a coldplug announces at once.
  size_t max_pending = 4096;
  // Kernel uevents.
  bool netlink = true;
  int netlink_rcvbuf = 128 << 20;
  // An inherited listener (--netlink-fd) to take over instead of opening one: a boot's init
  // opens it before starting the daemon and writes coldplug's uevent files meanwhile, so the
  // first driver loads need not wait for the daemon's start-up. Used only with `netlink`.
  UniqueFd netlink_fd;
  bool netlink_trust_userspace = false;  // tests in a private network namespace only
  std::string sysfs_root = "/sys";       // the ENOBUFS resync walks this tree
  uint32_t rebroadcast_group = 0;        // 2..32: re-send handled events there; 0: off
  // Called once when the daemon serves (sockets bound, reactor about to run): readiness.
  std::function<void()> on_ready;
  // `settle --for` and `report`.
  std::string record_timeline;           // --record-timeline FILE; empty: memory only
  // Timeline lines kept for `report` (0: none). 4,096 records are ~1,300 events (R/L, S, H
  // each), ~100 KiB: a small board's coldplug; --timeline-keep or --record-timeline for more.
  size_t timeline_keep = 4096;
  size_t handled_devices_max = 4096;     // handled events remembered for `settle --for`
  // io_uring SQ entries (the CQ gets twice as many); 0: the reactor's defaults. Tests make it
  // tiny to overflow the CQ under load (hidden option --ring-entries).
  unsigned ring_entries = 0;
  std::string probe_dev_root = "/dev";   // where DEVNAME nodes are, for LABEL=/UUID= probes
  // udev 252's control socket (`udevadm control`, `udevadm settle`), e.g. /run/udev/control;
  // empty: none. Bound after the daemon's own control socket.
  std::string udev_control;
  // udevd's queue file, present while events are held, queued or running (libudev's
  // udev_queue, `udevadm settle`), e.g. /run/udev/queue; empty: none.
  std::string udev_queue;
};

// Counters of the event flow, reported by `hotring control status`.
struct DaemonCounters {
  uint64_t received = 0;   // events accepted (validated) from any source
  uint64_t handled = 0;
  uint64_t failed = 0;
  uint64_t timed_out = 0;
  uint64_t killed = 0;
  uint64_t reorder_timeouts = 0;  // times held events were released by the timeout
  uint64_t missing_seqnums = 0;   // SEQNUMs given up on
  uint64_t discarded = 0;         // held or queued when `udevadm control --exit` came
  absl::flat_hash_map<std::string, uint64_t> dropped;  // by reason name
};

// Also the handler stages' StepRecorder: their steps (module loads) go to the timeline.
class Daemon final : private EventFlow, private StepRecorder {
 public:
  // Binds the sockets (the control socket bind is the lock against a second daemon) and
  // prepares everything; nothing runs until Run().
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(DaemonOptions options,
                                                        std::unique_ptr<Handler> handler);
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  ~Daemon() override;

  // Serves until SIGTERM/SIGINT or `control exit`, then finishes what was accepted and returns.
  absl::Status Run();

 private:
  struct EventRecord {
    Event event;
    std::vector<AckTarget> acks;
    MonoTime released_at;
    std::optional<MonoTime> started_at;  // set once the handler runs
    uint32_t cookie = 0;  // SEQNUM-less events sent with an ack request
  };

  Daemon(DaemonOptions options, std::unique_ptr<Handler> handler);
  absl::Status Init();

  // EventFlow, for the control server and settling.
  void AcceptSent(Event&& event, const AckTarget& ack, bool want_ack) override;
  void AcceptKernel(Event&& event) override;
  void AcceptResync(Event&& event) override;
  [[nodiscard]] bool Full() const override;
  [[nodiscard]] absl::flat_hash_set<std::string> LiveDevpaths() const override;
  using EventFlow::Drop;
  void Drop(absl::string_view reason, absl::string_view detail) override;
  void RequestStop(absl::string_view why, StopMode mode) override;
  absl::Status Reload() override;
  [[nodiscard]] bool Idle() const override;
  void AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const override;
  [[nodiscard]] ControlReply PendingReply(uint32_t cookie) const override;
  void BurstSettled() override;
  void SetExecQueueStopped(bool stopped) override;
  void SetChildrenMax(size_t children_max) override;
  absl::Status SetGlobalProperty(absl::string_view key,
                                 std::optional<absl::string_view> value) override;

  // StepRecorder, for the stages.
  void Step(const Event& event, absl::string_view what, MonoTime started, absl::Duration took,
            bool ok) override;
  void LetDevicesBelowStart(const Event& event) override;

  Task<absl::Status> Main();
  Task<void> ReorderTimer();
  Task<void> WatchSignals();
  Task<void> AwaitHandler(uint64_t id, Task<HandlerResult> handling);

  // Takes a validated event from any source. `ack`: who to tell when it is done.
  // drop_when_full: drop (queue_full) at --max-pending; the netlink reader bounds itself.
  void Accept(Event&& event, std::optional<AckTarget> ack, bool drop_when_full = true);
  void AcceptSequenced(Event&& event, std::optional<AckTarget> ack, bool drop_when_full,
                       MonoTime now);
  // Queues every event (moving each out of `events`) and pumps.
  void Release(std::vector<Event>& events, MonoTime now);
  // Queues one released event (the caller pumps); returns its scheduler id. `just_received`:
  // it was accepted at `now` and never held (one timeline record for both).
  uint64_t ReleaseOne(Event&& event, MonoTime now, bool just_received = false);
  void NoteMissing(const std::vector<SeqnumRange>& missing, absl::string_view why);
  void Pump();
  // Runs the handler on a runnable event. A handler that completes without suspending (the
  // NullHandler, or any handler with nothing to wait for) is finished at once, with no task.
  void StartEvent(uint64_t id);
  // The event's handler is done: count, log, ack, tell monitors, then free its slot and pump.
  void FinishEvent(uint64_t id, const HandlerResult& result);
  // A queued event that will not run (udevd's exit): its senders are told it failed.
  void DiscardEvent(uint64_t id);
  // The event's record goes: its SEQNUM and cookie are forgotten, its scheduler slot is freed
  // and what it held back may start.
  void ForgetKeys(const EventRecord& record);
  void ReleaseSlot(absl::node_hash_map<uint64_t, EventRecord>::iterator record, uint64_t id);
  void CountOutcome(const Event& event, const HandlerResult& result, absl::Duration took,
                    bool log_it);
  void CheckIdle();
  // After an input was accepted: the queue file appears when the daemon stopped being idle.
  void NoteBusy();
  // Gives memory back once the daemon has been idle (nothing pending, no event) for a while:
  // the receive rings' buffer pages, free heap, the program text's mappings. Once per idle
  // period: it waits for the next handled event before it looks again.
  Task<void> TrimWhenIdle();
  void ReleaseIdleMemory();
  [[nodiscard]] BurstCounters Burst() const;
  [[nodiscard]] size_t Pending() const;

  DaemonOptions options_;
  std::unique_ptr<Handler> handler_;
  const bool null_handler_;  // no handler: events are finished without calling it
  std::unique_ptr<io::Reactor> reactor_;
  std::optional<io::SignalFd> signals_;
  UniqueFd rebroadcast_fd_;
  // Found at the first idle release: a start reads no /proc/self/maps it may never need.
  std::optional<IdleMemory> idle_memory_;
  bool text_releasable_ = false;  // the first release's madvise of the text worked

  Reorderer reorderer_;
  Scheduler scheduler_;
  DaemonCounters counters_;
  TimelineRecorder timeline_;
  BurstLog burst_log_;
  absl::node_hash_map<uint64_t, EventRecord> events_;      // by scheduler id (stable refs)
  std::vector<uint64_t> runnable_;  // Pump's buffer, kept to reuse its allocation
  std::vector<Event> released_;     // Accept's buffers for Reorderer::Push, likewise
  std::vector<SeqnumRange> missing_;
  absl::flat_hash_map<uint64_t, uint64_t> seqnum_to_id_;   // queued or running, by SEQNUM
  absl::flat_hash_map<uint64_t, std::vector<AckTarget>> held_acks_;  // held in the reorderer
  // SEQNUM-less events sent with an ack request, by cookie, so a retransmission is not handled
  // twice: the scheduler id while in flight, 0 once done. Bounded FIFO.
  absl::flat_hash_map<uint32_t, uint64_t> cookie_to_id_;
  std::deque<uint32_t> cookie_order_;
  bool pumping_ = false;
  bool pump_again_ = false;
  bool stopping_ = false;
  bool force_stop_ = false;  // a second SIGTERM: abandon running events
  bool exec_stopped_ = false;   // udevadm control --stop-exec-queue: nothing starts
  bool discard_queued_ = false; // udevd's exit: what has not started is discarded
  // udevadm control --property, in the order first set; handed to the handler as a snapshot.
  std::vector<std::pair<std::string, std::string>> global_properties_;
  Notifier stop_;         // RequestStop
  Notifier reorder_changed_;
  Notifier idle_;         // nothing held, queued or running
  MonoTime started_at_;

  // The daemon's parts; tasks below them (declared after) go first.
  std::optional<Settling> settling_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<NetlinkSource> netlink_;  // null without kernel uevents
  std::unique_ptr<UdevControlServer> udev_control_;  // null without --udev-control
  std::optional<UdevQueueFile> udev_queue_;           // unset without a queue file

  // Last members: destroyed first, so no task outlives what it uses.
  TaskScope workers_;   // one task per running event
  TaskScope services_;  // receive loops, reorder timer, signal watcher
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_DAEMON_H_

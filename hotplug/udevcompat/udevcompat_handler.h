// UdevCompatHandler: the daemon's udev compatibility link (modules -> rules -> udevcompat ->
// exec), on with --udev-compat. For each event it computes udev's properties (input_id, path_id,
// usb_id, blkid) and the seat rules' tags (seat.h), makes or removes the by-* links beneath the
// dev root, writes or removes the device's /run/udev/data entry and its /run/udev/tags files,
// and then announces the event on netlink group 2 in libudev's format. Sysfs reads, device probes
// and file writes run on a small blocking pool; the reactor only sends the datagram (counted and
// logged as the udev rules stage does: udev/stage_report.h). Owns the database directory, the
// dev root, the reporter (with the sender socket), the pool.
#ifndef HOTRING_HOTPLUG_UDEVCOMPAT_UDEVCOMPAT_HANDLER_H_
#define HOTRING_HOTPLUG_UDEVCOMPAT_UDEVCOMPAT_HANDLER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/task.h"
#include "hotplug/event.h"
#include "hotplug/handler.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/stage_report.h"
#include "hotplug/udev/sysfs_view.h"
#include "io/blocking_pool.h"
#include "io/reactor.h"

namespace hotring::hotplug::udevcompat {

// The properties hotring computes for an event (what udev's rules would import), reading sysfs
// through `view` and block devices beneath `dev_root` (bounded reads). Probe failures of a
// malformed superblock or table are returned in `probe_error` (the event still gets the rest).
[[nodiscard]] udev::Properties ComputeProperties(const udev::SysfsView& view, const Event& event,
                                           const std::string& dev_root,
                                           const udev::Properties& parent_disk,
                                           std::string* probe_error);

class UdevCompatHandler final : public Handler {
 public:
  struct Options {
    std::string run_dir = "/run/udev";  // --udev-run DIR: the database is DIR/data
    std::string dev_root = "/dev";      // links are made here; DEVNAME nodes are probed here
    std::string sysfs_root = "/sys";
    std::string kernel_cmdline = "/proc/cmdline";  // for nomodeset; "" reads none
    bool monitor = true;                // announce on netlink group 2 (off in some tests)
    size_t threads = 2;
  };
  static absl::StatusOr<std::unique_ptr<UdevCompatHandler>> Create(Options options);
  ~UdevCompatHandler() override;

  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override;
  [[nodiscard]] std::string Name() const override { return "udevcompat"; }
  void AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const override;

  // What the handler did with one event (a pool job's result).
  struct Outcome {
    udev::EventReport report;   // database, links, failures (not probe errors), announcement
    uint64_t probe_errors = 0;  // each with its line in report.log
  };

 private:
  struct Shared;
  UdevCompatHandler(Options options, std::shared_ptr<Shared> shared, udev::StageReporter reporter);

  Options options_;
  std::shared_ptr<Shared> shared_;  // shared with pool jobs, which may outlive a dropped task
  udev::StageReporter reporter_;
  std::unique_ptr<io::BlockingPool> pool_;
  uint64_t probe_errors_ = 0;
};

}  // namespace hotring::hotplug::udevcompat

#endif  // HOTRING_HOTPLUG_UDEVCOMPAT_UDEVCOMPAT_HANDLER_H_

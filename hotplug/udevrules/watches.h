// OPTIONS+="watch" as systemd-udevd 252 keeps it: an inotify IN_CLOSE_WRITE watch on the
// device's node, recorded under RUN_DIR/watch in both directions (the device id "b8:0" names the
// watch number, the number names the device id), so that a later daemon restores them and the
// close of a node someone wrote to becomes a `change` of the device (a partitioning tool's new
// table reaches the rules). Each event of a device drops its watch first; after RUN, an event
// whose rules said `watch` (and that is no remove) puts one back.
#ifndef HOTRING_HOTPLUG_UDEVRULES_WATCHES_H_
#define HOTRING_HOTPLUG_UDEVRULES_WATCHES_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udevrules {

// Owns the inotify instance and a descriptor of the run directory. Its calls are single system
// calls on distinct names per device, safe from several worker threads at once (events of one
// device never run at the same time), as udevd's workers share one inotify descriptor. It
// remembers which devices it recorded (Begin, and Restore at start, which takes over an earlier
// daemon's records): End of a device it never recorded makes no system call, which is every
// event of a device without `watch`.
class Watches {
 public:
  // An inotify instance (non-blocking) and RUN_DIR (its watch/ directory is made on the first
  // watch). `dev_root`: where DEVNAME's nodes are ("/dev").
  static absl::StatusOr<std::unique_ptr<Watches>> Open(const std::string& run_dir, std::string dev_root);

  // Drops the watch of device `id` ("b8:0") and both of its records; nothing when it has none.
  // A number whose record names another device is left to that device.
  void End(absl::string_view id);
  // Watches `dev_root`/`devname` for a close after writing and records it (any old record of
  // the device goes first). An error when the node cannot be watched or recorded (then nothing
  // is left behind).
  absl::Status Begin(absl::string_view id, absl::string_view devname);
  // The device id that watch `wd` is recorded for; "" when none.
  [[nodiscard]] std::string WatchedDevice(int wd) const;
  // What the inotify descriptor holds now (never blocks): the watch numbers of nodes closed
  // after a write, in order. Other events (a watch dropped by the kernel when its node went)
  // are left alone: the device's remove drops the records, as in udevd.
  [[nodiscard]] std::vector<int> TakeClosed();
  // At start: the watches an earlier daemon recorded (RUN_DIR/watch moves to watch.old and is
  // removed afterwards) are put back for the devices that still exist in `sysfs_root`/dev/
  // {block,char}; returns how many.
  size_t Restore(const std::string& sysfs_root);

  [[nodiscard]] int fd() const { return inotify_.get(); }

 private:
  Watches(UniqueFd inotify, UniqueFd run_dir, std::string dev_root)
      : inotify_(std::move(inotify)), run_dir_(std::move(run_dir)), dev_root_(std::move(dev_root)) {}
  // Removes the device's records; returns the watch number they named (-1: none of its own).
  int Clear(int watch_dir, absl::string_view id);

  UniqueFd inotify_;
  UniqueFd run_dir_;
  std::string dev_root_;
  std::mutex mutex_;
  absl::flat_hash_set<std::string> recorded_;  // device ids with a record under watch/
};

// What a close of a watched node did.
struct ChangeReport {
  size_t changes = 0;       // `change` written into uevent files
  bool reread = false;      // the kernel re-read the partition table (and sends the events)
  std::vector<std::string> log;
};

// udevd's answer to a watched node closed after a write, for device `id`: a whole disk (not
// dm-*) gets its partition table re-read (BLKRRPART under a non-blocking exclusive flock of the
// node); when that worked and the disk has partitions the kernel sends the events, else
// `change` goes into the uevent file of the disk and of each of its partitions. Any other
// device gets its own `change`. A device that is gone is no error: nothing happens.
[[nodiscard]] ChangeReport SynthesizeChange(const std::string& sysfs_root, const std::string& dev_root,
                                            absl::string_view id);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_WATCHES_H_

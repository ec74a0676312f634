// UdevQueueFile: /run/udev/queue, the file systemd-udevd keeps while it has events and removes
// when it has none. libudev's udev_queue_get_queue_is_empty() tests whether it exists, and
// `udevadm settle` (after its ping) waits with inotify on /run/udev until it is deleted. The
// daemon marks only the transitions between idle and busy, never each event. Owns the path.
#ifndef HOTRING_HOTPLUG_DAEMON_UDEV_QUEUE_FILE_H_
#define HOTRING_HOTPLUG_DAEMON_UDEV_QUEUE_FILE_H_

#include <string>

namespace hotring::hotplug {

class UdevQueueFile {
 public:
  // Removes a file left by a daemon that did not end cleanly: a new daemon starts idle.
  explicit UdevQueueFile(std::string path);
  UdevQueueFile(const UdevQueueFile&) = delete;
  UdevQueueFile& operator=(const UdevQueueFile&) = delete;
  // Removes the file if this object made it.
  ~UdevQueueFile();

  // Events are pending: the file exists from now on (made when it was not). A failure is
  // logged once per run of failures and does not stop the daemon, as for udevd.
  void Busy();
  // Nothing is pending: the file is removed (when this object made it).
  void Idle();

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] bool busy() const { return busy_; }

 private:
  std::string path_;
  bool busy_ = false;
  bool failing_ = false;  // the last create or remove failed (and was logged)
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_UDEV_QUEUE_FILE_H_

#include "hotplug/daemon/udev_queue_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/log.h"

namespace hotring::hotplug {

UdevQueueFile::UdevQueueFile(std::string path) : path_(std::move(path)) {
  if (::unlink(path_.c_str()) == 0) LogInfo("removed %s, left by an earlier daemon", path_);
}

UdevQueueFile::~UdevQueueFile() {
  if (busy_) ::unlink(path_.c_str());
}

void UdevQueueFile::Busy() {
  if (busy_) return;
  busy_ = true;
  // As udevd's touch(): an empty file, 0644 whatever its content was.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0644);
  if (fd >= 0) {
    ::close(fd);
    failing_ = false;
    return;
  }
  if (!failing_) LogWarning("cannot create %s: %s", path_, std::strerror(errno));
  failing_ = true;
}

void UdevQueueFile::Idle() {
  if (!busy_) return;
  busy_ = false;
  if (::unlink(path_.c_str()) == 0 || errno == ENOENT) {
    failing_ = false;
    return;
  }
  if (!failing_) LogWarning("cannot remove %s: %s", path_, std::strerror(errno));
  failing_ = true;
}

}  // namespace hotring::hotplug

#include "testing/udev_namespace.h"

#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "testing/uevent_injector.h"

namespace hotring::testing {
namespace {

// Whether a failed unshare means "not here" (no privilege, no namespace support) rather than
// a broken test.
bool NamespacesUnavailable(int err) { return err == EPERM || err == EINVAL || err == ENOSYS; }

absl::Status Unavailable(const absl::Status& status) {
  return absl::UnavailableError(absl::StrCat("private namespaces unavailable here (needs root "
                                             "and CLONE_NEWNET/CLONE_NEWNS): ",
                                             status.message()));
}

}  // namespace

absl::Status EnterUdevTestNamespaces() {
  if (const absl::Status net = EnterPrivateNetworkNamespace(); !net.ok()) {
    return NamespacesUnavailable(StatusErrno(net)) ? Unavailable(net) : net;
  }
  if (::unshare(CLONE_NEWNS) != 0) {
    const int err = errno;
    const absl::Status status = ErrnoStatus("unshare(CLONE_NEWNS)", err);
    return NamespacesUnavailable(err) ? Unavailable(status) : status;
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return ErrnoStatus("mount(/, MS_PRIVATE)");
  }
  if (::mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") != 0) return ErrnoStatus("mount(/run)");
  if (::mkdir("/run/udev", 0755) != 0) return ErrnoStatus("mkdir(/run/udev)");
  return absl::OkStatus();
}

std::optional<std::string> DebianUdevadm() {
  for (const char* path : {"/usr/bin/udevadm", "/bin/udevadm"}) {
    if (::access(path, X_OK) == 0) return std::string(path);
  }
  return std::nullopt;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace hotring::testing

// Where tests run Debian's own udevadm 252 against a hotring daemon: the test process enters a
// private network namespace (injected uevents reach only its daemons) and a private mount
// namespace with a tmpfs over /run, holding an empty /run/udev, so that udevadm's fixed
// /run/udev/control and /run/udev/queue are the test daemon's and nothing of the host's /run
// changes. Call before the process starts threads (the first test's SetUpTestSuite).
#ifndef HOTRING_TESTING_UDEV_NAMESPACE_H_
#define HOTRING_TESTING_UDEV_NAMESPACE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace hotring::testing {

// An UnavailableError when this kernel or these privileges allow no private network or mount
// namespace (unshare: EPERM, EINVAL, ENOSYS): such tests skip. Any other error is a failure.
absl::Status EnterUdevTestNamespaces();

// Debian's udevadm (/usr/bin/udevadm or /bin/udevadm), nullopt when udev is not installed.
std::optional<std::string> DebianUdevadm();

// Whether `path` exists (lstat).
bool PathExists(const std::string& path);

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_UDEV_NAMESPACE_H_

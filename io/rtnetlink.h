// Network interface renames over rtnetlink (RTM_SETLINK with IFLA_IFNAME), as systemd-udevd
// renames an interface a rule gave a NAME. Blocking (one request and its acknowledgement, no
// waiting on anything else): for a blocking pool's worker, not the reactor.
#ifndef HOTRING_IO_RTNETLINK_H_
#define HOTRING_IO_RTNETLINK_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hotring::io {

// True for a name the kernel takes for an interface (dev_valid_name): 1 to 15 bytes, not "." or
// "..", no '/', ':' or whitespace.
[[nodiscard]] bool ValidInterfaceName(absl::string_view name);

// Renames interface `ifindex` to `name` in this process's network namespace. The kernel's
// answer as a Status: EBUSY when the interface is up, EEXIST when the name is taken.
absl::Status RenameInterface(int ifindex, absl::string_view name);

}  // namespace hotring::io

#endif  // HOTRING_IO_RTNETLINK_H_

// systemd-udevd 252's control protocol on /run/udev/control (SOCK_SEQPACKET): fixed 280-byte
// messages (hotplug/udev/control_message.h), as udevadm control sends them. A client connects, sends
// its requests and an END message, and waits for the daemon to close the connection (its
// acknowledgement). Encoding is pure; the client is blocking (a tool's).
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_CONTROL_PROTOCOL_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_CONTROL_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "hotplug/udev/control_message.h"

namespace hotring::hotplug::udevadm {

// The message format is udev's (hotplug/udev/control_message.h, which the daemon's server parses).
using UdevControlType = udev::ControlType;
inline constexpr size_t kUdevControlMessageSize = udev::kControlMessageSize;

// One request. `intval` for log level and children max; `text` ("KEY=VALUE", at most 255
// bytes) for SET_ENV.
struct UdevControlMessage {
  UdevControlType type = UdevControlType::kPing;
  int32_t intval = 0;
  std::string text;
};

// The 280 bytes. InvalidArgument for a text that does not fit.
[[nodiscard]] absl::StatusOr<std::string> EncodeUdevControl(const UdevControlMessage& message);
// Connects to `socket_path`, sends `messages` and END, and waits up to `timeout` for the
// daemon to hang up; with an EXIT among them, sends EXIT alone and does not wait (252 does
// so). Unavailable when nothing listens there (no daemon); DeadlineExceeded when it did not
// answer in time.
absl::Status SendUdevControl(const std::string& socket_path,
                             const std::vector<UdevControlMessage>& messages,
                             absl::Duration timeout);

// A PING and its answer.
absl::Status PingUdevControl(const std::string& socket_path, absl::Duration timeout);

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_CONTROL_PROTOCOL_H_

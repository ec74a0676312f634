// udev 252's control protocol (/run/udev/control), spoken by `udevadm control` and `udevadm
// settle`: a SOCK_SEQPACKET socket, one fixed-size message per packet in host byte order,
//   char version[16] ("udev-252"), unsigned magic (0xdead1dea), int type,
//   union { int intval; char buf[256]; }                                       = 280 bytes.
// A client connects, sends its requests, then an END message (none after EXIT), and waits for
// the daemon to hang up: the hang-up is the only answer. Encoding and parsing are pure.
#ifndef HOTRING_HOTPLUG_UDEV_CONTROL_MESSAGE_H_
#define HOTRING_HOTPLUG_UDEV_CONTROL_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udev {

inline constexpr uint32_t kControlMagic = 0xdead1dea;
inline constexpr size_t kControlVersionSize = 16;
inline constexpr size_t kControlBufSize = 256;
inline constexpr size_t kControlMessageSize = kControlVersionSize + 4 + 4 + kControlBufSize;
// What a client sends in `version`; the daemon does not look at it, as udevd does not.
inline constexpr absl::string_view kControlVersion = "udev-252";

// The message types, with udev 252's numbers.
enum class ControlType : int32_t {
  kEndMessages = 0,  // the client has sent everything: hang up
  kSetLogLevel = 1,  // intval: a syslog priority 0..7
  kStopExecQueue = 2,
  kStartExecQueue = 3,
  kReload = 4,
  kSetEnv = 5,  // buf: "KEY=VALUE", or "KEY=" to unset
  kSetChildrenMax = 6,  // intval
  kPing = 7,
  kExit = 8,
};

// One message. `type` keeps numbers udev 252 does not know (the daemon ignores them, as udevd
// does). Owns its text.
struct ControlMessage {
  int32_t type = 0;
  int32_t intval = 0;  // the union read as an int (SET_LOG_LEVEL, SET_CHILDREN_MAX)
  std::string text;    // the union read as a string, up to its first NUL (SET_ENV)
};

// "SET_ENV", "PING", ...; "UNKNOWN" for numbers udev 252 does not have.
[[nodiscard]] absl::string_view ControlTypeName(int32_t type);

// Parses one packet: exactly kControlMessageSize bytes with the magic. `text` stops at the
// first NUL of the union (a union without one is cut at 255 bytes, as udevd's reader keeps a
// NUL there).
[[nodiscard]] absl::StatusOr<ControlMessage> ParseControlMessage(absl::string_view packet);

// The packet udevadm 252 sends: version, magic, type, then `intval` or (when `text` is not
// empty) `text`, cut to 255 bytes.
[[nodiscard]] std::string EncodeControlMessage(ControlType type, int32_t intval = 0,
                                               absl::string_view text = "");

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_CONTROL_MESSAGE_H_

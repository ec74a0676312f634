// libudev's netlink monitor format: what systemd-udevd sends on NETLINK_KOBJECT_UEVENT group 2
// ("udev") after handling an event, and what udev_monitor / sd_device_monitor users (libinput's
// hotplug, wlroots, SDL, NetworkManager) receive. A fixed 40-byte header ("libudev\0", magic
// 0xfeedcafe and the filter hashes in network byte order, so libudev's in-kernel socket filters
// can match on them), then the properties as KEY=VALUE\0 strings. Encoding and parsing are pure.
#ifndef HOTRING_HOTPLUG_UDEV_MONITOR_H_
#define HOTRING_HOTPLUG_UDEV_MONITOR_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udev {

inline constexpr uint32_t kUdevMonitorMagic = 0xfeedcafe;
inline constexpr uint32_t kUdevMonitorGroup = 2;
inline constexpr size_t kMonitorHeaderSize = 40;
// libudev's receive buffer: longer messages are truncated there and dropped (MSG_TRUNC).
inline constexpr size_t kMaxMonitorMessage = 8192;

// MurmurHash2 (32-bit, seed 0) as libudev computes its subsystem/devtype/tag hashes. Reads the
// key's 4-byte blocks in host byte order, as libudev does.
[[nodiscard]] uint32_t MurmurHash2(absl::string_view key);

// The 64-bit bloom filter bits of one tag (four bits from its hash).
[[nodiscard]] uint64_t TagBloomBits(absl::string_view tag);

// What one monitor message carries. Owns its strings.
struct MonitorMessage {
  std::string subsystem;  // hashed into the header; also among `properties`
  std::string devtype;    // "" when none
  std::vector<std::string> tags;
  std::vector<std::pair<std::string, std::string>> properties;  // in order, ACTION etc. included
};

// The datagram. InvalidArgument when it would not fit libudev's buffer, when a property holds a
// NUL or a newline, or when SEQNUM/ACTION/DEVPATH/SUBSYSTEM are missing (libudev drops those).
[[nodiscard]] absl::StatusOr<std::string> EncodeMonitorMessage(const MonitorMessage& message);

// The inverse, checking what libudev checks (prefix, magic, offsets); tags and devtype are not
// recovered from the hashes.
[[nodiscard]] absl::StatusOr<std::vector<std::pair<std::string, std::string>>> DecodeMonitorMessage(
    absl::string_view datagram);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_MONITOR_H_

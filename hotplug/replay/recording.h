// Recording: what a replay needs to know about one machine's devices, and its text format
// (docs/recording.md): the sysfs facts rules and modules read, the coldplug uevents, the
// kernel release, the loaded modules and the users and groups node owners are named by.
// Parsing is bounded and pure; errors name the line ("12: attr before its device").
#ifndef HOTRING_HOTPLUG_REPLAY_RECORDING_H_
#define HOTRING_HOTPLUG_REPLAY_RECORDING_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::replay {

inline constexpr absl::string_view kRecordingHeader = "hotring-recording 1";

// Bounds of one recording (a large server has a few thousand devices).
inline constexpr size_t kMaxRecordingBytes = 64 * 1024 * 1024;
inline constexpr size_t kMaxRecordedDevices = 100'000;
inline constexpr size_t kMaxRecordedEvents = 100'000;
inline constexpr size_t kMaxAttributeBytes = 8192;
inline constexpr size_t kMaxDeviceAttributes = 16;
// A firmware file a replay serves (the largest in linux-firmware are a few tens of MiB).
inline constexpr size_t kMaxFirmwareBytes = 256 * 1024 * 1024;

// How a device's `subsystem` link is reached: /sys/class/NAME or /sys/bus/NAME.
enum class SubsystemKind { kNone, kClass, kBus };

// One sysfs device directory. Owns its strings.
struct RecordedDevice {
  std::string devpath;    // "/devices/...", canonical
  std::string subsystem;  // empty with kNone
  SubsystemKind kind = SubsystemKind::kNone;
  // Attribute files (name, content) in the order recorded: uevent, dev, modalias.
  std::vector<std::pair<std::string, std::string>> attributes;
  // The `driver` link's target relative to the sysfs root ("/bus/pci/drivers/ahci"); empty: none.
  std::string driver;
};

// One uevent: its variables in the order the kernel sent them (ACTION, DEVPATH, ...).
using RecordedEvent = std::vector<std::pair<std::string, std::string>>;

// A whole recording. Owns everything.
struct Recording {
  std::string kernel;                       // uname -r
  std::vector<std::string> loaded_modules;  // /proc/modules names, sorted
  std::vector<std::string> passwd;          // etc/passwd lines
  std::vector<std::string> group;           // etc/group lines
  std::vector<RecordedDevice> devices;      // parents before children
  std::vector<RecordedEvent> events;        // in the order to replay them
};

// One FIRMWARE request among a recording's events: an `add` event naming a firmware file.
struct FirmwareRequest {
  std::string devpath;  // where the kernel's `loading` and `data` files are
  std::string name;     // FIRMWARE, relative to the firmware directory
};

// The recording's firmware requests, in event order.
[[nodiscard]] std::vector<FirmwareRequest> FirmwareRequests(const Recording& recording);

// The text form; FormatRecording(ParseRecording(t)) == t for text FormatRecording made.
[[nodiscard]] std::string FormatRecording(const Recording& recording);
// InvalidArgument "LINE: what" for anything that is not a well-formed recording, including
// paths that would leave the tree a replay builds from it and events the daemon would reject.
[[nodiscard]] absl::StatusOr<Recording> ParseRecording(absl::string_view text);

// True for "/devices/..." without empty, "." or ".." components or control characters.
[[nodiscard]] bool IsSafeDevpath(absl::string_view devpath);
// True for one file-name component: [A-Za-z0-9_.:+@-], not "." or "..", at most 255 bytes.
[[nodiscard]] bool IsSafeName(absl::string_view name);

// True for a driver link target: under "/bus/" or "/module/", components printable (blanks
// allowed: "/bus/serio/drivers/i8042 kbd"), none empty, "." or "..".
[[nodiscard]] bool IsSafeDriverPath(absl::string_view path);

[[nodiscard]] absl::string_view SubsystemKindName(SubsystemKind kind);

}  // namespace hotring::hotplug::replay

#endif  // HOTRING_HOTPLUG_REPLAY_RECORDING_H_

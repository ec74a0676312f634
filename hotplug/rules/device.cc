#include "hotplug/rules/device.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace hotring::hotplug::rules {
namespace {

bool ParseNumber(absl::string_view text, uint32_t* out) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(text, out);
}

}  // namespace

bool Device::IsBlock() const {
  return absl::StrContains(devpath, "/block/") || absl::StartsWith(subsystem, "block");
}

DeviceAction ParseDeviceAction(absl::string_view action) {
  if (action == "add") return DeviceAction::kAdd;
  if (action == "remove") return DeviceAction::kRemove;
  return DeviceAction::kOther;
}

std::optional<DevNumber> ParseDevNumber(absl::string_view text) {
  text = absl::StripTrailingAsciiWhitespace(text);
  const size_t colon = text.find(':');
  if (colon == absl::string_view::npos) return std::nullopt;
  DevNumber number;
  if (!ParseNumber(text.substr(0, colon), &number.major) ||
      !ParseNumber(text.substr(colon + 1), &number.minor)) {
    return std::nullopt;
  }
  return number;
}

Device DeviceFromEvent(const Event& event) {
  Device device;
  device.action = ParseDeviceAction(event.action);
  device.devpath = event.devpath;
  device.subsystem = event.subsystem;
  if (!event.devname.empty()) {
    device.name = event.devname;
  } else {
    absl::string_view path = event.devpath;
    const size_t slash = path.rfind('/');
    device.name = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  }
  DevNumber number;
  if (ParseNumber(event.major, &number.major) && ParseNumber(event.minor, &number.minor)) {
    device.number = number;
  }
  if (std::optional<absl::string_view> firmware = event.Get("FIRMWARE")) {
    device.firmware = *firmware;
  }
  device.env = event.env;
  return device;
}

}  // namespace hotring::hotplug::rules

#include "hotplug/udev/keyboard.h"

#include <linux/input.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hotplug/udev/net_naming.h"

namespace hotring::hotplug::udev {
namespace {

struct KeyName {
  const char* name;
  uint32_t code;
};

constexpr KeyName kKeyNames[] = {
#include "hotplug/udev/input_key_names.inc"
};

// udevd keeps at most this many force-release scan codes (the last one is overwritten).
constexpr size_t kMaxRelease = 1024;
// ... and writes them into a 4 KiB buffer.
constexpr size_t kMaxReleaseText = 4095;

// One field of an EVDEV_ABS value (parse_token): strtol base 0 up to ':' or the end; an empty
// field leaves the value alone. False on anything else.
bool ParseAbsField(absl::string_view& rest, std::optional<int32_t>* out) {
  const size_t colon = rest.find(':');
  const std::string field(rest.substr(0, colon));
  if (!field.empty()) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(field.c_str(), &end, 0);
    if (*end != '\0') return false;
    if (end != field.c_str()) *out = static_cast<int32_t>(v);
  }
  rest = colon == absl::string_view::npos ? absl::string_view() : rest.substr(colon + 1);
  return true;
}

}  // namespace

std::optional<uint32_t> KeyCodeFromName(absl::string_view name) {
  const auto* it = std::lower_bound(std::begin(kKeyNames), std::end(kKeyNames), name,
                                    [](const KeyName& k, absl::string_view n) { return absl::string_view(k.name) < n; });
  if (it != std::end(kKeyNames) && absl::string_view(it->name) == name) return it->code;
  return ParseUnsigned(name, 0, UINT32_MAX);
}

absl::StatusOr<KeyboardSetup> KeyboardBuiltin(const BuiltinDevice& device) {
  KeyboardSetup setup;
  setup.devnode = device.DevNode();
  if (setup.devnode.empty()) return absl::FailedPreconditionError("keyboard: the device has no node");
  std::vector<uint32_t> release;
  for (const auto& [key, value] : device.properties) {
    if (absl::StartsWith(key, "KEYBOARD_KEY_")) {
      const std::optional<uint64_t> scan = ParseUnsigned(key.substr(13), 16, UINT32_MAX);
      if (!scan.has_value()) {
        setup.warnings.push_back(absl::StrCat("cannot parse the scan code of ", key));
        continue;
      }
      absl::string_view keycode = value;
      if (absl::ConsumePrefix(&keycode, "!")) {
        if (release.size() < kMaxRelease) release.push_back(static_cast<uint32_t>(*scan));
        if (release.size() == kMaxRelease) release.back() = static_cast<uint32_t>(*scan);
        if (keycode.empty()) continue;
      }
      // udevd opens the node before it looks the name up.
      setup.needs_node = true;
      const std::optional<uint32_t> code = KeyCodeFromName(keycode);
      if (!code.has_value()) {
        setup.warnings.push_back(absl::StrCat("unknown key '", keycode, "' for ", key));
        continue;
      }
      setup.keycodes.push_back({static_cast<uint32_t>(*scan), *code});
    } else if (absl::StartsWith(key, "EVDEV_ABS_")) {
      const std::optional<uint64_t> axis = ParseUnsigned(key.substr(10), 16, UINT32_MAX);
      if (!axis.has_value()) {
        setup.warnings.push_back(absl::StrCat("cannot parse the axis of ", key));
        continue;
      }
      // udevd opens the node (and checks EV_ABS) before it parses the value.
      setup.needs_node = true;
      AbsOverride o{.axis = static_cast<uint32_t>(*axis)};
      absl::string_view rest = value;
      if (!ParseAbsField(rest, &o.minimum) || !ParseAbsField(rest, &o.maximum) ||
          !ParseAbsField(rest, &o.resolution) || !ParseAbsField(rest, &o.fuzz) ||
          !ParseAbsField(rest, &o.flat)) {
        // udevd opened the node and checked EV_ABS before it parsed: the node is still needed.
        setup.warnings.push_back(absl::StrCat("cannot parse the override ", key, "=", value));
        continue;
      }
      setup.abs.push_back(o);
    } else if (key == "POINTINGSTICK_SENSITIVITY") {
      const std::optional<std::string> serio = ParentWith(device.sysfs, device.devpath, "serio");
      char* end = nullptr;
      const std::string text(value);
      errno = 0;
      const long v = std::strtol(text.c_str(), &end, 0);
      if (!serio.has_value()) {
        setup.warnings.push_back("POINTINGSTICK_SENSITIVITY without a serio parent");
      } else if (text.empty() || *end != '\0' || errno != 0 || v < 0 || v > 255) {
        setup.warnings.push_back(absl::StrCat("POINTINGSTICK_SENSITIVITY '", value, "' is not 0..255"));
      } else {
        setup.writes.push_back({*serio, "sensitivity", absl::StrCat(v)});
      }
    }
  }
  if (!release.empty()) {
    const std::optional<std::string> serio = ParentWith(device.sysfs, device.devpath, "serio");
    const std::optional<std::string> current =
        serio.has_value() ? device.sysfs.Attribute(*serio, "force_release") : std::nullopt;
    if (!serio.has_value() || !current.has_value()) {
      setup.warnings.push_back("force-release keys without a serio parent's force_release");
    } else {
      std::string codes = *current;
      for (uint32_t code : release) absl::StrAppend(&codes, ",", code);
      if (codes.size() > kMaxReleaseText) codes.resize(kMaxReleaseText);
      setup.writes.push_back({*serio, "force_release", codes});
    }
  }
  return setup;
}

absl::Status ApplyKeyboardIoctls(int fd, const KeyboardSetup& setup) {
  std::vector<std::string> failed;
  for (const KeyMapping& m : setup.keycodes) {
    unsigned int map[2] = {m.scancode, m.keycode};
    if (::ioctl(fd, EVIOCSKEYCODE, map) < 0) {
      failed.push_back(absl::StrCat("EVIOCSKEYCODE 0x", absl::Hex(m.scancode), "->", m.keycode, ": ",
                                    std::strerror(errno)));
    }
  }
  if (!setup.abs.empty()) {
    unsigned long bits = 0;
    if (::ioctl(fd, EVIOCGBIT(0, sizeof(bits)), &bits) < 0) {
      failed.push_back(absl::StrCat("EVIOCGBIT: ", std::strerror(errno)));
    } else if ((bits & (1UL << EV_ABS)) != 0) {
      for (const AbsOverride& o : setup.abs) {
        struct input_absinfo info;
        if (::ioctl(fd, EVIOCGABS(o.axis), &info) < 0) {
          failed.push_back(absl::StrCat("EVIOCGABS ", o.axis, ": ", std::strerror(errno)));
          continue;
        }
        if (o.minimum) info.minimum = *o.minimum;
        if (o.maximum) info.maximum = *o.maximum;
        if (o.resolution) info.resolution = *o.resolution;
        if (o.fuzz) info.fuzz = *o.fuzz;
        if (o.flat) info.flat = *o.flat;
        if (::ioctl(fd, EVIOCSABS(o.axis), &info) < 0) {
          failed.push_back(absl::StrCat("EVIOCSABS ", o.axis, ": ", std::strerror(errno)));
        }
      }
    }
  }
  if (failed.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrJoin(failed, "; "));
}

}  // namespace hotring::hotplug::udev

// udevd 252's `keyboard` builtin as data: from the event's KEYBOARD_KEY_<scan code>=<key name>
// properties (set from the hwdb by 60-evdev.rules) the scan code -> key code table for
// EVIOCSKEYCODE, from EVDEV_ABS_<axis>=min:max:res:fuzz:flat the axis overrides for EVIOCSABS,
// and the attribute writes for a '!' key (the serio parent's force_release list) and for
// POINTINGSTICK_SENSITIVITY (its sensitivity). The caller opens the node and applies the table
// (ApplyKeyboardIoctls does the ioctls) and writes the attributes. KEYBOARD_LED_* are not the
// builtin's in 252 (libinput and the X server read them), so none is acted on.
#ifndef HOTRING_HOTPLUG_UDEV_KEYBOARD_H_
#define HOTRING_HOTPLUG_UDEV_KEYBOARD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/udev/builtin_device.h"

namespace hotring::hotplug::udev {

// One EVIOCSKEYCODE.
struct KeyMapping {
  uint32_t scancode;
  uint32_t keycode;
  bool operator==(const KeyMapping&) const = default;
};

// One EVIOCSABS: the axis, and the fields the property gives (the others keep the device's
// values, read with EVIOCGABS first).
struct AbsOverride {
  uint32_t axis;
  std::optional<int32_t> minimum, maximum, resolution, fuzz, flat;
};

// One sysfs attribute write: `devpath`'s attribute `name` gets `value`.
struct AttributeWrite {
  std::string devpath;
  std::string name;
  std::string value;
  bool operator==(const AttributeWrite&) const = default;
};

// What the keyboard builtin does for one device, in udevd's order. Owns its data.
struct KeyboardSetup {
  std::string devnode;                  // the node the ioctls go to
  std::vector<KeyMapping> keycodes;     // EVIOCSKEYCODE, in property order
  std::vector<AbsOverride> abs;         // EVIOCSABS, only when the device has EV_ABS
  std::vector<AttributeWrite> writes;   // force_release, sensitivity
  std::vector<std::string> warnings;    // entries udevd logs and skips
  // udevd opens the node for a key to map or an axis to override, even one it then skips (and
  // fails the builtin when it cannot).
  bool needs_node = false;
};

// The key code of a name as the builtin reads it: a kernel key name ("key_a", "a", "btn_left";
// the table generated from linux/input-event-codes.h) or a number; nullopt otherwise.
[[nodiscard]] std::optional<uint32_t> KeyCodeFromName(absl::string_view name);

// The builtin. An error when the device has no node (udevd's builtin fails then).
[[nodiscard]] absl::StatusOr<KeyboardSetup> KeyboardBuiltin(const BuiltinDevice& device);

// The ioctls of `setup` on the open event node `fd`: each mapping, then (when EVIOCGBIT says
// the device has EV_ABS) each override. Every failing ioctl is reported in the returned
// status's message, the rest still done (udevd logs and goes on); OK when all succeeded.
[[nodiscard]] absl::Status ApplyKeyboardIoctls(int fd, const KeyboardSetup& setup);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_KEYBOARD_H_

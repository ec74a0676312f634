// input_id: which kind of input device the evdev capability bitmaps describe.
#include <linux/input-event-codes.h>

#include <cstdint>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udev {
namespace {

// The kernel prints a bitmap as words of its `unsigned long`, most significant first; udev reads
// them into `unsigned long` arrays of its own (same) width and ignores words past the array.
constexpr unsigned kWordBits = sizeof(unsigned long) * 8;

class Bitmap {
 public:
  Bitmap(absl::string_view text, unsigned max_bit) : words_((max_bit - 1) / kWordBits + 1, 0) {
    std::vector<absl::string_view> parts = absl::StrSplit(text, ' ');
    // Word 0 is the LAST number printed.
    size_t index = 0;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it, ++index) {
      uint64_t value = 0;
      if (it->empty() || !absl::SimpleHexAtoi(*it, &value)) continue;  // udev skips it too
      if (index < words_.size()) words_[index] = static_cast<unsigned long>(value);
    }
  }
  [[nodiscard]] bool Test(unsigned bit) const {
    const size_t word = bit / kWordBits;
    return word < words_.size() && ((words_[word] >> (bit % kWordBits)) & 1UL) != 0;
  }
  [[nodiscard]] unsigned long Word(size_t i) const { return i < words_.size() ? words_[i] : 0; }

 private:
  std::vector<unsigned long> words_;
};

struct Caps {
  Bitmap ev, abs, rel, key, props;
};

bool AnyBit(const Bitmap& map, unsigned from, unsigned to_exclusive) {
  for (unsigned b = from; b < to_exclusive; ++b) {
    if (map.Test(b)) return true;
  }
  return false;
}

// Pointer devices; true when the device is one.
bool TestPointers(const Caps& c, uint16_t bustype, Properties& out) {
  const bool has_keys = c.ev.Test(EV_KEY);
  const bool has_abs_coordinates = c.abs.Test(ABS_X) && c.abs.Test(ABS_Y);
  const bool has_3d_coordinates = has_abs_coordinates && c.abs.Test(ABS_Z);
  bool is_accelerometer = c.props.Test(INPUT_PROP_ACCELEROMETER);
  if (!has_keys && has_3d_coordinates) is_accelerometer = true;
  if (is_accelerometer) {
    out.emplace_back("ID_INPUT_ACCELEROMETER", "1");
    return true;
  }
  bool is_pointing_stick = c.props.Test(INPUT_PROP_POINTING_STICK);
  const bool has_stylus = c.key.Test(BTN_STYLUS);
  const bool has_pen = c.key.Test(BTN_TOOL_PEN);
  const bool finger_but_no_pen = c.key.Test(BTN_TOOL_FINGER) && !c.key.Test(BTN_TOOL_PEN);
  const bool has_mouse_button = AnyBit(c.key, BTN_MOUSE, BTN_JOYSTICK);
  const bool has_rel_coordinates = c.ev.Test(EV_REL) && c.rel.Test(REL_X) && c.rel.Test(REL_Y);
  bool has_mt_coordinates = c.abs.Test(ABS_MT_POSITION_X) && c.abs.Test(ABS_MT_POSITION_Y);
  // A device claiming every abs axis (ABS_MT_SLOT and the one before it) has no real MT.
  if (has_mt_coordinates && c.abs.Test(ABS_MT_SLOT) && c.abs.Test(ABS_MT_SLOT - 1)) {
    has_mt_coordinates = false;
  }
  const bool is_direct = c.props.Test(INPUT_PROP_DIRECT);
  const bool has_touch = c.key.Test(BTN_TOUCH);
  const bool has_pad_buttons = c.key.Test(BTN_0) && has_stylus && !has_pen;
  // Joysticks may have only axes (pedals) or only buttons. A mouse with more than 16 buttons
  // runs into the joystick range: BTN_JOYSTICK - 1 set means it is such a mouse.
  bool has_joystick_axes_or_buttons = false;
  if (!c.key.Test(BTN_JOYSTICK - 1)) {
    has_joystick_axes_or_buttons = AnyBit(c.key, BTN_JOYSTICK, BTN_DIGI) ||
                                   AnyBit(c.key, BTN_TRIGGER_HAPPY1, BTN_TRIGGER_HAPPY40 + 1) ||
                                   AnyBit(c.key, BTN_DPAD_UP, BTN_DPAD_RIGHT + 1);
  }
  if (!has_joystick_axes_or_buttons) has_joystick_axes_or_buttons = AnyBit(c.abs, ABS_RX, ABS_PRESSURE);

  bool is_tablet = false, is_touchpad = false, is_mouse = false, is_touchscreen = false;
  bool is_joystick = false;
  if (has_abs_coordinates) {
    if (has_stylus || has_pen) {
      is_tablet = true;
    } else if (finger_but_no_pen && !is_direct) {
      is_touchpad = true;
    } else if (has_mouse_button) {
      is_mouse = true;  // absolute axes and no touch button: e.g. VMware's and qemu's tablets
    } else if (has_touch || is_direct) {
      is_touchscreen = true;
    } else if (has_joystick_axes_or_buttons) {
      is_joystick = true;
    }
  } else if (has_joystick_axes_or_buttons) {
    is_joystick = true;
  }
  if (has_mt_coordinates) {
    if (has_stylus || has_pen) {
      is_tablet = true;
    } else if (finger_but_no_pen && !is_direct) {
      is_touchpad = true;
    } else if (has_touch || is_direct) {
      is_touchscreen = true;
    }
  }
  const bool is_tablet_pad = is_tablet && has_pad_buttons;
  if (!is_tablet && !is_touchpad && !is_joystick && has_mouse_button &&
      (has_rel_coordinates || !has_abs_coordinates)) {
    is_mouse = true;
  }
  constexpr uint16_t kBusI2c = 0x18;
  if (is_mouse && bustype == kBusI2c) is_pointing_stick = true;  // no such thing as an i2c mouse

  if (is_pointing_stick) out.emplace_back("ID_INPUT_POINTINGSTICK", "1");
  if (is_mouse) out.emplace_back("ID_INPUT_MOUSE", "1");
  if (is_touchpad) out.emplace_back("ID_INPUT_TOUCHPAD", "1");
  if (is_touchscreen) out.emplace_back("ID_INPUT_TOUCHSCREEN", "1");
  if (is_joystick) out.emplace_back("ID_INPUT_JOYSTICK", "1");
  if (is_tablet) out.emplace_back("ID_INPUT_TABLET", "1");
  if (is_tablet_pad) out.emplace_back("ID_INPUT_TABLET_PAD", "1");
  return is_tablet || is_mouse || is_touchpad || is_touchscreen || is_joystick ||
         is_pointing_stick;
}

// Key devices; true when the device has keys.
bool TestKey(const Caps& c, Properties& out) {
  if (!c.ev.Test(EV_KEY)) return false;
  // Only KEY_* count, not BTN_*: the words below BTN_MISC, then the two high key ranges.
  bool found = false;
  for (size_t i = 0; i < BTN_MISC / kWordBits && !found; ++i) found = c.key.Word(i) != 0;
  if (!found) found = AnyBit(c.key, KEY_OK, BTN_DPAD_UP) || AnyBit(c.key, KEY_ALS_TOGGLE, BTN_TRIGGER_HAPPY);
  if (found) out.emplace_back("ID_INPUT_KEY", "1");
  // ESC, the digits and Q to D (the first 32 codes but KEY_RESERVED): a full keyboard.
  if ((c.key.Word(0) & 0xFFFFFFFEUL) == 0xFFFFFFFEUL) {
    out.emplace_back("ID_INPUT_KEYBOARD", "1");
    return true;
  }
  return found;
}

}  // namespace

Properties InputId(const SysfsView& view, absl::string_view devpath) {
  Properties out;
  // The device itself or its nearest input ancestor with capabilities (eventN -> inputN).
  std::optional<std::string> input(devpath);
  while (input.has_value() && !view.Attribute(*input, "capabilities/ev").has_value()) {
    input = ParentWith(view, *input, "input");
  }
  if (!input.has_value()) return out;
  auto read = [&](absl::string_view name, unsigned max_bit) {
    return Bitmap(view.Attribute(*input, name).value_or(""), max_bit);
  };
  const Caps caps{read("capabilities/ev", EV_MAX), read("capabilities/abs", ABS_MAX),
                  read("capabilities/rel", REL_MAX), read("capabilities/key", KEY_MAX),
                  read("properties", INPUT_PROP_MAX)};
  uint32_t bustype = 0;
  if (std::optional<std::string> b = view.Attribute(*input, "id/bustype"); b.has_value()) {
    if (!absl::SimpleHexAtoi(*b, &bustype)) bustype = 0;
  }
  out.emplace_back("ID_INPUT", "1");
  const bool is_pointer = TestPointers(caps, static_cast<uint16_t>(bustype), out);
  const bool is_key = TestKey(caps, out);
  // Some evdev nodes have only a scroll wheel.
  if (!is_pointer && !is_key && caps.ev.Test(EV_REL) &&
      (caps.rel.Test(REL_WHEEL) || caps.rel.Test(REL_HWHEEL))) {
    out.emplace_back("ID_INPUT_KEY", "1");
  }
  if (caps.ev.Test(EV_SW)) out.emplace_back("ID_INPUT_SWITCH", "1");
  return out;
}

absl::string_view PropertyValue(const Properties& props, absl::string_view key) {
  for (const auto& [k, v] : props) {
    if (k == key) return v;
  }
  return "";
}

void SetProperty(Properties& props, absl::string_view key, absl::string_view value) {
  for (auto& [k, v] : props) {
    if (k == key) {
      v = std::string(value);
      return;
    }
  }
  props.emplace_back(std::string(key), std::string(value));
}

}  // namespace hotring::hotplug::udev

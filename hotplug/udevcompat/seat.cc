#include "hotplug/udevcompat/seat.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "hotplug/udev/database.h"

namespace hotring::hotplug::udevcompat {
namespace {

// ENV{key} as a rule sees it: what earlier rules and builtins set, else the kernel's variable.
std::string Env(const Event& event, const udev::Properties& props, absl::string_view key) {
  for (const auto& [k, v] : props) {
    if (k == key) return v;
  }
  return std::string(event.Get(key).value_or(""));
}

// KERNEL=="<prefix>[0-9]*" (any == false: nothing may follow the digit, "<prefix>[0-9]").
bool PrefixDigit(absl::string_view kernel, absl::string_view prefix, bool any = true) {
  if (!absl::StartsWith(kernel, prefix) || kernel.size() <= prefix.size()) return false;
  if (!absl::ascii_isdigit(static_cast<unsigned char>(kernel[prefix.size()]))) return false;
  return any || kernel.size() == prefix.size() + 1;
}

// SUBSYSTEMS=="scsi", ATTRS{type}=="4|5": one ancestor (or the device) that is both.
bool ScsiOpticalOrWorm(const udev::SysfsView& view, absl::string_view devpath) {
  for (std::optional<std::string> d(devpath); d.has_value(); d = udev::ParentOf(view, *d)) {
    if (udev::SubsystemOf(view, *d) != "scsi") continue;
    const std::string type = view.Attribute(*d, "type").value_or("");
    if (type == "4" || type == "5") return true;
  }
  return false;
}

// 70-uaccess.rules' matches on properties alone (set by other packages' rules or the hwdb):
// honoured when an earlier stage set them.
bool UaccessByProperty(const Event& event, const udev::Properties& props, absl::string_view kernel) {
  const std::string subsystem = event.subsystem;
  auto set = [&](absl::string_view key) { return !Env(event, props, key).empty(); };
  auto one = [&](absl::string_view key) { return Env(event, props, key) == "1"; };
  if (set("ID_GPHOTO2") || Env(event, props, "libsane_matched") == "yes" || one("ID_HPLIP") ||
      set("ID_SMARTCARD_READER") || set("ID_SECURITY_TOKEN") || set("ID_PDA") ||
      one("ID_REMOTE_CONTROL") || set("COLOR_MEASUREMENT_DEVICE") || set("DDC_DEVICE") ||
      set("ID_SOFTWARE_RADIO") || set("ID_MAKER_TOOL")) {
    return true;
  }
  if (subsystem == "usb" && set("ID_MEDIA_PLAYER")) return true;
  if (set("ID_SIGNAL_ANALYZER") &&
      (Env(event, props, "DEVTYPE") == "usb_device" || PrefixDigit(kernel, "ttyACM"))) {
    return true;
  }
  if ((subsystem == "hidraw" || subsystem == "usb") &&
      (one("ID_AV_PRODUCTION_CONTROLLER") || one("ID_AV_LIGHTS") || one("ID_HARDWARE_WALLET"))) {
    return true;
  }
  return false;
}

// 70-uaccess.rules for a device with a node (the file skips the others).
bool Uaccess(const udev::SysfsView& view, const Event& event, const udev::Properties& props,
             absl::string_view kernel) {
  const std::string& subsystem = event.subsystem;
  if (subsystem == "usb" && absl::StrContains(Env(event, props, "ID_USB_INTERFACES"), ":060101:")) {
    return true;
  }
  if (subsystem == "block" && Env(event, props, "ID_CDROM") == "1") return true;
  if (subsystem == "scsi_generic" && ScsiOpticalOrWorm(view, event.devpath)) return true;
  if (subsystem == "sound" || subsystem == "video4linux" || subsystem == "dvb" ||
      subsystem == "media") {
    return true;
  }
  if (subsystem == "drm" &&
      (absl::StartsWith(kernel, "card") || absl::StartsWith(kernel, "renderD"))) {
    return true;
  }
  if (subsystem == "misc" && (kernel == "kvm" || kernel == "rfkill")) return true;
  if (subsystem == "input" && !Env(event, props, "ID_INPUT_JOYSTICK").empty()) return true;
  return UaccessByProperty(event, props, kernel);
}

// ENV{ID_PCI_CLASS_FROM_DATABASE}=="Display controller": the hwdb's name of PCI base class 0x03;
// without the hwdb's property, the class attribute says the same.
bool DisplayController(const udev::SysfsView& view, const Event& event, const udev::Properties& props) {
  const std::string from_db = Env(event, props, "ID_PCI_CLASS_FROM_DATABASE");
  if (!from_db.empty()) return from_db == "Display controller";
  const std::string cls =
      absl::AsciiStrToLower(view.Attribute(event.devpath, "class").value_or(""));
  return cls.size() == 8 && absl::StartsWith(cls, "0x03");
}

}  // namespace

std::optional<std::string> KernelCmdlineValue(absl::string_view cmdline, absl::string_view key) {
  std::optional<std::string> value;
  for (absl::string_view word :
       absl::StrSplit(cmdline, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (word == key) {
      value.emplace(1, '1');  // (assigning a literal trips a GCC 12 -Wrestrict false positive)
    } else if (absl::StartsWith(word, key) && word.size() > key.size() && word[key.size()] == '=') {
      value = std::string(word.substr(key.size() + 1));
    }
  }
  return value;
}

std::vector<std::string> ApplySeatRules(const udev::SysfsView& view, const Event& event,
                                        const SeatContext& context, udev::Properties& props) {
  std::vector<std::string> tags;
  if (event.action == "remove") return tags;
  auto has = [&](absl::string_view tag) {
    return std::find(tags.begin(), tags.end(), tag) != tags.end();
  };
  auto tag = [&](absl::string_view t) {
    if (!has(t)) tags.emplace_back(t);
  };
  const std::string kernel = udev::SysnameOf(event.devpath);
  const std::string& subsystem = event.subsystem;

  // 70-uaccess.rules: ENV{MAJOR}=="", GOTO="uaccess_end".
  if (!Env(event, props, "MAJOR").empty() && Uaccess(view, event, props, kernel)) tag("uaccess");

  // 71-seat.rules.
  if (has("uaccess") && subsystem != "sound") tag("seat");
  if (subsystem == "sound" && absl::StartsWith(kernel, "card")) tag("seat");
  if (subsystem == "input" && absl::StartsWith(kernel, "input")) tag("seat");
  if (subsystem == "graphics" && PrefixDigit(kernel, "fb")) tag("seat");
  if (subsystem == "leds" || subsystem == "backlight") tag("seat");
  // IMPORT{cmdline}="nomodeset" sets the property when the command line has it, and the rule
  // matches only then.
  auto import_nomodeset = [&]() {
    if (!context.nomodeset.has_value()) return false;
    udev::SetProperty(props, "nomodeset", *context.nomodeset);
    return true;
  };
  if (subsystem == "graphics" && PrefixDigit(kernel, "fb", /*any=*/false) && import_nomodeset()) {
    tag("master-of-seat");
  }
  if (subsystem == "pci" && DisplayController(view, event, props) &&
      Env(event, props, "DRIVER").empty() && import_nomodeset()) {
    tag("seat");
    tag("master-of-seat");
  }
  if (Env(event, props, "ID_TAG_MASTER_OF_SEAT") == "1") tag("master-of-seat");
  if (subsystem == "drm" && PrefixDigit(kernel, "card")) {
    tag("seat");
    tag("master-of-seat");
  }
  if (subsystem == "usb") {
    const std::string device_class = view.Attribute(event.devpath, "bDeviceClass").value_or("");
    if (device_class == "00" || device_class == "09") tag("seat");
    const std::string vendor = view.Attribute(event.devpath, "idVendor").value_or("");
    const std::string product = view.Attribute(event.devpath, "idProduct").value_or("");
    // The Plugable USB docking hub.
    if (vendor == "2230" && (product == "0001" || product == "0003"))
      udev::SetProperty(props, "ID_AUTOSEAT", "1");
    // The Mimo 720's hub, recognized by its graphics function on port 2.
    if (vendor == "058f" && product == "6254") {
      const std::string port2 = absl::StrCat(kernel, ".2/");
      if (view.Attribute(event.devpath, absl::StrCat(port2, "idVendor")) == "17e9" &&
          view.Attribute(event.devpath, absl::StrCat(port2, "idProduct")) == "401a" &&
          view.Attribute(event.devpath, absl::StrCat(port2, "product")) == "mimo inc") {
        udev::SetProperty(props, "ID_AUTOSEAT", "1");
        udev::SetProperty(props, "ID_AVOID_LOOP", "1");
      }
    }
  }
  // qemu's pci-bridge-seat groups the devices of one seat.
  if (subsystem == "pci" && view.Attribute(event.devpath, "vendor") == "0x1b36" &&
      view.Attribute(event.devpath, "device") == "0x000a") {
    tag("seat");
    udev::SetProperty(props, "ID_AUTOSEAT", "1");
  }
  if (has("seat") && Env(event, props, "ID_PATH").empty()) {
    for (const auto& [k, v] : udev::PathId(view, event.devpath)) udev::SetProperty(props, k, v);
  }
  if (has("seat") && Env(event, props, "ID_FOR_SEAT").empty()) {
    const std::string path_tag = Env(event, props, "ID_PATH_TAG");
    if (!path_tag.empty())
      udev::SetProperty(props, "ID_FOR_SEAT", absl::StrCat(subsystem, "-", path_tag));
  }

  // 73-seat-late.rules.
  std::string seat = Env(event, props, "ID_SEAT");
  if (seat.empty() && Env(event, props, "ID_AUTOSEAT") == "1" &&
      !Env(event, props, "ID_FOR_SEAT").empty()) {
    seat = absl::StrCat("seat-", Env(event, props, "ID_FOR_SEAT"));
    udev::SetProperty(props, "ID_SEAT", seat);
  }
  if (seat.empty() && !context.parent_id_seat.empty()) {
    seat = context.parent_id_seat;
    udev::SetProperty(props, "ID_SEAT", seat);
  }
  // TAG+="$env{ID_SEAT}": udev refuses (and logs) a name with other characters.
  if (!seat.empty() && udev::ValidTagName(seat)) tag(seat);
  return tags;
}

}  // namespace hotring::hotplug::udevcompat

// Device: what one mdev.conf rule is matched against for one event. Borrows every string (from
// an Event, or from the mdev applet's environment and sysfs reads); it owns nothing and must not
// outlive what it points at.
#ifndef HOTRING_HOTPLUG_RULES_DEVICE_H_
#define HOTRING_HOTPLUG_RULES_DEVICE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/devroot/dev_root.h"
#include "hotplug/event.h"

namespace hotring::hotplug::rules {

// What the rules do for an event depends only on this (busybox: "add", "remove", anything else).
enum class DeviceAction {
  kAdd,     // create nodes and links, run '@' and '*' commands, load FIRMWARE
  kRemove,  // run '$' and '*' commands, then remove nodes and links
  kOther,   // change, move, bind, ...: run '*' commands only
};

using devroot::DevNumber;

struct Device {
  DeviceAction action = DeviceAction::kOther;
  absl::string_view devpath;    // DEVPATH ("/devices/..."), for block detection and firmware
  absl::string_view subsystem;  // SUBSYSTEM, may be empty
  // The name matched by device regexes and the node's default path under the dev root:
  // DEVNAME ("sda", "snd/controlC0", "bus/usb/001/003"); without DEVNAME, the DEVNAME line of
  // /sys$DEVPATH/uevent, else the last component of DEVPATH (busybox's order). The engine
  // refuses names that leave the dev root ("..", absolute, empty components).
  absl::string_view name;
  // The node's number (MAJOR/MINOR, or /sys$DEVPATH/dev "M:m"); nullopt: no node to create
  // (commands still run).
  std::optional<DevNumber> number;
  // FIRMWARE; empty when absent. On add the engine plans a firmware load; a remove event
  // carrying FIRMWARE is ignored entirely (busybox: it deleted nodes by mistake).
  absl::string_view firmware;
  // The event's whole environment, in order: what $ENVVAR=regex and ENVVAR=regex; prefixes
  // look at, and what commands receive (with MDEV added). SUBSYSTEM=regex; prefixes look up
  // "SUBSYSTEM" here, so callers put it in.
  absl::Span<const std::pair<std::string, std::string>> env;

  // The value of `key` in env (the first one), or nullopt.
  [[nodiscard]] std::optional<absl::string_view> Get(absl::string_view key) const {
    for (const auto& [k, v] : env) {
      if (k == key) return absl::string_view(v);
    }
    return std::nullopt;
  }

  // Block or character node: block when DEVPATH contains "/block/" or SUBSYSTEM starts with
  // "block" (busybox's test).
  [[nodiscard]] bool IsBlock() const;
};

// "add" -> kAdd, "remove" -> kRemove, anything else -> kOther.
[[nodiscard]] DeviceAction ParseDeviceAction(absl::string_view action);

// "8:0\n" (a sysfs `dev` file) -> {8, 0}; nullopt when malformed.
[[nodiscard]] std::optional<DevNumber> ParseDevNumber(absl::string_view text);

// A Device borrowing `event`: name = DEVNAME, else the last component of DEVPATH; number from
// MAJOR and MINOR when both parse. (The daemon's handler additionally reads /sys$DEVPATH/dev
// when an add event has no MAJOR/MINOR.)
[[nodiscard]] Device DeviceFromEvent(const Event& event);

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_DEVICE_H_

// The tags and seat properties of udev's own seat rules (systemd 252, Debian 12), computed in
// process: 70-uaccess.rules ("uaccess"), 71-seat.rules ("seat", "master-of-seat", ID_FOR_SEAT,
// ID_AUTOSEAT and the path_id import for seat devices) and 73-seat-late.rules (ID_SEAT and its
// tag). logind, libinput's seat assignment and wlroots' seat code read them through libudev
// (the device's tags, `udev_enumerate_add_match_tag`, a monitor's tag filter). Pure: the device
// is read through a udev::SysfsView; the kernel command line and the parent's ID_SEAT are given.
#ifndef HOTRING_HOTPLUG_UDEVCOMPAT_SEAT_H_
#define HOTRING_HOTPLUG_UDEVCOMPAT_SEAT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "hotplug/event.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::hotplug::udevcompat {

// What the seat rules read beyond the device itself. Owns its strings.
struct SeatContext {
  // IMPORT{cmdline}="nomodeset": the value the kernel command line gives it ("1" for a bare
  // `nomodeset`), nullopt when the command line has none.
  std::optional<std::string> nomodeset;
  // IMPORT{parent}="ID_SEAT": the parent device's ID_SEAT in the database ("" when none).
  std::string parent_id_seat;
};

// The value of `key` on a kernel command line, as udev's cmdline import reads it: the last
// `key` or `key=VALUE` word ("1" for a bare key); nullopt when absent. Quotes are not handled.
[[nodiscard]] std::optional<std::string> KernelCmdlineValue(absl::string_view cmdline,
                                                            absl::string_view key);

// Applies the three rule files to an add/change/... event of `event.devpath`, after the
// builtins' properties `props` (ComputeProperties): adds what the rules set to `props` (ID_PATH
// and ID_PATH_TAG of seat devices that had none, ID_FOR_SEAT, ID_AUTOSEAT, ID_AVOID_LOOP,
// ID_SEAT, nomodeset) and returns the tags, each once, in the order the rules add them. A
// remove event gets nothing (the rules skip it; its tags are the database's).
// Not reproduced: the rules' matches on properties only other packages or the hwdb set
// (ID_GPHOTO2, libsane_matched, ID_SMARTCARD_READER, ... are honoured when `props` has them),
// the hwdb's ID_TAG_MASTER_OF_SEAT for fb devices, the Mimo 720's parent retrigger (a RUN), and
// the uaccess builtin's ACLs (logind's job).
[[nodiscard]] std::vector<std::string> ApplySeatRules(const udev::SysfsView& view, const Event& event,
                                                      const SeatContext& context,
                                                      udev::Properties& props);

}  // namespace hotring::hotplug::udevcompat

#endif  // HOTRING_HOTPLUG_UDEVCOMPAT_SEAT_H_

// udevd 252's `hwdb` builtin over a Hwdb: `IMPORT{builtin}="hwdb"` looks up the MODALIAS of the
// device or, failing that, of its parents (a usb_device without one gets
// "usb:vXXXXpYYYY:product", and ends the walk), `--subsystem=S` only looks at devices of S,
// `--lookup-prefix=P` puts P before each lookup string, `--filter=GLOB` keeps the properties
// whose name matches, and an operand (`hwdb 'evdev:name:...'`) is looked up as it is.
#ifndef HOTRING_HOTPLUG_UDEV_HWDB_BUILTIN_H_
#define HOTRING_HOTPLUG_UDEV_HWDB_BUILTIN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/udev/builtin_device.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/hwdb.h"

namespace hotring::hotplug::udev {

// The builtin: the properties it sets. NotFound when no entry matched (udevd fails the import
// then too), InvalidArgument for `--device` (no rule of Debian's uses it; not supported), and
// the lookup's error for a corrupt database.
[[nodiscard]] absl::StatusOr<Properties> HwdbBuiltin(const BuiltinDevice& device,
                                                     absl::Span<const std::string> argv,
                                                     const Hwdb& hwdb);

// One lookup of `prefix` + `modalias`, the properties whose name matches `filter` (empty: all),
// as udev_builtin_hwdb_lookup adds them.
[[nodiscard]] absl::StatusOr<Properties> HwdbLookupProperties(const Hwdb& hwdb,
                                                              absl::string_view prefix,
                                                              absl::string_view modalias,
                                                              absl::string_view filter);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_HWDB_BUILTIN_H_

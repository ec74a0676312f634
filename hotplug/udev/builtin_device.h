// What udevd hands each builtin, for the builtins beyond input_id/path_id/usb_id: the device
// (its sysfs, its devpath, the properties the event has so far) and the builtin's argv, parsed
// as getopt_long parses it. Borrowed for the length of one call.
#ifndef HOTRING_HOTPLUG_UDEV_BUILTIN_DEVICE_H_
#define HOTRING_HOTPLUG_UDEV_BUILTIN_DEVICE_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::hotplug::udev {

// A property borrowed for the length of a call (the same type as the rules engine's).
using PropertyView = std::pair<absl::string_view, absl::string_view>;

// The device a builtin runs for. Borrows everything.
struct BuiltinDevice {
  const SysfsView& sysfs;
  absl::string_view devpath;  // "/devices/..."
  // The event's properties so far (the uevent's and those earlier rules set), in order. udevd
  // reads a parent's properties from its uevent file; so do the builtins here.
  absl::Span<const PropertyView> properties;

  // The last value of `key` among `properties`.
  [[nodiscard]] std::optional<absl::string_view> Property(absl::string_view key) const;
  // The device's subsystem: SUBSYSTEM, else its sysfs link.
  [[nodiscard]] std::string Subsystem() const;
  // DEVTYPE, else the uevent file's.
  [[nodiscard]] std::string DevType() const;
  // DEVNAME as a path ("/dev/" prepended when relative); "" when the device has no node.
  [[nodiscard]] std::string DevNode() const;
};

// A builtin's options and operands, as getopt_long (GNU, permuting) reads them.
struct ParsedArgs {
  // (short option letter, argument) in order; '?' for an unknown option or a missing argument
  // (udevd's builtins ignore those).
  std::vector<std::pair<char, std::string>> options;
  std::vector<std::string> operands;  // the non-option arguments, in order
};

// A long option: its name, whether it takes an argument, and the letter it stands for.
struct LongOption {
  absl::string_view name;
  bool has_argument;
  char letter;
};

// Parses argv[1...] (argv[0] is the builtin's name) with `short_options` (getopt's "f:d:")
// and `long_options` (a unique prefix of a long name is that option, as with getopt_long).
[[nodiscard]] ParsedArgs ParseBuiltinArgs(absl::Span<const std::string> argv,
                                          absl::string_view short_options,
                                          absl::Span<const LongOption> long_options);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_BUILTIN_DEVICE_H_

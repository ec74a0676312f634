// RuleHost: everything the udev rules executor asks of the world outside it. The executor is
// pure apart from these calls: sysfs reads of the device and its parents, attribute and sysctl
// writes, TEST's file checks, programs (PROGRAM, IMPORT{program}), builtins, the device
// database, files (IMPORT{file}), the kernel command line, user and group names. A daemon
// implements it over its sysfs, spawner and database; tests over a recorded tree.
#ifndef HOTRING_HOTPLUG_UDEVRULES_RULE_HOST_H_
#define HOTRING_HOTPLUG_UDEVRULES_RULE_HOST_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace hotring::hotplug::udevrules {

// A property borrowed for the length of a call.
using PropertyView = std::pair<absl::string_view, absl::string_view>;

// Properties owned by the one who fills them.
using OwnedProperties = std::vector<std::pair<std::string, std::string>>;

// A device's entry in udevd's database (/run/udev/data), as the host keeps it. Owns its strings.
struct DatabaseEntry {
  OwnedProperties properties;         // E: lines
  std::vector<std::string> tags;      // G: every tag the device ever had
  std::vector<std::string> current_tags;  // Q: the tags of its last event
  std::vector<std::string> links;     // S: relative to /dev
  int link_priority = 0;              // L:
  void Clear() {
    properties.clear();
    tags.clear();
    current_tags.clear();
    links.clear();
    link_priority = 0;
  }
};

// Answers for one event at a time; may be called from the thread running the executor only.
// Devpaths are as in uevents ("/devices/..."), relative to the sysfs mount. Methods that fill
// `*out` reuse its storage (so a host that keeps its buffers allocates nothing per event).
class RuleHost {
 public:
  virtual ~RuleHost() = default;

  // --- sysfs of the device and its ancestors ---
  // An attribute of the device at `devpath` ("name" may hold '/', e.g. "device/vendor"): the
  // file's content without trailing newlines, or the last component of a symlink's target
  // (ATTR{driver}). False when missing or unreadable.
  virtual bool ReadAttribute(absl::string_view devpath, absl::string_view name, std::string* out) = 0;
  // The device's subsystem (its "subsystem" link's name); false when it has none.
  virtual bool Subsystem(absl::string_view devpath, std::string* out) = 0;
  // The name of the device's "driver" link; false when it has none.
  virtual bool Driver(absl::string_view devpath, std::string* out) = 0;
  // The nearest ancestor directory that is a device (holds a uevent file); false at the top.
  virtual bool Parent(absl::string_view devpath, std::string* out) = 0;
  // "[subsystem/sysname]": the devpath of that device (under /devices, /bus/*/drivers or
  // /module, as sd_device_new_from_subsystem_sysname finds it); false when there is none.
  virtual bool FindDevice(absl::string_view subsystem, absl::string_view sysname, std::string* out) = 0;

  // --- files (absolute paths; "/sys/..." is the sysfs the devpaths are in) ---
  // stat(2)'s st_mode of `path` (links followed); nullopt when it does not exist.
  virtual std::optional<uint32_t> FileMode(absl::string_view path) = 0;
  // The names in directory `path` (no "." entries), for TEST and ATTR paths with "/*/".
  virtual bool ListDirectory(absl::string_view path, std::vector<std::string>* names) = 0;
  // ATTR{...}="value": write `value` to the attribute file at `path`.
  virtual absl::Status WriteAttribute(absl::string_view path, absl::string_view value) = 0;
  // IMPORT{file}: the file's content, at most `max_size` bytes. NotFound when it does not
  // exist (the import just fails); any other error stops the event's rules, as in udevd.
  virtual absl::Status ReadFile(absl::string_view path, size_t max_size, std::string* out) = 0;

  // --- kernel parameters (names with '/' separators, relative to /proc/sys) ---
  virtual bool ReadSysctl(absl::string_view name, std::string* out) = 0;
  virtual absl::Status WriteSysctl(absl::string_view name, absl::string_view value) = 0;

  // --- programs and builtins ---
  // PROGRAM and IMPORT{program}: runs argv (argv[0] absolute, split as udev splits, never
  // through a shell) with `env` as its whole environment, waits at most `timeout`, and returns
  // its standard output (at most `max_output` bytes kept) when it exits 0. Any failure (cannot
  // start, non-zero exit, killed at the timeout) is an error: the key does not match.
  virtual absl::Status RunProgram(absl::Span<const std::string> argv,
                                  absl::Span<const PropertyView> env, absl::Duration timeout,
                                  size_t max_output, std::string* out) = 0;
  // IMPORT{builtin}: runs builtin `name` for the device with `argv` (split from `command`, the
  // rule's value after substitution; argv[0] as the rule wrote it) and appends the properties
  // it sets to *out. An error: the builtin failed (the import fails).
  virtual absl::Status RunBuiltin(absl::string_view name, absl::string_view command,
                                  absl::Span<const std::string> argv,
                                  absl::string_view devpath, absl::Span<const PropertyView> properties,
                                  OwnedProperties* out) = 0;

  // --- the device database ---
  // The event device's entry from its earlier events: IMPORT{db}, the tags it keeps, and for
  // remove events its properties, tags and links. False when it has none.
  virtual bool ReadDatabase(absl::string_view devpath, DatabaseEntry* out) = 0;
  // Another device's properties as libudev would list them (its uevent file, DEVPATH,
  // SUBSYSTEM, and its database entry), replacing *out: IMPORT{parent}, which adds DRIVER from
  // the driver link itself when the uevent file has none (Driver()). False when not a device.
  virtual bool DeviceProperties(absl::string_view devpath, OwnedProperties* out) = 0;
  // Another device's tags (from its database entry): TAGS==. Empty when none.
  virtual void DeviceTags(absl::string_view devpath, std::vector<std::string>* out) = 0;

  // --- the system ---
  // The kernel command line (IMPORT{cmdline}).
  virtual absl::string_view KernelCommandLine() = 0;
  // CONST{arch} (e.g. "x86-64", "arm64") and CONST{virt} ("none", "kvm", "docker", ...).
  virtual absl::string_view Constant(absl::string_view name) = 0;
  // OWNER/GROUP names given at run time (resolve_names=late, or names with substitutions).
  virtual std::optional<uint32_t> UserId(absl::string_view name) = 0;
  virtual std::optional<uint32_t> GroupId(absl::string_view name) = 0;
};

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_RULE_HOST_H_

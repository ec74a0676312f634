// Sysfs enumeration the way `udevadm trigger` does it (systemd's sd-device enumerator), and
// reading a device's `uevent` file into an Event. Used by `hotring trigger` (coldplug) and by
// the daemon's re-synchronisation after a netlink overrun (SynthesizeAddEvents).
//
// What is enumerated, relative to the sysfs root (normally /sys):
//  - subsystems: /module/*            (subsystem "module"),
//                /bus/*               (subsystem "subsystem": the bus itself),
//                /bus/*/drivers/*     (subsystem "drivers");
//  - devices:    /bus/*/devices/*  and  /class/*/*   (or /subsystem/*/devices/* where the
//                kernel has the unified /sys/subsystem), symlinks resolved into /devices, each
//                device once.
// Only entries with a `uevent` file count (nothing else can be triggered or read). The order is
// stable: component-wise by DEVPATH, so a parent always comes before its children; as udevadm,
// md/dm block devices come after everything else and a sound card's controlC* device after the
// card's other devices.
//
// Sysfs changes under our feet: a device that vanishes mid-walk (ENOENT, ENODEV, ENOTDIR) is
// skipped and counted, and a directory or file that cannot be read for another reason is
// reported as a SysfsProblem; neither stops the walk. Only an unusable root is an error.
//
// Blocking file I/O, about a dozen syscalls per object (realpath resolves link by link): a walk
// of a small VM's /sys (444 objects) plus reading every device's uevent file takes tens of
// milliseconds. The daemon's resync runs it on the loop thread; on machines with tens of
// thousands of devices that is a pause worth moving off the loop.
#ifndef HOTRING_HOTPLUG_SYSFS_H_
#define HOTRING_HOTPLUG_SYSFS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/event.h"

namespace hotring::hotplug {

inline constexpr absl::string_view kDefaultSysfsRoot = "/sys";

enum class SysfsEntryKind { kModule, kBus, kDriver, kDevice };

// One object under the sysfs root that has a `uevent` file.
struct SysfsEntry {
  SysfsEntryKind kind = SysfsEntryKind::kDevice;
  // Relative to the root, starting with '/', symlinks resolved ("/devices/pci0000:00/...").
  std::string devpath;
  // Devices: the basename of the `subsystem` link (the bus or class directory's name when the
  // link is missing). Others: "module", "subsystem" (a bus) or "drivers", as udevadm names them.
  std::string subsystem;
  std::string sysname;  // the last component of devpath
};

// Something that could not be read; the walk went on without it.
struct SysfsProblem {
  std::string path;  // absolute path of the file or directory
  absl::Status status;
};

// Which entries a scan keeps, with udevadm trigger's semantics. Patterns are fnmatch(3) globs.
struct SysfsFilter {
  bool subsystems = true;  // modules, buses, drivers
  bool devices = true;
  // Kept if the subsystem matches no nomatch pattern and, when match patterns are given, one
  // of them. For subsystem entries the name matched is "module", "subsystem" or "drivers".
  std::vector<std::string> subsystem_match;
  std::vector<std::string> subsystem_nomatch;
  std::vector<std::string> sysname_match;  // any one must match the sysname, when given
  // ATTR (file name relative to the entry) with an optional VALUE glob: the attribute must
  // exist and, when a value is given, its content (trailing whitespace removed) must match.
  // Every one must hold.
  struct Attribute {
    std::string name;
    std::optional<std::string> value;
  };
  std::vector<Attribute> attr_match;
};

struct SysfsScan {
  // Subsystem entries first (sorted), then devices (sorted); each object at most once.
  std::vector<SysfsEntry> entries;
  std::vector<SysfsProblem> problems;
  size_t vanished = 0;  // entries that disappeared between listing and reading
};

// Walks `sysfs_root`. Errors only when the root is not a readable directory.
absl::StatusOr<SysfsScan> ScanSysfs(absl::string_view sysfs_root, const SysfsFilter& filter);

// Strict weak order of DEVPATHs used by ScanSysfs (true if `a` must be handled before `b`).
[[nodiscard]] bool DevpathBefore(absl::string_view a, absl::string_view b);

// `sysfs_root` + entry.devpath + "/uevent".
[[nodiscard]] std::string UeventPath(absl::string_view sysfs_root, const SysfsEntry& entry);

// Reads the entry's `uevent` file into an Event with ACTION=`action`, DEVPATH, SUBSYSTEM, then
// the file's KEY=VALUE lines in order (DEVNAME, MAJOR, MINOR, MODALIAS, DEVTYPE, DRIVER, ...),
// no SEQNUM, validated as every event is (event_parser.h EventFromEnv). NotFound if the entry
// vanished; the errno status of a failed read; InvalidArgument for a file that is not KEY=VALUE
// lines or an env EventFromEnv rejects.
absl::StatusOr<Event> ReadUeventFile(absl::string_view sysfs_root, const SysfsEntry& entry,
                                     absl::string_view action, EventSource source);

// Result of SynthesizeAddEventsReport.
struct SynthesizedEvents {
  std::vector<Event> events;  // in ScanSysfs order
  std::vector<SysfsProblem> problems;
  size_t vanished = 0;
};

// Re-synchronisation after lost uevents (as busybox mdev's rescan): an `add` event, source
// kResync, for every present device (no modules, buses or drivers), read from its `uevent`
// file. Vanished devices are skipped and counted; unreadable ones are reported and skipped.
absl::StatusOr<SynthesizedEvents> SynthesizeAddEventsReport(absl::string_view sysfs_root);

// The same, logging each problem (one warning line each) and returning only the events.
absl::StatusOr<std::vector<Event>> SynthesizeAddEvents(absl::string_view sysfs_root);

// True for the errors that mean "the object went away" (ENOENT, ENODEV, ENOTDIR, ESTALE).
[[nodiscard]] bool IsVanishedErrno(int err);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_SYSFS_H_

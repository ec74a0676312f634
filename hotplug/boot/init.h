// `hotring init`: hotring as PID 1 of an initramfs (also when invoked as `init`, i.e. /init is
// a symlink to hotring). Mounts /proc, /sys, /dev (devtmpfs) and /run, starts the daemon as a
// child, coldplugs (`trigger --action add --type devices --drivers-first` + settle), prints a
// one-line summary and a `hotring-report:` block of facts (boot_report.h), then either
// switches to the root given by `root=` or powers off (`hotring.test`). It never returns and
// never exits: when the boot cannot go on it says why on the console and then opens a shell,
// reboots, halts or powers off as the command line says (rescue.h).
#ifndef HOTRING_HOTPLUG_BOOT_INIT_H_
#define HOTRING_HOTPLUG_BOOT_INIT_H_

#include <string>
#include <vector>

namespace hotring::hotplug::boot {

// Refuses (exit 2) unless it runs as PID 1: it mounts, kills and powers off.
int InitCommand(const std::vector<std::string>& args);

// Where the image lists extra `hotring daemon` arguments, one per line ('#' comments).
inline constexpr char kDaemonArgsFile[] = "/etc/hotring/daemon.args";

}  // namespace hotring::hotplug::boot

#endif  // HOTRING_HOTPLUG_BOOT_INIT_H_

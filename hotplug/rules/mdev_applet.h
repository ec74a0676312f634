// `mdev`: hotring as a drop-in for busybox's mdev, when invoked as `mdev` (a symlink) or as
// `hotring mdev`. Same options, same /etc/mdev.conf, same /dev results and exit codes:
//   mdev        one event from the environment (the kernel's hotplug helper), in /dev/mdev.seq
//               order when that file exists;
//   mdev -s     every device under /sys/dev, commands run synchronously;
//   mdev -d [-f]  the scan, then `hotring daemon` on kernel uevents with these rules (forks
//               into the background after the scan unless -f).
// Needs nothing but /etc/mdev.conf, /etc/passwd, /etc/group, /sys and /dev (and /bin/sh for
// commands).
#ifndef HOTRING_HOTPLUG_RULES_MDEV_APPLET_H_
#define HOTRING_HOTPLUG_RULES_MDEV_APPLET_H_

#include <string>
#include <vector>

namespace hotring::hotplug::rules {

// Runs the applet; `args` are the arguments after argv[0] (or after `hotring mdev`). Returns
// the exit code: 0, or 1 for a usage error or a fatal one (no /dev, unreadable mdev.conf, a
// regex that does not compile), as busybox does.
int RunMdevApplet(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_MDEV_APPLET_H_

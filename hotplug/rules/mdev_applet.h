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

#include <functional>
#include <string>
#include <vector>

#include "core/log.h"
#include "hotplug/rules/rules_handler.h"

namespace hotring::hotplug::rules {

// What `mdev -d` asks of whoever starts daemons in this binary (the applet is a stage's tool
// and starts none itself): a daemon on kernel uevents whose handler is a RulesHandler made from
// `handler` (in the process that will serve), which calls `scan` once bound and before it says
// it is ready — or, when `scan_first` (an empty /dev: the handler needs /dev/null, which the
// scan makes), before the handler is made.
struct MdevDaemon {
  RulesHandler::Options handler;
  std::string socket;      // the control socket
  std::string sysfs_root;
  bool foreground = false;   // -f: no fork
  bool syslog = false;       // -S: the log goes to /dev/kmsg, and stderr stays once detached
  LogLevel level = LogLevel::kWarning;
  bool scan_first = false;
  std::function<void()> scan;
};
// Runs the daemon `mdev -d` asked for until it stops; returns the exit code.
using MdevDaemonRunner = std::function<int(MdevDaemon)>;

// Runs the applet; `args` are the arguments after argv[0] (or after `hotring mdev`). Returns
// the exit code: 0, or 1 for a usage error or a fatal one (no /dev, unreadable mdev.conf, a
// regex that does not compile), as busybox does. `run_daemon` serves `mdev -d`.
int RunMdevApplet(const std::vector<std::string>& args, const MdevDaemonRunner& run_daemon);

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_MDEV_APPLET_H_

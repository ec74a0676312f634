// `hotring bench udev-rules`: a distribution's full rule set (udevd's rules directories) on a
// coldplug of this machine's devices, through the real daemon (`daemon --udev-compat`) and, in
// the same run, through Debian's systemd-udevd 252 on the same devices and rules. Both run in a
// private mount and network namespace of the bench (tmpfs over /run, a tmpfs /dev holding
// copies of the machine's nodes, made anew for each daemon), so neither touches the machine's
// /dev or /run/udev nor announces to its listeners. Each run walks /sys and writes `change`
// into every uevent file (harmless; never add or remove), counts the kernel's uevents on group
// 1 and waits for as many libudev announcements on group 2: the time from the first write to
// the last announcement is the settle wall time; the daemon's CPU (all its threads and
// processes, the programs they ran included) over the same window, per event, is the cost.
// With --engine, the rules engine alone on the same devices (bench_udev_rules.h) is printed too.
// With --guest (first), the same comparison in qemu guests at several sizes, 100 to 4,000
// devices: a checkout's testing/udevcompat/bench_scale.sh, execed with this binary as the
// drop-in, as `bench boot` execs bench_boot.sh.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_UDEV_DAEMON_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_UDEV_DAEMON_H_

#include <string>
#include <vector>

namespace hotring::hotplug::bench {

// Parses the arguments after `bench udev-rules`, runs, prints; returns the exit code.
int BenchUdevRulesCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_UDEV_DAEMON_H_

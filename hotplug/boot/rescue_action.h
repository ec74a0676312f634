// Carrying out a RescuePlan (rescue.h) as PID 1: a shell on the console, a reboot, a halt or a
// power-off. PID 1 never exits (the kernel would panic): the shell runs as its child.
#ifndef HOTRING_HOTPLUG_BOOT_RESCUE_ACTION_H_
#define HOTRING_HOTPLUG_BOOT_RESCUE_ACTION_H_

#include <string>

#include "hotplug/boot/rescue.h"

namespace hotring::hotplug::boot {

// /bin/sh is in the image.
[[nodiscard]] bool HaveShell();

// Runs `/bin/sh -i` on the console (the first of /proc/consoles, as initramfs-tools opens it)
// in a session of its own with that terminal as its controlling one (job control; ^C reaches
// the shell, not PID 1), with REASON and PS1="(initramfs) " set as initramfs-tools does, and
// returns once it has exited. False when it could not be started.
bool RunRescueShell(const std::string& reason);

// Reboots (after plan.delay), halts or powers off; for kShell, halts. Never returns.
[[noreturn]] void EndBoot(const RescuePlan& plan);

}  // namespace hotring::hotplug::boot

#endif  // HOTRING_HOTPLUG_BOOT_RESCUE_ACTION_H_

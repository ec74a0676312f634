// What `hotring init` takes from the kernel command line (/proc/cmdline): where the root is,
// what to run there, and hotring's own `hotring.*` switches. Pure: given the text, no I/O.
#ifndef HOTRING_HOTPLUG_BOOT_BOOT_CMDLINE_H_
#define HOTRING_HOTPLUG_BOOT_BOOT_CMDLINE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hotring::hotplug::boot {

// The parsed command line; owns its strings.
struct BootCmdline {
  std::string root;           // root=, "" when none (then power off after the report)
  std::string root_fstype;    // rootfstype=, "" to try the usual ones
  std::string root_flags;     // rootflags=, passed to mount(2) as data
  bool root_rw = false;       // `rw` (default: read-only, as the kernel mounts it)
  std::string init = "/sbin/init";  // init= in the new root
  // How long root= may take to appear: rootdelay=S (the whole wait here; initramfs-tools
  // sleeps S and then waits max(30, S)), the kernel's rootwait=S (6.5 on), hotring.rootwait=S;
  // the last of these decides. A bare `rootwait` waits forever (absl::InfiniteDuration()),
  // wherever it stands, as the kernel does after any rootdelay. Default 30 s, as
  // initramfs-tools'.
  absl::Duration root_wait = absl::Seconds(30);
  std::string root_wait_source;  // the word that set root_wait ("rootdelay=2"); "" by default
  // What happens when the boot cannot go on (root= never appeared, or will not mount):
  // hotring.rescue=shell|reboot|halt|poweroff; unset: rescue.h's ChooseRescue decides.
  enum class Rescue { kUnset, kShell, kReboot, kHalt, kPowerOff };
  Rescue rescue = Rescue::kUnset;
  // panic=N as the kernel and initramfs-tools read it: N > 0 reboot after N seconds, N < 0 at
  // once, 0 (or not a number) halt. nullopt: not on the command line.
  std::optional<int> panic;
  bool test = false;          // hotring.test: report, then power off even with root=
  bool timeline = false;      // hotring.timeline: print the daemon's timeline after the report
  // hotring.drivers_first=0: coldplug in udevadm's order alone, without writing the devices
  // that wait for a driver first (`trigger --drivers-first`); to compare the two.
  bool drivers_first = true;
  // hotring.coldplug_subsystems: coldplug also writes the module, bus and driver objects
  // (`trigger --type all`). Off by default, as `udevadm trigger`'s default: about as many
  // objects as there are devices, whose events carry no device to handle, cost the boot CPU
  // while drivers load.
  bool coldplug_subsystems = false;
  // Coldplug only the devices the rules act on, whose driver is missing, that have a node or
  // are a network interface, and their parents (`trigger --needed`, keeping what settle --for
  // and root= wait for); the others keep what devtmpfs made. hotring.coldplug_needed=0 walks
  // every device, as does a daemon.args with --exec, --udev-compat or --rebroadcast (their
  // handlers and database want every device's event).
  bool coldplug_needed = true;
  // Open the kernel uevent socket in /init and hand it to the daemon (--netlink-fd), so that
  // coldplug writes the devices waiting for a driver while the daemon starts. Unset: when more
  // than one CPU is online (on one there is nothing for the two to overlap, and in five paired
  // one-vCPU boots it settled 8-65 ms later). hotring.early_coldplug=0/1 decides.
  std::optional<bool> early_coldplug;
  std::vector<std::string> stat_nodes;  // hotring.stat=/dev/a,/dev/b: nodes the report stats
  absl::Duration settle_timeout = absl::Seconds(120);  // hotring.settle_timeout=S
  // hotring.settle_for=KEY=VALUE (repeatable): after the coldplug settled, also wait for such
  // devices (`settle --for`), e.g. a USB keyboard that the hub thread enumerates only later.
  std::vector<std::string> settle_for;
};

// Splits on spaces (double quotes group, as the kernel does: `a="b c"`) and reads the keys
// above; unknown words are ignored (they belong to the kernel or to the next init). A bad
// number keeps the default: nothing on the command line may stop the boot.
[[nodiscard]] BootCmdline ParseBootCmdline(absl::string_view text);

// What root= names and how `hotring init` waits for it: a `settle --for` condition, and the
// node to mount when root= names it (empty when the device that meets the condition says).
// Owns its strings.
struct RootSpec {
  std::string condition;  // "DEVNAME=vda", "LABEL=hotring-root", "UUID=0a1b..."
  std::string device;     // "/dev/vda"; "" when the matching device says (LABEL=, ...)
};

// root=/dev/NAME, root=LABEL=L or root=UUID=U (as a filesystem's superblock says them), or
// root=PARTUUID=U / PARTLABEL=L (a GPT or MBR partition table entry, as the kernel and blkid
// name it).
// InvalidArgument for an empty value; Unimplemented for the other forms the kernel or other
// initrds take (PARTUUID=.../PARTNROFF=, MAJ:MIN, /dev/disk/by-*), so the console says why.
[[nodiscard]] absl::StatusOr<RootSpec> ParseRootSpec(absl::string_view root);

// The words of a kernel command line with the kernel's quoting rules, quotes removed.
[[nodiscard]] std::vector<std::string> SplitCmdline(absl::string_view text);

}  // namespace hotring::hotplug::boot

#endif  // HOTRING_HOTPLUG_BOOT_BOOT_CMDLINE_H_

// What `hotring init` says and does when the boot cannot go on (root= never appeared, will not
// mount, or init itself failed): the reason, the block devices it did see, and then a shell, a
// reboot, a halt or a power-off as the kernel command line asks. Pure: the devices are given.
//
// The choice (ChooseRescue), first match:
//   hotring.rescue=shell|reboot|halt|poweroff   as said (shell only when the image has /bin/sh)
//   hotring.test                                power off: a test rig wants the guest to end
//   panic=N                                     as initramfs-tools: N > 0 reboot after N s,
//                                               N < 0 reboot at once, 0 (or no number) halt
//   /bin/sh in the image                        a shell on the console (initramfs-tools'
//                                               "Dropping to a shell"); exiting it retries root=
//   otherwise                                   halt: the console keeps the message
#ifndef HOTRING_HOTPLUG_BOOT_RESCUE_H_
#define HOTRING_HOTPLUG_BOOT_RESCUE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "hotplug/boot/boot_cmdline.h"

namespace hotring::hotplug::boot {

// One block device as /sys/class/block and its node show it. Owns its strings; a field is empty
// when the device has none.
struct SeenBlockDevice {
  std::string name;        // "vda", "vda1", "sr0"
  bool partition = false;  // a partition of another device (its PARTUUID/PARTLABEL come from there)
  bool empty = false;      // size 0: no medium, an unused loop device
  std::string type;        // filesystem TYPE, from its superblock
  std::string label;       // LABEL
  std::string uuid;        // UUID
  std::string partuuid;    // PARTUUID (GPT partition GUID, or dos "<disk id>-<NN>")
  std::string partlabel;   // PARTLABEL (GPT name)
  std::string problem;     // why something could not be read ("no node /dev/vdb: ..."); "" if none
};

// What happens next. Owns its text.
struct RescuePlan {
  enum class Action { kShell, kReboot, kHalt, kPowerOff };
  Action action = Action::kHalt;
  absl::Duration delay;  // kReboot: how long to wait first
  std::string because;   // what chose it: "hotring.rescue=shell", "panic=1", ...
};

// See the table at the top. `have_shell`: /bin/sh exists in the image.
[[nodiscard]] RescuePlan ChooseRescue(const BootCmdline& cmdline, bool have_shell);

// How long root= is waited for and why: "2s (rootdelay=2)", "without a deadline (rootwait)",
// "30s (the default; rootdelay=S or rootwait change it)".
[[nodiscard]] std::string DescribeRootWait(const BootCmdline& cmdline);

// What a `settle --for` condition of root= waits for, in words: "DEVNAME=vda" -> "a block device
// named vda", "UUID=x" -> "a filesystem with UUID x", "PARTLABEL=x" -> "a partition named x".
[[nodiscard]] std::string DescribeRootCondition(absl::string_view condition);

// The console lines (without the "hotring init: " prefix) for a root= that did not appear:
// the reason, then one line per block device seen, as blkid prints them
// (`/dev/vda: TYPE="ext4" LABEL="root" UUID="..."`), or that none was seen, then what to check.
// `condition`: root='s `settle --for` condition. `still_waiting_after` > 0: a wait without a
// deadline (rootwait) that goes on, said once after that long.
[[nodiscard]] std::vector<std::string> RootNotFoundLines(
    const BootCmdline& cmdline, absl::string_view condition, absl::Span<const SeenBlockDevice> seen,
    absl::Duration still_waiting_after = absl::ZeroDuration());

// The line that says what happens now: "dropping to a shell on the console (...)", "rebooting
// in 1s (panic=1)". What follows the shell is the caller's to say.
[[nodiscard]] std::string RescueLine(const RescuePlan& plan);

}  // namespace hotring::hotplug::boot

#endif  // HOTRING_HOTPLUG_BOOT_RESCUE_H_

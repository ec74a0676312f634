#include "hotplug/boot/rescue.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::boot {
namespace {

using ::testing::ElementsAre;
using Action = RescuePlan::Action;

RescuePlan Choose(absl::string_view cmdline, bool have_shell) {
  return ChooseRescue(ParseBootCmdline(cmdline), have_shell);
}

TEST(RescueTest, PanicAsInitramfsTools) {
  RescuePlan plan = Choose("root=/dev/vda panic=1", true);
  EXPECT_EQ(plan.action, Action::kReboot);
  EXPECT_EQ(plan.delay, absl::Seconds(1));
  EXPECT_EQ(plan.because, "panic=1");
  plan = Choose("panic=-1", true);
  EXPECT_EQ(plan.action, Action::kReboot);
  EXPECT_EQ(plan.delay, absl::ZeroDuration());
  EXPECT_EQ(Choose("panic=0", true).action, Action::kHalt);
  // Not a number: wait forever, as initramfs-tools.
  EXPECT_EQ(Choose("panic=soon", true).action, Action::kHalt);
  // The last panic= counts, as the kernel reads it (qemu_boot.sh puts panic=-1 first).
  EXPECT_EQ(Choose("panic=-1 panic=3", false).delay, absl::Seconds(3));
}

TEST(RescueTest, WithoutPanicAShellWhenTheImageHasOne) {
  EXPECT_EQ(Choose("root=/dev/vda", true).action, Action::kShell);
  const RescuePlan plan = Choose("root=/dev/vda", false);
  EXPECT_EQ(plan.action, Action::kHalt);
  EXPECT_EQ(plan.because, "no panic= given and no /bin/sh in the image");
}

TEST(RescueTest, HotringRescueComesFirst) {
  EXPECT_EQ(Choose("panic=-1 hotring.rescue=shell", true).action, Action::kShell);
  EXPECT_EQ(Choose("hotring.test hotring.rescue=halt", true).action, Action::kHalt);
  EXPECT_EQ(Choose("hotring.rescue=poweroff", true).action, Action::kPowerOff);
  RescuePlan plan = Choose("hotring.rescue=reboot panic=4", true);
  EXPECT_EQ(plan.action, Action::kReboot);
  EXPECT_EQ(plan.delay, absl::Seconds(4));
  // A shell asked for in an image without one: the next rule, and the line says why.
  plan = Choose("hotring.rescue=shell panic=2", false);
  EXPECT_EQ(plan.action, Action::kReboot);
  EXPECT_EQ(plan.because, "hotring.rescue=shell, but no /bin/sh in the image; panic=2");
  // An unknown value is no choice.
  EXPECT_EQ(Choose("hotring.rescue=dance panic=0", true).action, Action::kHalt);
}

TEST(RescueTest, TestBootsPowerOffUnlessTold) {
  const RescuePlan plan = Choose("hotring.test panic=-1", true);
  EXPECT_EQ(plan.action, Action::kPowerOff);
  EXPECT_EQ(plan.because, "hotring.test");
}

TEST(RescueTest, RescueLines) {
  EXPECT_EQ(RescueLine(Choose("panic=1", true)), "rebooting in 1s (panic=1)");
  EXPECT_EQ(RescueLine(Choose("panic=-1", true)), "rebooting (panic=-1)");
  EXPECT_EQ(RescueLine(Choose("hotring.rescue=shell", true)),
            "dropping to a shell on the console (hotring.rescue=shell)");
  EXPECT_EQ(RescueLine(Choose("panic=0", true)),
            "halting (panic=0; panic=N reboots after N s, hotring.rescue=shell opens a shell)");
  EXPECT_EQ(RescueLine(Choose("hotring.test", true)), "powering off (hotring.test)");
}

TEST(RescueTest, DescribeTheWait) {
  EXPECT_EQ(DescribeRootWait(ParseBootCmdline("root=/dev/vda")),
            "30s (the default; rootdelay=S or rootwait change it)");
  EXPECT_EQ(DescribeRootWait(ParseBootCmdline("rootdelay=2")), "2s (rootdelay=2)");
  EXPECT_EQ(DescribeRootWait(ParseBootCmdline("rootdelay=2 rootwait")),
            "without a deadline (rootwait)");
  EXPECT_EQ(DescribeRootCondition("DEVNAME=vda"), "a block device named vda");
  EXPECT_EQ(DescribeRootCondition("LABEL=my root"), "a filesystem labelled \"my root\"");
  EXPECT_EQ(DescribeRootCondition("UUID=0a1b"), "a filesystem with UUID 0a1b");
  EXPECT_EQ(DescribeRootCondition("PARTUUID=5e-01"), "a partition with PARTUUID 5e-01");
  EXPECT_EQ(DescribeRootCondition("PARTLABEL=sys"), "a partition named \"sys\"");
}

TEST(RescueTest, RootNotFoundNamesWhatWasWaitedForAndWhatWasSeen) {
  const BootCmdline cmdline = ParseBootCmdline("root=UUID=0a1b rootdelay=2");
  std::vector<SeenBlockDevice> seen(4);
  seen[0].name = "sr0";
  seen[0].empty = true;
  seen[1].name = "vda";
  seen[1].type = "ext4";
  seen[1].label = "hotring-root";
  seen[1].uuid = "c0ffee00-1111-2222-3333-444455556666";
  seen[2].name = "vdb";
  seen[3].name = "vdb1";
  seen[3].partition = true;
  seen[3].type = "vfat";
  seen[3].label = "BO\"OT\x01";
  seen[3].uuid = "ABCD-1234";
  seen[3].partuuid = "5e8f0a11-01";
  EXPECT_THAT(
      RootNotFoundLines(cmdline, "UUID=0a1b", seen),
      ElementsAre("root=UUID=0a1b did not appear: waited 2s (rootdelay=2) for a filesystem with "
                  "UUID 0a1b",
                  "4 block devices seen:", "  /dev/sr0: (empty)",
                  "  /dev/vda: TYPE=\"ext4\" LABEL=\"hotring-root\" "
                  "UUID=\"c0ffee00-1111-2222-3333-444455556666\"",
                  "  /dev/vdb: (no filesystem or partition table known here)",
                  "  /dev/vdb1: TYPE=\"vfat\" LABEL=\"BO\\\"OT\\x01\" UUID=\"ABCD-1234\" "
                  "PARTUUID=\"5e8f0a11-01\"",
                  "check root= and rootdelay= (cat /proc/cmdline) and the drivers (cat "
                  "/proc/modules)"));
}

TEST(RescueTest, NoDeviceAtAllAndStillWaiting) {
  const BootCmdline cmdline = ParseBootCmdline("root=LABEL=root rootwait");
  SeenBlockDevice broken;
  broken.name = "vda";
  broken.problem = "no node /dev/vda";
  EXPECT_THAT(RootNotFoundLines(cmdline, "LABEL=root", {broken}, absl::Seconds(30)),
              ElementsAre("root=LABEL=root has not appeared in 30s; waiting without a deadline "
                          "(rootwait) for a filesystem labelled \"root\"",
                          "1 block device seen:", "  /dev/vda: (no node /dev/vda)",
                          "check root= and rootdelay= (cat /proc/cmdline) and the drivers (cat "
                          "/proc/modules)"));
  const std::vector<std::string> none = RootNotFoundLines(cmdline, "LABEL=root", {});
  ASSERT_EQ(none.size(), 3u);
  EXPECT_EQ(none[1],
            "no block device seen (/sys/class/block is empty): is the disk's driver in the image, "
            "and its controller's?");
}

}  // namespace
}  // namespace hotring::hotplug::boot

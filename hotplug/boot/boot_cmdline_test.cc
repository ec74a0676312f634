#include "hotplug/boot/boot_cmdline.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::boot {
namespace {

using ::testing::ElementsAre;

TEST(BootCmdlineTest, DefaultsWithoutRoot) {
  const BootCmdline c = ParseBootCmdline("console=ttyS0 quiet\n");
  EXPECT_EQ(c.root, "");
  EXPECT_EQ(c.init, "/sbin/init");
  EXPECT_FALSE(c.root_rw);
  EXPECT_FALSE(c.test);
  EXPECT_EQ(c.root_wait, absl::Seconds(30));
  EXPECT_TRUE(c.stat_nodes.empty());
}

TEST(BootCmdlineTest, RootAndItsOptions) {
  const BootCmdline c = ParseBootCmdline(
      "BOOT_IMAGE=/vmlinuz root=/dev/vda rootfstype=ext4 rootflags=noatime rw init=/bin/marker "
      "hotring.rootwait=2.5");
  EXPECT_EQ(c.root, "/dev/vda");
  EXPECT_EQ(c.root_fstype, "ext4");
  EXPECT_EQ(c.root_flags, "noatime");
  EXPECT_TRUE(c.root_rw);
  EXPECT_EQ(c.init, "/bin/marker");
  EXPECT_EQ(c.root_wait, absl::Milliseconds(2500));
}

TEST(BootCmdlineTest, LastOfRwAndRoWins) {
  EXPECT_FALSE(ParseBootCmdline("rw ro").root_rw);
  EXPECT_TRUE(ParseBootCmdline("ro rw").root_rw);
  // `rw=1` is not the flag.
  EXPECT_FALSE(ParseBootCmdline("rw=1").root_rw);
}

TEST(BootCmdlineTest, HotringSwitches) {
  const BootCmdline c =
      ParseBootCmdline("hotring.test hotring.stat=/dev/vda,,/dev/ttyS0 hotring.settle_timeout=7");
  EXPECT_TRUE(c.test);
  EXPECT_THAT(c.stat_nodes, ElementsAre("/dev/vda", "/dev/ttyS0"));
  EXPECT_EQ(c.settle_timeout, absl::Seconds(7));
  EXPECT_THAT(ParseBootCmdline("hotring.settle_for=SUBSYSTEM=hid hotring.settle_for=x "
                               "hotring.settle_for=DEVNAME=vda")
                  .settle_for,
              ElementsAre("SUBSYSTEM=hid", "DEVNAME=vda"));
  EXPECT_TRUE(ParseBootCmdline("hotring.timeline").timeline);
  EXPECT_FALSE(ParseBootCmdline("hotring.timeline=0").timeline);
  EXPECT_TRUE(ParseBootCmdline("hotring.test=1").test);
  EXPECT_FALSE(ParseBootCmdline("hotring.test=0").test);
}

TEST(BootCmdlineTest, RootDelayAndRootWait) {
  BootCmdline c = ParseBootCmdline("root=UUID=x rootdelay=2");
  EXPECT_EQ(c.root_wait, absl::Seconds(2));
  EXPECT_EQ(c.root_wait_source, "rootdelay=2");
  EXPECT_EQ(ParseBootCmdline("root=/dev/vda").root_wait_source, "");
  // The kernel's rootwait=S (6.5 on) and the old hotring.rootwait=S; the last one decides.
  c = ParseBootCmdline("rootdelay=2 rootwait=7.5");
  EXPECT_EQ(c.root_wait, absl::Milliseconds(7500));
  EXPECT_EQ(c.root_wait_source, "rootwait=7.5");
  EXPECT_EQ(ParseBootCmdline("hotring.rootwait=9 rootdelay=4").root_wait, absl::Seconds(4));
  // A bare rootwait waits forever wherever it stands (the kernel waits after any rootdelay).
  for (const char* line : {"rootwait rootdelay=3", "rootdelay=3 rootwait"}) {
    c = ParseBootCmdline(line);
    EXPECT_EQ(c.root_wait, absl::InfiniteDuration()) << line;
    EXPECT_EQ(c.root_wait_source, "rootwait") << line;
  }
  // Not a number of seconds: the default stays, and says so.
  c = ParseBootCmdline("rootdelay=soon rootwait=-1");
  EXPECT_EQ(c.root_wait, absl::Seconds(30));
  EXPECT_EQ(c.root_wait_source, "");
}

TEST(BootCmdlineTest, PanicAndRescue) {
  EXPECT_FALSE(ParseBootCmdline("root=/dev/vda").panic.has_value());
  EXPECT_EQ(ParseBootCmdline("panic=5").panic, 5);
  EXPECT_EQ(ParseBootCmdline("panic=-1").panic, -1);
  // The kernel reads the last; what is not a number halts (initramfs-tools).
  EXPECT_EQ(ParseBootCmdline("panic=-1 panic=1").panic, 1);
  EXPECT_EQ(ParseBootCmdline("panic=x").panic, 0);
  EXPECT_EQ(ParseBootCmdline("root=/dev/vda").rescue, BootCmdline::Rescue::kUnset);
  EXPECT_EQ(ParseBootCmdline("hotring.rescue=shell").rescue, BootCmdline::Rescue::kShell);
  EXPECT_EQ(ParseBootCmdline("hotring.rescue=reboot").rescue, BootCmdline::Rescue::kReboot);
  EXPECT_EQ(ParseBootCmdline("hotring.rescue=halt").rescue, BootCmdline::Rescue::kHalt);
  EXPECT_EQ(ParseBootCmdline("hotring.rescue=poweroff").rescue, BootCmdline::Rescue::kPowerOff);
  EXPECT_EQ(ParseBootCmdline("hotring.rescue=shell hotring.rescue=bogus").rescue,
            BootCmdline::Rescue::kUnset);
}

TEST(BootCmdlineTest, BadNumbersKeepTheDefault) {
  EXPECT_EQ(ParseBootCmdline("hotring.rootwait=soon").root_wait, absl::Seconds(30));
  EXPECT_EQ(ParseBootCmdline("hotring.rootwait=-1").root_wait, absl::Seconds(30));
  EXPECT_EQ(ParseBootCmdline("hotring.settle_timeout=1e99").settle_timeout, absl::Seconds(120));
}

TEST(BootCmdlineTest, EmptyInitKeepsTheDefault) {
  EXPECT_EQ(ParseBootCmdline("init=").init, "/sbin/init");
}

TEST(BootCmdlineTest, QuotesGroupWordsAsTheKernelDoes) {
  EXPECT_THAT(SplitCmdline("a=\"b c\" d  \"e f\"g\n"), ElementsAre("a=b c", "d", "e fg"));
  EXPECT_EQ(ParseBootCmdline("init=\"/bin/my init\" root=/dev/vdb").init, "/bin/my init");
  // An unterminated quote runs to the end, without crashing.
  EXPECT_THAT(SplitCmdline("x=\"y z"), ElementsAre("x=y z"));
}

TEST(BootCmdlineTest, DriversFirstUnlessTurnedOff) {
  EXPECT_TRUE(ParseBootCmdline("quiet").drivers_first);
  EXPECT_TRUE(ParseBootCmdline("hotring.drivers_first").drivers_first);
  EXPECT_FALSE(ParseBootCmdline("hotring.drivers_first=0").drivers_first);
  EXPECT_FALSE(ParseBootCmdline("hotring.drivers_first=no").drivers_first);
}

TEST(BootCmdlineTest, ColdplugOfSubsystemObjectsOnlyWhenAsked) {
  EXPECT_FALSE(ParseBootCmdline("quiet").coldplug_subsystems);
  EXPECT_TRUE(ParseBootCmdline("hotring.coldplug_subsystems").coldplug_subsystems);
  EXPECT_TRUE(ParseBootCmdline("hotring.coldplug_subsystems=1").coldplug_subsystems);
  EXPECT_FALSE(ParseBootCmdline("hotring.coldplug_subsystems=0").coldplug_subsystems);
  EXPECT_TRUE(ParseBootCmdline("quiet").coldplug_needed);
  EXPECT_FALSE(ParseBootCmdline("hotring.coldplug_needed=0").coldplug_needed);
  EXPECT_TRUE(ParseBootCmdline("hotring.coldplug_needed").coldplug_needed);
  EXPECT_FALSE(ParseBootCmdline("hotring.coldplug_needed=no").coldplug_needed);
  EXPECT_EQ(ParseBootCmdline("quiet").early_coldplug, std::nullopt);
  EXPECT_EQ(ParseBootCmdline("hotring.early_coldplug=0").early_coldplug, false);
  EXPECT_EQ(ParseBootCmdline("hotring.early_coldplug").early_coldplug, true);
  EXPECT_EQ(ParseBootCmdline("hotring.early_coldplug=1").early_coldplug, true);
}

TEST(RootSpecTest, DeviceNodeLabelAndUuid) {
  absl::StatusOr<RootSpec> node = ParseRootSpec("/dev/vda");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->condition, "DEVNAME=vda");
  EXPECT_EQ(node->device, "/dev/vda");
  absl::StatusOr<RootSpec> nested = ParseRootSpec("/dev/mapper/root");
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->condition, "DEVNAME=mapper/root");
  absl::StatusOr<RootSpec> label = ParseRootSpec("LABEL=hotring-root");
  ASSERT_TRUE(label.ok()) << label.status();
  EXPECT_EQ(label->condition, "LABEL=hotring-root");
  EXPECT_EQ(label->device, "");  // the matching device says
  absl::StatusOr<RootSpec> uuid = ParseRootSpec("UUID=0a1b2c3d-0000-4000-8000-0123456789ab");
  ASSERT_TRUE(uuid.ok()) << uuid.status();
  EXPECT_EQ(uuid->condition, "UUID=0a1b2c3d-0000-4000-8000-0123456789ab");
  EXPECT_EQ(uuid->device, "");
  // A partition table entry, as the kernel's own root= takes it (PARTUUID=) and blkid (PARTLABEL=).
  absl::StatusOr<RootSpec> partuuid = ParseRootSpec("PARTUUID=0a1b2c3d-01");
  ASSERT_TRUE(partuuid.ok()) << partuuid.status();
  EXPECT_EQ(partuuid->condition, "PARTUUID=0a1b2c3d-01");
  EXPECT_EQ(partuuid->device, "");
  absl::StatusOr<RootSpec> partlabel = ParseRootSpec("PARTLABEL=rootfs");
  ASSERT_TRUE(partlabel.ok()) << partlabel.status();
  EXPECT_EQ(partlabel->condition, "PARTLABEL=rootfs");
}

TEST(RootSpecTest, RefusesWhatItCannotWaitFor) {
  EXPECT_EQ(ParseRootSpec("LABEL=").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRootSpec("UUID=").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRootSpec("/dev/").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(ParseRootSpec("PARTUUID=").status().code(), absl::StatusCode::kInvalidArgument);
  // The kernel's "the partition N after this one" form needs the disk's numbering: refused.
  absl::StatusOr<RootSpec> offset = ParseRootSpec("PARTUUID=0a1b2c3d-01/PARTNROFF=1");
  EXPECT_EQ(offset.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(offset.status().message()), ::testing::HasSubstr("PARTNROFF="));
  EXPECT_EQ(ParseRootSpec("/dev/disk/by-label/root").status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(ParseRootSpec("254:0").status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace hotring::hotplug::boot

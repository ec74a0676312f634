#include "hotplug/boot/boot_report.h"

#include <sys/sysmacros.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::boot {
namespace {

using ::testing::ElementsAre;

TEST(BootReportTest, ProcModulesNamesSorted) {
  EXPECT_THAT(ParseProcModules("virtio_net 73728 0 - Live 0x0\n"
                               "e1000 163840 0 - Live 0x0\n"
                               "net_failover 24576 1 virtio_net, Live 0x0\n"),
              ElementsAre("e1000", "net_failover", "virtio_net"));
  EXPECT_TRUE(ParseProcModules("").empty());
}

TEST(BootReportTest, NodeFactNamesTypeNumbersOwnerAndMode) {
  struct stat st {};
  st.st_mode = S_IFBLK | 0640;
  st.st_rdev = makedev(254, 0);
  st.st_uid = 0;
  st.st_gid = 6;
  EXPECT_EQ(NodeFact("/dev/vda", st), "node /dev/vda type=block rdev=254:0 uid=0 gid=6 mode=0640");
  st.st_mode = S_IFCHR | 04755;
  st.st_rdev = makedev(13, 64);
  EXPECT_EQ(NodeFact("/dev/input/event0", st),
            "node /dev/input/event0 type=char rdev=13:64 uid=0 gid=6 mode=4755");
}

TEST(BootReportTest, MissingNode) {
  EXPECT_EQ(MissingNodeFact("/dev/vda", ENOENT), "node /dev/vda missing ENOENT");
  EXPECT_EQ(MissingNodeFact("/dev/x", EIO), "node /dev/x missing errno5");
}

TEST(BootReportTest, OneWordKeepsAFactOnOneLine) {
  EXPECT_EQ(OneWord("QEMU USB Keyboard\n"), "QEMU_USB_Keyboard_");
  EXPECT_EQ(OneWord(""), "-");
}

TEST(BootReportTest, StatusAndSummary) {
  const std::vector<std::pair<std::string, std::string>> status = {
      {"received", "120"}, {"handled", "120"}, {"failed", "0"}, {"netlink_overruns", "0"}};
  EXPECT_EQ(StatusFact(status), "status received=120 handled=120 failed=0 netlink_overruns=0");
  EXPECT_EQ(StatusValue(status, "handled"), "120");
  EXPECT_EQ(StatusValue(status, "nope"), "");
  EXPECT_EQ(SummaryLine(status, absl::Milliseconds(1234), 27),
            "hotring: settled 120 events in 1234 ms; modules: 27 loaded; status: received=120 "
            "handled=120 failed=0 overruns=0");
  EXPECT_EQ(SummaryLine({}, absl::ZeroDuration(), 0),
            "hotring: settled ? events in 0 ms; modules: 0 loaded; status: received=? "
            "handled=? failed=? overruns=?");
}

}  // namespace
}  // namespace hotring::hotplug::boot

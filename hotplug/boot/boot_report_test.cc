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

TEST(BootReportTest, CpuTicksFromProcStat) {
  const CpuTicks t = ParseProcStatCpu(
      "cpu  100 2 30 400 50 6 7 8 9 0\ncpu0 100 2 30 400 50 6 7 8 9 0\nintr 1\n");
  EXPECT_EQ(t.busy, 100u + 2 + 30 + 6 + 7 + 8);  // guest (9) is already in user
  EXPECT_EQ(t.idle, 450u);
  const CpuTicks old_kernel = ParseProcStatCpu("cpu 1 2 3 4\n");
  EXPECT_EQ(old_kernel.busy, 6u);
  EXPECT_EQ(old_kernel.idle, 4u);
  EXPECT_EQ(ParseProcStatCpu("intr 1\n").busy, 0u);
  EXPECT_EQ(ParseProcStatCpu("cpu 1 x 3 4\n").idle, 0u);
}

TEST(BootReportTest, ProcessCpuTicksAfterTheCommandName) {
  // A command name with a space and a parenthesis; utime 11, stime 4.
  EXPECT_EQ(ParseProcPidCpuTicks("42 (ho ring) x) S 1 42 42 0 -1 4194560 100 0 0 0 11 4 0 0 20 0 "
                                 "1 0 5 1000 10\n"),
            15u);
  EXPECT_EQ(ParseProcPidCpuTicks("42 (short) S 1"), 0u);
  EXPECT_EQ(ParseProcPidCpuTicks(""), 0u);
}

TEST(BootReportTest, CpuFactInMilliseconds) {
  EXPECT_EQ(CpuFact(CpuTicks{.busy = 100, .idle = 50}, CpuTicks{.busy = 250, .idle = 52}, 30, 80,
                    45, 100),
            "cpu busy_ms=1500 idle_ms=20 init_ms=300 daemon_ms=800 reactor_ms=450");
  EXPECT_EQ(CpuFact(CpuTicks{.busy = 9, .idle = 9}, CpuTicks{.busy = 1, .idle = 1}, 0, 0, 0, 100),
            "cpu busy_ms=0 idle_ms=0 init_ms=0 daemon_ms=0 reactor_ms=0");
}

}  // namespace
}  // namespace hotring::hotplug::boot

#include "hotplug/report/report.h"

#include "gtest/gtest.h"

namespace hotring::hotplug::report {
namespace {

// A parent, its child queued behind it, an unrelated device, a held event and a gap.
constexpr char kTimeline[] =
    "R 0 1 add pci /devices/pci0\n"
    "L 0 1 1 /devices/pci0\n"
    "S 0 1\n"
    "R 10 2 add block /devices/pci0/vda\n"
    "L 10 2 2 /devices/pci0/vda\n"
    "R 20 3 add net /devices/other\n"
    "L 20 3 3 /devices/other\n"
    "S 20 3\n"
    "H 50 3 handled\n"
    "H 4000 1 handled\n"
    "S 4000 2\n"
    "H 4500 2 failed\n"
    "R 30 5 add input /devices/input5\n"
    "G 1030 4 4 timeout\n"
    "L 1030 4 5 /devices/input5\n"
    "S 1030 4\n"
    "H 1100 4 handled\n"
    "M 3000 1 2500 virtio_pci ok\n"
    "M 3900 1 100 crc32 error\n";

TEST(ReportTest, SummarizesWhereTheTimeWent) {
  absl::StatusOr<Timeline> t = ParseTimeline(kTimeline);
  ASSERT_TRUE(t.ok()) << t.status();
  const Summary s = Summarize(*t, 3);
  EXPECT_EQ(s.events, 4u);
  EXPECT_EQ(s.handled, 3u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.first_us, 0);
  EXPECT_EQ(s.last_us, 4500);
  ASSERT_EQ(s.slowest_events.size(), 3u);
  EXPECT_EQ(s.slowest_events[0]->devpath, "/devices/pci0/vda");  // 4490 us
  EXPECT_EQ(s.slowest_events[1]->devpath, "/devices/pci0");       // 4000 us
  EXPECT_EQ(s.slowest_events[2]->devpath, "/devices/input5");     // 1070 us
  ASSERT_EQ(s.slowest_handlers.size(), 3u);
  EXPECT_EQ(s.slowest_handlers[0]->devpath, "/devices/pci0");
  ASSERT_EQ(s.longest_waits.size(), 1u);
  EXPECT_EQ(s.longest_waits[0].event->devpath, "/devices/pci0/vda");
  EXPECT_EQ(s.longest_waits[0].wait_us, 3990);
  ASSERT_NE(s.longest_waits[0].blocker, nullptr);
  EXPECT_EQ(s.longest_waits[0].blocker->devpath, "/devices/pci0");
  ASSERT_EQ(s.longest_held.size(), 1u);
  EXPECT_EQ(s.longest_held[0]->devpath, "/devices/input5");
  ASSERT_EQ(s.timeout_gaps.size(), 1u);
  EXPECT_EQ(s.timeout_gaps[0]->first, 4u);
  ASSERT_EQ(s.slowest_modules.size(), 2u);
  EXPECT_EQ(s.slowest_modules[0]->module, "virtio_pci");
}

TEST(ReportTest, BlockerIgnoresUnrelatedPrefixesAndLaterEvents) {
  absl::StatusOr<Timeline> t = ParseTimeline(
      "L 0 1 1 /devices/ab\nS 0 1\nH 10 1 handled\n"        // /devices/ab is not /devices/a's child
      "L 0 2 2 /devices/a\nS 20 2\nH 30 2 handled\n"
      "L 0 3 3 /devices/a/b\nS 40 3\nH 50 3 handled\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FindBlocker(*t, t->events[1]), nullptr);
  const EventSpan* blocker = FindBlocker(*t, t->events[2]);
  ASSERT_NE(blocker, nullptr);
  EXPECT_EQ(blocker->devpath, "/devices/a");
}

TEST(ReportTest, TextNamesTheSlowestAndTheGaps) {
  absl::StatusOr<Timeline> t = ParseTimeline(kTimeline);
  ASSERT_TRUE(t.ok());
  const std::string text = FormatReport(*t, Summarize(*t, 10));
  EXPECT_NE(text.find("4 events in 4.5 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("1 gaps released by timeout"), std::string::npos) << text;
  EXPECT_NE(text.find("waited for SEQNUM 1 add /devices/pci0 (pci)"), std::string::npos) << text;
  EXPECT_NE(text.find("SEQNUM 4-4 never arrived"), std::string::npos) << text;
  EXPECT_NE(text.find("2.5 ms  virtio_pci"), std::string::npos) << text;
  EXPECT_NE(text.find("crc32 FAILED"), std::string::npos) << text;
}

}  // namespace
}  // namespace hotring::hotplug::report

#include "hotplug/report/timeline_parse.h"

#include "gtest/gtest.h"

namespace hotring::hotplug::report {
namespace {

constexpr char kTimeline[] =
    "# hotring timeline 1\n"
    "R 100 5 add block /devices/virtual/block/vda\n"
    "L 110 1 5 /devices/virtual/block/vda\n"
    "S 120 1\n"
    "R 130 7 add net /devices/pci/net/eth0\n"           // held: 6 is missing
    "G 5130 6 6 timeout\n"
    "L 5130 2 7 /devices/pci/net/eth0\n"
    "S 5131 2\n"
    "R 200 - change - /devices/x y\n"                   // no SEQNUM; a space in DEVPATH
    "L 200 3 - /devices/x y\n"
    "H 900 1 handled\n"
    "H 5200 2 failed\n"
    "M 800 1 500 virtio_blk ok\n";

TEST(TimelineParseTest, BuildsOneSpanPerEvent) {
  absl::StatusOr<Timeline> t = ParseTimeline(kTimeline);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->events.size(), 3u);
  EXPECT_EQ(t->bad_lines, 0u);
  EXPECT_EQ(t->unmatched, 0u);
  const EventSpan& vda = t->events[0];
  EXPECT_EQ(vda.id, 1u);
  EXPECT_EQ(vda.seqnum, 5u);
  EXPECT_EQ(vda.action, "add");
  EXPECT_EQ(vda.subsystem, "block");
  EXPECT_EQ(vda.received_us, 100);
  EXPECT_EQ(vda.released_us, 110);
  EXPECT_EQ(vda.started_us, 120);
  EXPECT_EQ(vda.handled_us, 900);
  EXPECT_EQ(vda.result, "handled");
  const EventSpan& eth = t->events[1];
  EXPECT_EQ(eth.id, 2u);
  EXPECT_EQ(eth.released_us, 5130);
  EXPECT_EQ(eth.result, "failed");
  const EventSpan& x = t->events[2];
  EXPECT_FALSE(x.seqnum.has_value());
  EXPECT_EQ(x.devpath, "/devices/x y");
  EXPECT_EQ(x.subsystem, "");
  EXPECT_EQ(x.id, 3u);
  EXPECT_FALSE(x.started_us.has_value());
  EXPECT_EQ(x.result, "");
  ASSERT_EQ(t->gaps.size(), 1u);
  EXPECT_EQ(t->gaps[0].first, 6u);
  EXPECT_EQ(t->gaps[0].why, "timeout");
  ASSERT_EQ(t->modules.size(), 1u);
  EXPECT_EQ(t->modules[0].module, "virtio_blk");
  EXPECT_EQ(t->modules[0].took_us, 500);
  EXPECT_EQ(t->modules[0].seqnum, 1u);
}

TEST(TimelineParseTest, MalformedLinesAreCountedAndSkipped) {
  absl::StatusOr<Timeline> t = ParseTimeline(
      "# hotring timeline 1\n"
      "R 1 1 add usb /devices/a\n"
      "R x 2 add usb /devices/b\n"       // bad time
      "L 2 1 1 devices/a\n"              // DEVPATH without '/'
      "H 3 1 maybe\n"                    // unknown result
      "Z 4\n"
      "S 5 99\n");                       // a start whose release is not in the timeline
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->lines, 6u);
  EXPECT_EQ(t->bad_lines, 4u);
  EXPECT_EQ(t->unmatched, 1u);
  ASSERT_FALSE(t->errors.empty());
  EXPECT_EQ(t->errors[0], "line 3: R x 2 add usb /devices/b");
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->events[0].id, 0u);
}

TEST(TimelineParseTest, KeptLinesWithoutTheirStartStillMakeSpans) {
  // A daemon's in-memory timeline dropped the R line of SEQNUM 9.
  absl::StatusOr<Timeline> t = ParseTimeline("L 10 4 9 /devices/late\nS 11 4\nH 19 4 handled\n");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_FALSE(t->events[0].received_us.has_value());
  EXPECT_EQ(t->events[0].handled_us, 19);
  EXPECT_EQ(t->unmatched, 1u);
}

TEST(TimelineParseTest, OtherFormatsAreRefused) {
  EXPECT_FALSE(ParseTimeline("# hotring timeline 2\nR 1 1 add x /a\n").ok());
  EXPECT_FALSE(ParseTimeline("# hotring status\n").ok());
  EXPECT_FALSE(ParseTimeline("hello\nworld\n").ok());
  absl::StatusOr<Timeline> empty = ParseTimeline("# hotring timeline 1\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->events.empty());
}

TEST(TimelineParseTest, RepeatedReceptionOfASeqnumKeepsTheFirst) {
  absl::StatusOr<Timeline> t =
      ParseTimeline("R 1 3 add a /devices/a\nR 2 3 add a /devices/a\nL 3 1 3 /devices/a\n");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->events[0].received_us, 1);
  EXPECT_EQ(t->events[0].id, 1u);
}

}  // namespace
}  // namespace hotring::hotplug::report

#include "hotplug/timeline.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "hotplug/report/timeline_parse.h"

namespace hotring::hotplug {
namespace {

Event MakeEvent(std::optional<uint64_t> seqnum, std::string devpath, std::string subsystem) {
  Event e;
  e.action = "add";
  e.devpath = std::move(devpath);
  e.subsystem = std::move(subsystem);
  e.seqnum = seqnum;
  return e;
}

TEST(TimelineRecorderTest, LinesInTheDocumentedFormat) {
  const MonoTime t0 = MonoNow();
  TimelineRecorder recorder(t0, 100);
  const Event a = MakeEvent(7, "/devices/a", "usb");
  const Event b = MakeEvent(std::nullopt, "/devices/b c", "my sub");
  recorder.ReceivedAndReleased(t0 + absl::Microseconds(10), 1, a);
  recorder.Add(recorder.ReceivedRecord(t0 + absl::Microseconds(20), b));
  recorder.Released(t0 + absl::Microseconds(30), 2, b);
  recorder.Started(t0 + absl::Microseconds(40), 1);
  recorder.Step(t0 + absl::Microseconds(45), a, absl::Microseconds(5), "virtio blk", true);
  recorder.Handled(t0 + absl::Microseconds(50), 1, "handled");
  recorder.Gap(t0 + absl::Microseconds(60), 3, 4, "timeout");
  std::vector<std::string> lines;
  EXPECT_EQ(recorder.Lines(0, 100000, lines), 7u);
  EXPECT_EQ(absl::StrJoin(lines, "\n"),
            "R 10 7 add usb /devices/a\n"
            "L 10 1 7 /devices/a\n"
            "R 20 - add my_sub /devices/b c\n"
            "L 30 2 - /devices/b c\n"
            "S 40 1\n"
            "M 45 7 5 virtio_blk ok\n"
            "H 50 1 handled\n"
            "G 60 3 4 timeout");
  // The report's parser reads it back.
  absl::StatusOr<report::Timeline> parsed = report::ParseTimeline(absl::StrJoin(lines, "\n"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->bad_lines, 0u);
  ASSERT_EQ(parsed->events.size(), 2u);
  EXPECT_EQ(parsed->events[1].devpath, "/devices/b c");
  EXPECT_EQ(parsed->events[1].subsystem, "my_sub");
  EXPECT_EQ(parsed->events[0].result, "handled");
}

TEST(TimelineRecorderTest, KeepsTheLastRecordsAndPagesThem) {
  const MonoTime t0 = MonoNow();
  TimelineRecorder recorder(t0, 3);
  for (uint64_t id = 1; id <= 5; ++id) recorder.Started(t0, id);
  EXPECT_EQ(recorder.total(), 5u);
  EXPECT_EQ(recorder.first_kept(), 2u);
  std::vector<std::string> lines;
  EXPECT_EQ(recorder.Lines(0, 1000, lines), 5u);  // from the first kept one
  EXPECT_EQ(lines, (std::vector<std::string>{"S 0 3", "S 0 4", "S 0 5"}));
  lines.clear();
  EXPECT_EQ(recorder.Lines(3, 12, lines), 5u);  // "S 0 4" + "S 0 5", 1 byte overhead each
  lines.clear();
  EXPECT_EQ(recorder.Lines(3, 8, lines), 4u);  // a page holds one record at least
  EXPECT_EQ(lines, (std::vector<std::string>{"S 0 4"}));
  lines.clear();
  EXPECT_EQ(recorder.Lines(0, 1000, lines, /*max_lines=*/2, /*max_line=*/3), 4u);
  EXPECT_EQ(lines, (std::vector<std::string>{"S 0", "S 0"}));
}

// Kept records are packed: every field comes back as it went in (large and negative numbers,
// texts), the oldest go first, and a record costs its numbers' bytes, not a struct's.
TEST(TimelineRecorderTest, PackedRecordsComeBackWhole) {
  const MonoTime t0 = MonoNow();
  TimelineRecorder recorder(t0, 100);
  for (uint64_t id = 1; id <= 1000; ++id) recorder.Handled(t0, id, "ok");
  // Ids 901-1000: the kind, t 0, a 0, b in two bytes, the length, "ok".
  EXPECT_EQ(recorder.kept_bytes(), 100u * 8);
  std::vector<std::string> lines;
  // Records are numbered from 0: record 950 is id 951's.
  EXPECT_EQ(recorder.Lines(950, 1000, lines, /*max_lines=*/2), 952u);
  EXPECT_EQ(lines, (std::vector<std::string>{"H 0 951 ok", "H 0 952 ok"}));

  TimelineRecorder wide(t0, 2);
  wide.Gap(t0 - std::chrono::seconds(1), UINT64_MAX - 1, UINT64_MAX, "gap why");
  Event e;
  e.action = "add";
  e.devpath = "/devices/" + std::string(300, 'd');
  e.subsystem = "block";
  e.seqnum = 7;
  wide.ReceivedAndReleased(t0 + std::chrono::hours(100), 3, e);
  lines.clear();
  EXPECT_EQ(wide.Lines(0, 100000, lines), 2u);
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "G -1000000 18446744073709551614 18446744073709551615 gap why",
                       "R 360000000000 7 add block " + e.devpath,
                       "L 360000000000 3 7 " + e.devpath}));
  wide.Started(t0, 4);  // the gap goes
  lines.clear();
  EXPECT_EQ(wide.Lines(0, 100000, lines), 3u);
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines.back(), "S 0 4");
  lines.clear();
  EXPECT_EQ(wide.Lines(5, 100000, lines), 5u);  // beyond the last: nothing
  EXPECT_TRUE(lines.empty());
}

TEST(TimelineRecorderTest, WritesTheFileWithItsHeader) {
  char path[] = "/tmp/hotring_timeline_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const MonoTime t0 = MonoNow();
  {
    TimelineRecorder recorder(t0, 0);
    ASSERT_TRUE(recorder.OpenFile(path).ok());
    EXPECT_TRUE(recorder.enabled());
    recorder.Started(t0 + absl::Milliseconds(1), 9);
  }  // flushed by the destructor
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  EXPECT_EQ(text.str(), "# hotring timeline 1\nS 1000 9\n");
  TimelineRecorder off(t0, 0);
  EXPECT_FALSE(off.enabled());
}

}  // namespace
}  // namespace hotring::hotplug

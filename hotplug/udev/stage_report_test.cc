#include "hotplug/udev/stage_report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/udev_monitor_listener.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug::udev {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(t != nullptr ? t : "/tmp", "/stage_report_",
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  (void)std::system(absl::StrCat("rm -rf ", dir, " && mkdir -p ", dir).c_str());
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Event TtyEvent() {
  Event e;
  e.action = "add";
  e.subsystem = "tty";
  e.devpath = "/devices/virtual/tty/ttyS0";
  e.seqnum = 7;
  return e;
}

TEST(EventReport, FailuresAndRefusedLinksAreCountedWithTheirLines) {
  EventReport report;
  EXPECT_TRUE(report.Check(absl::OkStatus()));
  EXPECT_FALSE(report.Check(absl::InternalError("write failed")));
  report.Fail("rename refused");
  report.LinkFailed(absl::FailedPreconditionError("link leaves the dev root"));
  report.LinkFailed(absl::PermissionDeniedError("symlink denied"));
  EXPECT_EQ(report.failures, 3u);
  EXPECT_EQ(report.links_refused, 1u);
  EXPECT_THAT(report.log, ElementsAre("write failed", "rename refused", "link leaves the dev root", "symlink denied"));
}

TEST(EventReport, EntriesWrittenAndRemovedAreCounted) {
  const std::string dir = TempDir();
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(dir);
  ASSERT_TRUE(db.ok()) << db.status();
  EventReport report;
  WriteEntry(*db, "c4:64", "E:ID_X=1\n", /*persist=*/false, report);
  EXPECT_EQ(ReadFile(dir + "/data/c4:64"), "E:ID_X=1\n");
  EXPECT_EQ(report.db_written, 1u);
  RemoveEntry(*db, "c4:64", /*had_entry=*/true, report);
  EXPECT_FALSE(Exists(dir + "/data/c4:64"));
  EXPECT_EQ(report.db_removed, 1u);
  // Nothing was there: not counted as removed, and no failure.
  RemoveEntry(*db, "c4:65", /*had_entry=*/false, report);
  EXPECT_EQ(report.db_removed, 1u);
  // An id that is no file name is refused: a failure with the database's message.
  WriteEntry(*db, "c4/64", "", /*persist=*/false, report);
  RemoveEntry(*db, "c4/64", /*had_entry=*/true, report);
  EXPECT_EQ(report.db_written, 1u);
  EXPECT_EQ(report.db_removed, 1u);
  EXPECT_EQ(report.failures, 2u);
  ASSERT_EQ(report.log.size(), 2u);
  EXPECT_THAT(report.log[0], HasSubstr("c4/64"));
}

TEST(StageReporter, CountsWhatJobsReportUnderTheStagesName) {
  absl::StatusOr<StageReporter> reporter = StageReporter::Open("udevtest", /*monitor=*/false);
  ASSERT_TRUE(reporter.ok()) << reporter.status();
  const Event event = TtyEvent();
  reporter->Received();
  reporter->Received();
  EventReport report;
  report.db_written = 1;
  report.links_made = 2;
  report.links_removed = 3;
  report.links_refused = 4;
  report.failures = 5;
  report.datagram = "not sent: the stage does not announce";
  reporter->Took(event, report);
  reporter->Announce(event, report);
  report = EventReport{.db_removed = 1};
  reporter->Took(event, report);
  reporter->Announce(event, report);
  reporter->JobFailed(event, absl::ResourceExhaustedError("pool shut down"));
  const StageCounters& c = reporter->counters();
  EXPECT_EQ(c.events, 2u);
  EXPECT_EQ(c.db_written, 1u);
  EXPECT_EQ(c.db_removed, 1u);
  EXPECT_EQ(c.links_made, 2u);
  EXPECT_EQ(c.links_removed, 3u);
  EXPECT_EQ(c.links_refused, 4u);
  EXPECT_EQ(c.errors, 6u);
  EXPECT_EQ(c.monitor_sent, 0u);
  EXPECT_EQ(c.monitor_skipped, 0u);
  std::vector<std::pair<std::string, uint64_t>> out = {{"before", 9}};
  reporter->AppendCounters({{"events", c.events}, {"own", 42}, {"errors", c.errors}}, out);
  EXPECT_THAT(out, ElementsAre(Pair("before", 9u), Pair("udevtest_events", 2u), Pair("udevtest_own", 42u),
                               Pair("udevtest_errors", 6u)));
}

TEST(StageReporter, AnnouncesOnGroupTwoOrCountsWhyNot) {
  ASSERT_TRUE(testing::EnterPrivateNetworkNamespace().ok());
  absl::StatusOr<testing::UdevMonitorListener> listener = testing::UdevMonitorListener::Open();
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<StageReporter> reporter = StageReporter::Open("udevtest", /*monitor=*/true);
  ASSERT_TRUE(reporter.ok()) << reporter.status();
  const Event event = TtyEvent();
  const std::string datagram("libudev\0 message", 16);  // what is sent is not the point here
  reporter->Announce(event, EventReport{.datagram = datagram});
  reporter->Announce(event, EventReport{.not_announced = "no device id"});
  EXPECT_THAT(listener->Receive(), ElementsAre(datagram));
  EXPECT_EQ(reporter->counters().monitor_sent, 1u);
  EXPECT_EQ(reporter->counters().monitor_skipped, 1u);
  EXPECT_EQ(reporter->counters().errors, 0u);
}

}  // namespace
}  // namespace hotring::hotplug::udev

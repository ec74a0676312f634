// The fixture library as another project would use it: record a fake board, replay it, and
// assert on the manifest as data.
#include "testing/fixture.h"

#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::testing {
namespace {

using ::testing::ElementsAre;

TEST(FixtureTest, RecordReplayAndInspectTheManifest) {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/platform/serial8250/tty/ttyS1",
                              .subsystem = "tty",
                              .uevent = {{"MAJOR", "4"}, {"MINOR", "65"}, {"DEVNAME", "ttyS1"}}})
                  .ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/virtual/misc/watchdog",
                              .subsystem = "misc",
                              .uevent = {{"MAJOR", "10"}, {"MINOR", "130"}, {"DEVNAME", "watchdog"}}})
                  .ok());
  absl::StatusOr<std::string> dir = MakeTempDir("fixture_test");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(RecordTree(*sys, *dir + "/board.rec").ok());
  FILE* conf = std::fopen((*dir + "/mdev.conf").c_str(), "w");
  ASSERT_NE(conf, nullptr);
  std::fputs("watchdog root:root 0600 =misc/\nttyS[0-9] root:root 0666 @true\n", conf);
  std::fclose(conf);

  absl::StatusOr<Manifest> m = ReplayRecording({.recording = *dir + "/board.rec",
                                                .config = *dir + "/mdev.conf",
                                                .exec = {"testing/device_test_data/handler.sh"}});
  ASSERT_TRUE(m.ok()) << m.status();
  const DevEntry* wd = FindDevEntry(*m, "misc/watchdog");
  ASSERT_NE(wd, nullptr);
  EXPECT_EQ(wd->mode, 0600u);
  EXPECT_EQ(FindDevEntry(*m, "watchdog"), nullptr);  // moved, no link for '='
  if (::geteuid() == 0) {
    EXPECT_EQ(wd->type, DevEntry::Type::kChar);
    EXPECT_EQ(wd->major, 10u);
    EXPECT_EQ(wd->minor, 130u);
  }
  const std::vector<const CommandRun*> rules = RunsOf(*m, "rule");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_THAT(rules[0]->argv, ElementsAre("true"));
  EXPECT_EQ(EnvOf(*rules[0], "MDEV"), "ttyS1");
  const std::vector<const CommandRun*> execs = RunsOf(*m, "exec");
  ASSERT_EQ(execs.size(), 2u);
  // Events in recording order: ttyS1 (platform) after watchdog (virtual)? The walk sorts by
  // DEVPATH, so /devices/platform comes first.
  EXPECT_THAT(execs[0]->argv, ElementsAre("handler.sh", "tty"));
  EXPECT_EQ(execs[0]->status, "exit 3");
  EXPECT_THAT(execs[1]->argv, ElementsAre("handler.sh", "misc"));
  EXPECT_EQ(execs[1]->status, "exit 0");
  EXPECT_TRUE(m->problems.empty());
}

// The hand-written board's golden file, read as data: what its mdev.conf and modules tree say.
TEST(FixtureTest, ReadManifestGivesAGoldenFileAsData) {
  absl::StatusOr<Manifest> m = ReadManifest("testing/device_test_data/board.manifest");
  ASSERT_TRUE(m.ok()) << m.status();
  // `sd[a-z] root:disk 0660`, disk being gid 6 in board.rec's /etc/group.
  const DevEntry* sda = FindDevEntry(*m, "sda");
  ASSERT_NE(sda, nullptr);
  EXPECT_EQ(sda->type, DevEntry::Type::kBlock);
  EXPECT_EQ(sda->gid, 6u);
  EXPECT_EQ(sda->mode, 0660u);
  // `sd[a-z][0-9] root:disk 0660 >disk/part%0`: moved, and a link where it was.
  const DevEntry* sda1 = FindDevEntry(*m, "sda1");
  ASSERT_NE(sda1, nullptr);
  EXPECT_EQ(sda1->type, DevEntry::Type::kLink);
  EXPECT_EQ(sda1->target, "disk/partsda1");
  // modules.dep: ahci.ko needs libata.ko.
  EXPECT_THAT(m->modules, ElementsAre(::testing::StartsWith("module libata "),
                                      ::testing::StartsWith("module ahci ")));
  EXPECT_FALSE(ReadManifest("testing/device_test_data/no.manifest").ok());
}

}  // namespace
}  // namespace hotring::testing

#include "hotplug/replay/tree.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/sysfs.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using testing::FakeSysfs;

constexpr char kPci[] = "/devices/pci0000:00/0000:00:1f.2";
constexpr char kSda[] = "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda";

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/tree_test_XXXXXX");
  return ::mkdtemp(dir.data()) != nullptr ? dir : std::string();
}

// A board: an AHCI controller bound to its driver, a disk, and a device in no subsystem.
FakeSysfs MakeBoard() {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  EXPECT_TRUE(sys.ok());
  EXPECT_TRUE(sys->AddDevice({.devpath = kPci,
                              .subsystem = "pci",
                              .kind = FakeSysfs::Kind::kBus,
                              .uevent = {{"DRIVER", "ahci"}, {"MODALIAS", "pci:v00008086d00002922"}},
                              .attributes = {{"modalias", "pci:v00008086d00002922\n"},
                                             {"vendor", "0x8086\n"}}})
                  .ok());
  EXPECT_TRUE(sys->AddDriver("pci", "ahci").ok());
  EXPECT_EQ(::symlink("../../../bus/pci/drivers/ahci",
                      sys->Path(absl::StrCat(kPci + 1, "/driver")).c_str()),
            0);
  EXPECT_TRUE(sys->AddDevice({.devpath = kSda,
                              .subsystem = "block",
                              .uevent = {{"MAJOR", "8"}, {"MINOR", "0"}, {"DEVNAME", "sda"},
                                         {"DEVTYPE", "disk"}},
                              .attributes = {{"dev", "8:0\n"}}})
                  .ok());
  return std::move(*sys);
}

TEST(RecordMachine, ReadsDevicesEventsModulesAndUsers) {
  FakeSysfs sys = MakeBoard();
  const std::string etc = TempDir();
  ASSERT_TRUE(WriteWholeFile(etc + "/passwd", "root:x:0:0::/:/bin/sh\n").ok());
  ASSERT_TRUE(WriteWholeFile(etc + "/group", "root:x:0:\ndisk:x:6:\n").ok());
  ASSERT_TRUE(WriteWholeFile(etc + "/modules", "libata 1 0 - Live 0x0\nahci 2 1 libata, Live 0x0\n").ok());
  const std::string before = *sys.ReadUevent(kSda);
  absl::StatusOr<RecordResult> r = RecordMachine(
      {.sysfs_root = sys.root(), .proc_root = etc, .etc_root = etc, .kernel = "6.1.0-test"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->problems.empty()) << r->problems.front();
  const Recording& rec = r->recording;
  EXPECT_EQ(rec.kernel, "6.1.0-test");
  EXPECT_THAT(rec.loaded_modules, ElementsAre("ahci", "libata"));
  EXPECT_THAT(rec.group, ElementsAre("root:x:0:", "disk:x:6:"));
  ASSERT_EQ(rec.devices.size(), 2u);
  EXPECT_EQ(rec.devices[0].devpath, kPci);
  EXPECT_EQ(rec.devices[0].kind, SubsystemKind::kBus);
  EXPECT_EQ(rec.devices[0].subsystem, "pci");
  EXPECT_EQ(rec.devices[0].driver, "/bus/pci/drivers/ahci");
  EXPECT_THAT(rec.devices[0].attributes,
              ElementsAre(Pair("uevent", "DRIVER=ahci\nMODALIAS=pci:v00008086d00002922\n"),
                          Pair("modalias", "pci:v00008086d00002922\n")));
  EXPECT_EQ(rec.devices[1].kind, SubsystemKind::kClass);
  EXPECT_THAT(rec.devices[1].attributes[1], Pair("dev", "8:0\n"));
  ASSERT_EQ(rec.events.size(), 2u);
  EXPECT_THAT(rec.events[1],
              ElementsAre(Pair("ACTION", "add"), Pair("DEVPATH", kSda), Pair("SUBSYSTEM", "block"),
                          Pair("MAJOR", "8"), Pair("MINOR", "0"), Pair("DEVNAME", "sda"),
                          Pair("DEVTYPE", "disk"), Pair("SEQNUM", "2")));
  // Read-only: the uevent files were not written (trigger would write "add" into them).
  EXPECT_EQ(*sys.ReadUevent(kSda), before);
}

TEST(BuildSysfs, RebuildsATreeThatRecordsTheSame) {
  FakeSysfs sys = MakeBoard();
  absl::StatusOr<RecordResult> first =
      RecordMachine({.sysfs_root = sys.root(), .proc_root = "/nonexistent",
                     .etc_root = "/nonexistent", .kernel = "6.1"});
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string built = TempDir();
  ASSERT_TRUE(BuildSysfs(first->recording, built).ok());
  // The rebuilt tree walks like the original: same devices, subsystems, links, attributes.
  absl::StatusOr<RecordResult> second = RecordMachine(
      {.sysfs_root = built, .proc_root = "/nonexistent", .etc_root = "/nonexistent", .kernel = "6.1"});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(FormatRecording(second->recording), FormatRecording(first->recording));
  absl::StatusOr<std::string> dev = ReadWholeFile(built + kSda + "/dev", 100);
  EXPECT_EQ(*dev, "8:0\n");
}

TEST(BuildUsersRoot, WritesRecordedOrRootOnly) {
  Recording rec;
  const std::string dir = TempDir();
  ASSERT_TRUE(BuildUsersRoot(rec, dir).ok());
  EXPECT_EQ(*ReadWholeFile(dir + "/etc/group", 100), "root:x:0:\n");
  rec.group = {"disk:x:6:"};
  ASSERT_TRUE(BuildUsersRoot(rec, dir).ok());
  EXPECT_EQ(*ReadWholeFile(dir + "/etc/group", 100), "disk:x:6:\n");
}

TEST(ListDevRoot, ListsEveryEntryWithItsType) {
  const std::string dir = TempDir();
  ASSERT_EQ(::mkdir((dir + "/disk").c_str(), 0750), 0);
  ASSERT_EQ(::symlink("../sda", (dir + "/disk/root").c_str()), 0);
  ASSERT_TRUE(WriteWholeFile(dir + "/file", "x", 0600).ok());
  absl::StatusOr<std::vector<DevEntry>> entries = ListDevRoot(dir, {::geteuid(), ::getegid()});
  ASSERT_TRUE(entries.ok()) << entries.status();
  std::vector<std::string> seen;
  for (const DevEntry& e : *entries) {
    seen.push_back(absl::StrCat(e.path, " ", static_cast<int>(e.type), " ", e.target, " ",
                                absl::StrCat(e.mode)));
  }
  EXPECT_THAT(seen, UnorderedElementsAre(absl::StrCat("disk 0  ", 0750),
                                         absl::StrCat("disk/root 4 ../sda ", 0777),
                                         absl::StrCat("file 1  ", 0600)));
}

TEST(ListDevRoot, PlaceholdersAreNodesAndTheReplaysOwnIdsAreRoots) {
  const std::string dir = TempDir();
  // The placeholder's owner stays what it says, even when it is the lister's own id.
  ASSERT_TRUE(WriteWholeFile(dir + "/sda", "hotring-node block 8:0 1234:6 0640\n").ok());
  ASSERT_TRUE(WriteWholeFile(dir + "/ttyS0", "hotring-node char 4:64 0:5 0620\n").ok());
  ASSERT_TRUE(WriteWholeFile(dir + "/log", "hotring-node but not quite\n", 0600).ok());
  ASSERT_EQ(::mkdir((dir + "/disk").c_str(), 0755), 0);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown((dir + "/disk").c_str(), 1234, 1234), 0);
    ASSERT_EQ(::chown((dir + "/log").c_str(), 4321, 1234), 0);
  }
  const ListOwner self = ::geteuid() == 0 ? ListOwner{1234, 1234}
                                          : ListOwner{::geteuid(), ::getegid()};
  absl::StatusOr<std::vector<DevEntry>> entries = ListDevRoot(dir, self);
  ASSERT_TRUE(entries.ok()) << entries.status();
  std::vector<std::string> seen;
  for (const DevEntry& e : *entries) {
    seen.push_back(absl::StrCat(e.path, " ", static_cast<int>(e.type), " ", e.major, ":", e.minor,
                                " ", e.uid, ":", e.gid, " ", absl::StrCat(e.mode)));
  }
  const std::string log_owner = ::geteuid() == 0 ? "4321:0" : "0:0";
  EXPECT_THAT(seen, UnorderedElementsAre(absl::StrCat("sda 3 8:0 1234:6 ", 0640),
                                         absl::StrCat("ttyS0 2 4:64 0:5 ", 0620),
                                         absl::StrCat("log 1 0:0 ", log_owner, " ", 0600),
                                         absl::StrCat("disk 0 0:0 0:0 ", 0755)));
}

}  // namespace
}  // namespace hotring::hotplug::replay

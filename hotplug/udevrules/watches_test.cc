#include "hotplug/udevrules/watches.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::udevrules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

std::string TempDir(absl::string_view name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/", name, "XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) return "";
  return dir;
}

std::optional<std::string> Readlink(const std::string& path) {
  char buf[256];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Opens `path` for writing and closes it: what a partitioning tool does to a disk's node.
void WriteAndClose(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, "x", 1), 1);
  ::close(fd);
}

// A run directory and a dev root with node stand-ins (regular files: inotify watches them alike).
class WatchesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = TempDir("run");
    dev_ = TempDir("dev");
    ASSERT_FALSE(run_.empty());
    ASSERT_FALSE(dev_.empty());
    for (const char* node : {"sda", "sdb", "ttyS0"}) {
      const int fd = ::open(absl::StrCat(dev_, "/", node).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      ASSERT_GE(fd, 0);
      ::close(fd);
    }
    absl::StatusOr<std::unique_ptr<Watches>> w = Watches::Open(run_, dev_);
    ASSERT_TRUE(w.ok()) << w.status();
    watches_ = *std::move(w);
  }
  std::string Run(absl::string_view name) const { return absl::StrCat(run_, "/watch/", name); }

  std::string run_;
  std::string dev_;
  std::unique_ptr<Watches> watches_;
};

TEST_F(WatchesTest, BeginRecordsBothWaysAndACloseAfterWriteIsReported) {
  ASSERT_TRUE(watches_->Begin("b8:0", "sda").ok());
  const std::optional<std::string> number = Readlink(Run("b8:0"));
  ASSERT_TRUE(number.has_value());
  EXPECT_EQ(Readlink(Run(*number)), "b8:0");
  const int wd = std::stoi(*number);
  EXPECT_EQ(watches_->WatchedDevice(wd), "b8:0");

  // A reader's close is no reason; a writer's is, once.
  const int reader = ::open(absl::StrCat(dev_, "/sda").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  ::close(reader);
  EXPECT_THAT(watches_->TakeClosed(), IsEmpty());
  WriteAndClose(absl::StrCat(dev_, "/sda"));
  EXPECT_THAT(watches_->TakeClosed(), ElementsAre(wd));
  EXPECT_THAT(watches_->TakeClosed(), IsEmpty());
}

TEST_F(WatchesTest, EndDropsTheWatchAndItsRecords) {
  ASSERT_TRUE(watches_->Begin("b8:0", "sda").ok());
  const std::string number = Readlink(Run("b8:0")).value_or("");
  watches_->End("b8:0");
  EXPECT_FALSE(Exists(Run("b8:0")));
  EXPECT_FALSE(Exists(Run(number)));
  WriteAndClose(absl::StrCat(dev_, "/sda"));
  EXPECT_THAT(watches_->TakeClosed(), IsEmpty());
  // Nothing to drop: no error, nothing made.
  watches_->End("b8:0");
  watches_->End("c4:64");
  EXPECT_FALSE(Exists(Run("c4:64")));
}

TEST_F(WatchesTest, BeginAgainReplacesTheDevicesOldRecord) {
  ASSERT_TRUE(watches_->Begin("b8:0", "sda").ok());
  const std::string first = Readlink(Run("b8:0")).value_or("");
  watches_->End("b8:0");
  ASSERT_TRUE(watches_->Begin("b8:0", "sda").ok());
  const std::string second = Readlink(Run("b8:0")).value_or("");
  EXPECT_NE(first, second);  // a new watch, a new number
  EXPECT_FALSE(Exists(Run(first)));
  EXPECT_EQ(Readlink(Run(second)), "b8:0");
}

TEST_F(WatchesTest, ANumberRecordedForAnotherDeviceIsLeftToIt) {
  ASSERT_TRUE(watches_->Begin("b8:16", "sdb").ok());
  const std::string number = Readlink(Run("b8:16")).value_or("");
  // A stale record of another device that names the same number, made by someone else.
  ASSERT_EQ(::symlink(number.c_str(), Run("b8:0").c_str()), 0);
  // End of a device this daemon never recorded touches nothing (and asks nothing of the disk).
  watches_->End("b8:0");
  EXPECT_TRUE(Exists(Run("b8:0")));
  // Watching that device replaces its record and leaves the number to the device it names.
  ASSERT_TRUE(watches_->Begin("b8:0", "sda").ok());
  EXPECT_NE(Readlink(Run("b8:0")).value_or(""), number);
  EXPECT_EQ(Readlink(Run(number)), "b8:16");
  watches_->End("b8:0");
  EXPECT_FALSE(Exists(Run("b8:0")));
  EXPECT_EQ(Readlink(Run(number)), "b8:16");
  WriteAndClose(absl::StrCat(dev_, "/sdb"));
  EXPECT_THAT(watches_->TakeClosed(), SizeIs(1));
}

TEST_F(WatchesTest, AMissingOrUnsafeNodeIsAnErrorAndLeavesNothing) {
  const absl::Status missing = watches_->Begin("b8:32", "sdc");
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(Exists(Run("b8:32")));
  const absl::Status outside = watches_->Begin("b8:32", "../etc/passwd");
  EXPECT_TRUE(absl::IsInvalidArgument(outside)) << outside;
}

TEST_F(WatchesTest, RestorePutsBackWatchesOfDevicesThatStillExist) {
  absl::StatusOr<testing::FakeSysfs> sys = testing::FakeSysfs::Create();
  ASSERT_TRUE(sys.ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/pci0000:00/host0/block/sda",
                              .subsystem = "block",
                              .uevent = {{"MAJOR", "8"}, {"MINOR", "0"}, {"DEVNAME", "sda"}, {"DEVTYPE", "disk"}}})
                  .ok());
  ASSERT_EQ(::mkdir(sys->Path("/dev").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(sys->Path("/dev/block").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("../../devices/pci0000:00/host0/block/sda", sys->Path("/dev/block/8:0").c_str()), 0);
  // An earlier daemon's records: sda (still there) and sdb (gone).
  ASSERT_EQ(::mkdir(Run("").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("7", Run("b8:0").c_str()), 0);
  ASSERT_EQ(::symlink("b8:0", Run("7").c_str()), 0);
  ASSERT_EQ(::symlink("9", Run("b8:16").c_str()), 0);
  ASSERT_EQ(::symlink("b8:16", Run("9").c_str()), 0);

  EXPECT_EQ(watches_->Restore(sys->root()), 1u);
  EXPECT_FALSE(Exists(absl::StrCat(run_, "/watch.old")));
  EXPECT_FALSE(Exists(Run("b8:16")));
  const std::optional<std::string> number = Readlink(Run("b8:0"));
  ASSERT_TRUE(number.has_value());
  EXPECT_EQ(Readlink(Run(*number)), "b8:0");
  WriteAndClose(absl::StrCat(dev_, "/sda"));
  EXPECT_THAT(watches_->TakeClosed(), ElementsAre(std::stoi(*number)));
  // The restored watch is this daemon's now: the device's next event drops it.
  watches_->End("b8:0");
  EXPECT_FALSE(Exists(Run("b8:0")));
  EXPECT_FALSE(Exists(Run(*number)));
  // Nothing recorded: nothing restored.
  EXPECT_EQ(::rename(Run("").c_str(), absl::StrCat(run_, "/elsewhere").c_str()), 0);
  EXPECT_EQ(watches_->Restore(sys->root()), 0u);
}

// A disk with two partitions, a partition, a dm disk and a serial port in a fake sysfs, their
// nodes regular files (BLKRRPART fails on them as on a disk whose table is in use).
class SynthesizeChangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::FakeSysfs> sys = testing::FakeSysfs::Create();
    ASSERT_TRUE(sys.ok());
    sys_.emplace(*std::move(sys));
    dev_ = TempDir("dev");
    Add(kDisk, "b", "8", "0", "sda", "disk");
    Add(absl::StrCat(kDisk, "/sda1"), "b", "8", "1", "sda1", "partition");
    Add(absl::StrCat(kDisk, "/sda2"), "b", "8", "2", "sda2", "partition");
    Add("/devices/virtual/block/dm-0", "b", "254", "0", "dm-0", "disk");
    Add("/devices/pnp0/00:04/tty/ttyS0", "c", "4", "64", "ttyS0", "");
    // Not a partition of sda although it sits below it (a holder's view, a queue directory).
    ASSERT_TRUE(sys_->WriteFile(absl::StrCat(kDisk, "/queue/scheduler"), "none\n").ok());
  }
  void Add(const std::string& devpath, const char* kind, const char* major, const char* minor,
           const char* name, const char* devtype) {
    std::vector<std::pair<std::string, std::string>> uevent = {
        {"MAJOR", major}, {"MINOR", minor}, {"DEVNAME", name}};
    if (*devtype != '\0') uevent.emplace_back("DEVTYPE", devtype);
    ASSERT_TRUE(sys_->AddDevice({.devpath = devpath,
                                 .subsystem = *kind == 'b' ? "block" : "tty",
                                 .uevent = uevent})
                    .ok());
    const std::string dir = sys_->Path(*kind == 'b' ? "/dev/block" : "/dev/char");
    ::mkdir(sys_->Path("/dev").c_str(), 0755);
    ::mkdir(dir.c_str(), 0755);
    ASSERT_EQ(::symlink(absl::StrCat("../..", devpath).c_str(), absl::StrCat(dir, "/", major, ":", minor).c_str()), 0);
    const int fd = ::open(absl::StrCat(dev_, "/", name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  // True when `change` was written into the device's uevent file.
  bool Changed(absl::string_view devpath) const {
    return absl::StartsWith(sys_->ReadUevent(devpath).value_or(""), "change");
  }

  static constexpr char kDisk[] = "/devices/pci0000:00/host0/block/sda";
  std::optional<testing::FakeSysfs> sys_;
  std::string dev_;
};

TEST_F(SynthesizeChangeTest, ADiskWhoseTableCannotBeReReadChangesWithEachPartition) {
  const ChangeReport report = SynthesizeChange(sys_->root(), dev_, "b8:0");
  EXPECT_EQ(report.changes, 3u);
  EXPECT_FALSE(report.reread);
  EXPECT_TRUE(Changed(kDisk));
  EXPECT_TRUE(Changed(absl::StrCat(kDisk, "/sda1")));
  EXPECT_TRUE(Changed(absl::StrCat(kDisk, "/sda2")));
  EXPECT_FALSE(Changed("/devices/virtual/block/dm-0"));
  ASSERT_THAT(report.log, SizeIs(1));
  EXPECT_THAT(report.log[0], ::testing::HasSubstr("BLKRRPART"));
}

TEST_F(SynthesizeChangeTest, APartitionADmDiskAndACharDeviceChangeAlone) {
  EXPECT_EQ(SynthesizeChange(sys_->root(), dev_, "b8:1").changes, 1u);
  EXPECT_TRUE(Changed(absl::StrCat(kDisk, "/sda1")));
  EXPECT_FALSE(Changed(kDisk));
  EXPECT_FALSE(Changed(absl::StrCat(kDisk, "/sda2")));

  const ChangeReport dm = SynthesizeChange(sys_->root(), dev_, "b254:0");
  EXPECT_EQ(dm.changes, 1u);
  EXPECT_THAT(dm.log, IsEmpty());  // no re-read tried
  EXPECT_TRUE(Changed("/devices/virtual/block/dm-0"));

  EXPECT_EQ(SynthesizeChange(sys_->root(), dev_, "c4:64").changes, 1u);
  EXPECT_TRUE(Changed("/devices/pnp0/00:04/tty/ttyS0"));
}

TEST_F(SynthesizeChangeTest, NeitherAGoneDeviceNorAnIdWithoutANodeChanges) {
  const ChangeReport gone = SynthesizeChange(sys_->root(), dev_, "b8:48");
  EXPECT_EQ(gone.changes, 0u);
  EXPECT_THAT(gone.log, IsEmpty());
  const ChangeReport net = SynthesizeChange(sys_->root(), dev_, "n3");
  EXPECT_EQ(net.changes, 0u);
  EXPECT_THAT(net.log, SizeIs(1));
  EXPECT_FALSE(Changed(kDisk));
}

}  // namespace
}  // namespace hotring::hotplug::udevrules

// Firmware loading against a fake sysfs: `loading` and `data` are regular files here, so what
// was written to them, in order, can be read back ("1" then "0" reads as "10").
#include "hotplug/rules/firmware.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::rules {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class FirmwareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    paths_.sysfs_root = base_ + "/sys";
    paths_.firmware_root = base_ + "/firmware";
    device_ = paths_.sysfs_root + kDevpath;
    ASSERT_EQ(system(absl::StrCat("mkdir -p ", device_, " ", paths_.firmware_root, "/brcm")
                         .c_str()),
              0);
  }
  void MakeSysfsFiles() {
    std::ofstream(device_ + "/loading").flush();
    std::ofstream(device_ + "/data").flush();
  }
  static constexpr char kDevpath[] = "/devices/platform/wifi/firmware/brcm!fw.bin";
  std::string base_;
  std::string device_;
  FirmwarePaths paths_;
};

TEST_F(FirmwareTest, CopiesTheFileBetweenOneAndZero) {
  MakeSysfsFiles();
  std::ofstream(paths_.firmware_root + "/brcm/fw.bin") << "FIRMWARE-BYTES";
  absl::StatusOr<FirmwareOutcome> outcome = TryLoadFirmware(paths_, kDevpath, "brcm/fw.bin");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, FirmwareOutcome::kLoaded);
  EXPECT_EQ(Read(device_ + "/loading"), "10");
  EXPECT_EQ(Read(device_ + "/data"), "FIRMWARE-BYTES");
}

TEST_F(FirmwareTest, MissingFileWritesMinusOne) {
  MakeSysfsFiles();
  absl::StatusOr<FirmwareOutcome> outcome = TryLoadFirmware(paths_, kDevpath, "nope.bin");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, FirmwareOutcome::kMissing);
  EXPECT_EQ(Read(device_ + "/loading"), "-1");
  EXPECT_EQ(Read(device_ + "/data"), "");
}

TEST_F(FirmwareTest, NoLoadingFileYetIsNotReady) {
  absl::StatusOr<FirmwareOutcome> outcome = TryLoadFirmware(paths_, kDevpath, "brcm/fw.bin");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, FirmwareOutcome::kNotReady);
}

TEST_F(FirmwareTest, ASymlinkOutOfTheFirmwareRootIsNotFollowed) {
  MakeSysfsFiles();
  std::ofstream(base_ + "/secret") << "SECRET";
  ASSERT_EQ(symlink((base_ + "/secret").c_str(), (paths_.firmware_root + "/evil.bin").c_str()), 0);
  absl::StatusOr<FirmwareOutcome> outcome = TryLoadFirmware(paths_, kDevpath, "evil.bin");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, FirmwareOutcome::kMissing);
  EXPECT_EQ(Read(device_ + "/data"), "");
  // A symlink that stays inside is fine (firmware packages use them).
  std::ofstream(paths_.firmware_root + "/brcm/real.bin") << "REAL";
  ASSERT_EQ(symlink("real.bin", (paths_.firmware_root + "/brcm/alias.bin").c_str()), 0);
  outcome = TryLoadFirmware(paths_, kDevpath, "brcm/alias.bin");
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(*outcome, FirmwareOutcome::kLoaded);
}

TEST_F(FirmwareTest, DotDotIsRefused) {
  MakeSysfsFiles();
  EXPECT_FALSE(TryLoadFirmware(paths_, kDevpath, "../secret").ok());
  EXPECT_FALSE(TryLoadFirmware(paths_, "/devices/../../etc", "fw.bin").ok());
  EXPECT_EQ(Read(device_ + "/loading"), "");
}

}  // namespace
}  // namespace hotring::hotplug::rules

#include "hotplug/rules/mdev_scan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::rules {
namespace {

using ::testing::UnorderedElementsAre;

TEST(DevnameFromUeventTest, BusyboxReading) {
  EXPECT_EQ(DevnameFromUevent("MAJOR=116\nMINOR=7\nDEVNAME=snd/controlC0\n"), "snd/controlC0");
  EXPECT_EQ(DevnameFromUevent("MAJOR=4\nDEVNAME=ttyS0"), "ttyS0");
  // Only a line that follows a newline counts, and only within the first 127 bytes.
  EXPECT_EQ(DevnameFromUevent("DEVNAME=first\n"), std::nullopt);
  EXPECT_EQ(DevnameFromUevent(absl::StrCat("X=", std::string(130, 'a'), "\nDEVNAME=late\n")),
            std::nullopt);
  EXPECT_EQ(DevnameFromUevent("MAJOR=1\n"), std::nullopt);
}

TEST(LastComponentTest, Basename) {
  EXPECT_EQ(LastComponent("/sys/dev/char/4:64"), "4:64");
  EXPECT_EQ(LastComponent("sda"), "sda");
  EXPECT_EQ(LastComponent(""), "");
}

class ScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mdev_scan_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { (void)!std::system(("rm -rf " + root_).c_str()); }

  void MkdirP(const std::string& rel) {
    (void)!std::system(("mkdir -p " + root_ + "/" + rel).c_str());
  }
  void WriteFile(const std::string& rel, const std::string& text) {
    std::ofstream(root_ + "/" + rel) << text;
  }
  void Symlink(const std::string& target, const std::string& rel) {
    ASSERT_EQ(::symlink(target.c_str(), (root_ + "/" + rel).c_str()), 0) << rel;
  }

  struct Seen {
    std::string path, dev, name, subsystem;
    bool operator==(const Seen&) const = default;
  };
  std::vector<Seen> Scan() {
    std::vector<Seen> seen;
    const absl::Status status = ScanSysDev(root_ + "/sys/dev", [&](const ScannedDevice& d) {
      seen.push_back({std::string(d.path.substr(root_.size())), std::string(d.dev),
                      std::string(d.name),
                      d.subsystem ? std::string(*d.subsystem) : std::string("-")});
    });
    EXPECT_TRUE(status.ok()) << status;
    return seen;
  }

  std::string root_;
};

TEST_F(ScanTest, FindsCharAndBlockDevicesThroughTheirLinks) {
  MkdirP("sys/dev/char");
  MkdirP("sys/dev/block");
  MkdirP("sys/class/tty");
  MkdirP("sys/class/block");
  MkdirP("sys/devices/virtual/tty/ttyS0/power");
  WriteFile("sys/devices/virtual/tty/ttyS0/dev", "4:64\n");
  WriteFile("sys/devices/virtual/tty/ttyS0/uevent", "MAJOR=4\nMINOR=64\nDEVNAME=ttyS0\n");
  Symlink("../../../../class/tty", "sys/devices/virtual/tty/ttyS0/subsystem");
  // A `dev` below the device directory (depth 4) is not visited: busybox stops at depth 3.
  WriteFile("sys/devices/virtual/tty/ttyS0/power/dev", "9:9\n");
  MkdirP("sys/devices/pci/vda");
  WriteFile("sys/devices/pci/vda/dev", "252:0\n");
  WriteFile("sys/devices/pci/vda/uevent", "DEVNAME=notfirst\nMAJOR=252\n");
  // No subsystem link, no usable DEVNAME: named by the directory, subsystem unknown.
  Symlink("../../devices/virtual/tty/ttyS0", "sys/dev/char/4:64");
  Symlink("../../devices/pci/vda", "sys/dev/block/252:0");
  // A directory without a `dev` file and a dangling link are skipped.
  MkdirP("sys/devices/nodev");
  Symlink("../../devices/nodev", "sys/dev/char/1:1");
  Symlink("../../devices/missing", "sys/dev/char/1:2");

  EXPECT_THAT(Scan(), UnorderedElementsAre(
                          Seen{"/sys/dev/char/4:64", "4:64\n", "ttyS0", "tty"},
                          Seen{"/sys/dev/block/252:0", "252:0\n", "252:0", "-"}));
}

TEST_F(ScanTest, TheUeventNumberSavesReadingDev) {
  // The kernel writes MAJOR/MINOR and `dev` from the same dev_t; the scan takes the uevent's
  // (here `dev` says otherwise, which a kernel never does, to show which one was used).
  MkdirP("sys/dev/char");
  MkdirP("sys/devices/virtual/tty/ttyS1");
  WriteFile("sys/devices/virtual/tty/ttyS1/dev", "9:9\n");
  WriteFile("sys/devices/virtual/tty/ttyS1/uevent", "MAJOR=4\nMINOR=65\nDEVNAME=ttyS1\n");
  Symlink("../../devices/virtual/tty/ttyS1", "sys/dev/char/4:65");
  EXPECT_THAT(Scan(), UnorderedElementsAre(Seen{"/sys/dev/char/4:65", "4:65\n", "ttyS1", "-"}));
}

TEST_F(ScanTest, AnEmptyDevFileIsStillADevice) {
  // Busybox runs the rules (commands) even when `dev` holds no number.
  MkdirP("sys/dev/char/x");
  WriteFile("sys/dev/char/x/dev", "");
  EXPECT_THAT(Scan(), UnorderedElementsAre(Seen{"/sys/dev/char/x", "", "x", "-"}));
}

TEST_F(ScanTest, MissingSysDevIsAnError) {
  EXPECT_FALSE(ScanSysDev(root_ + "/sys/dev", [](const ScannedDevice&) {}).ok());
}

TEST_F(ScanTest, ReadSysfsDeviceReadsWhatItIsAskedFor) {
  MkdirP("sys/block/sda");
  WriteFile("sys/block/sda/dev", "8:0\n");
  WriteFile("sys/block/sda/uevent", "MAJOR=8\nDEVNAME=sda\n");
  SysfsDeviceFiles both = ReadSysfsDevice(root_ + "/sys/block/sda", true, true);
  EXPECT_EQ(both.dev, "8:0\n");
  EXPECT_EQ(both.uevent, "MAJOR=8\nDEVNAME=sda\n");
  SysfsDeviceFiles none = ReadSysfsDevice(root_ + "/sys/block/sda", false, false);
  EXPECT_EQ(none.dev, "");
  EXPECT_EQ(none.uevent, "");
  SysfsDeviceFiles missing = ReadSysfsDevice(root_ + "/sys/block/sdz", true, true);
  EXPECT_EQ(missing.dev, "");
}

}  // namespace
}  // namespace hotring::hotplug::rules

#include "testing/fake_sysfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace hotring::testing {
namespace {

std::string RealPath(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : std::string();
}

std::string LinkTarget(const std::string& path) {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof(buffer));
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

TEST(FakeSysfsTest, DevicesAreLinkedLikeTheKernelDoes) {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok()) << sys.status();
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/pci0000:00/0000:00:1f.2",
                              .subsystem = "pci",
                              .kind = FakeSysfs::Kind::kBus,
                              .uevent = {{"PCI_ID", "8086:2922"}, {"MODALIAS", "pci:v8086"}},
                              .attributes = {{"vendor", "0x8086\n"}}})
                  .ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/"
                                         "0:0:0:0/block/sda",
                              .subsystem = "block",
                              .uevent = {{"MAJOR", "8"}, {"MINOR", "0"}, {"DEVNAME", "sda"}}})
                  .ok());
  const std::string root = RealPath(sys->root());
  EXPECT_EQ(RealPath(sys->Path("bus/pci/devices/0000:00:1f.2")),
            root + "/devices/pci0000:00/0000:00:1f.2");
  EXPECT_EQ(RealPath(sys->Path("class/block/sda")),
            root + "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda");
  // Relative links, as in the real sysfs.
  EXPECT_EQ(LinkTarget(sys->Path("class/block/sda")).substr(0, 6), "../../");
  EXPECT_EQ(RealPath(sys->Path("devices/pci0000:00/0000:00:1f.2/subsystem")), root + "/bus/pci");
  EXPECT_EQ(RealPath(sys->Path(
                "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/subsystem")),
            root + "/class/block");
  EXPECT_EQ(*sys->ReadUevent("/devices/pci0000:00/0000:00:1f.2"),
            "PCI_ID=8086:2922\nMODALIAS=pci:v8086\n");
  EXPECT_EQ(*sys->ReadFile("devices/pci0000:00/0000:00:1f.2/vendor"), "0x8086\n");
  EXPECT_TRUE(Exists(sys->Path("bus/pci/uevent")));
  // An intermediate directory is not a device: no uevent file.
  EXPECT_FALSE(Exists(sys->Path("devices/pci0000:00/uevent")));
}

TEST(FakeSysfsTest, ModulesBusesAndDrivers) {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok()) << sys.status();
  ASSERT_TRUE(sys->AddModule("usbcore").ok());
  ASSERT_TRUE(sys->AddDriver("usb", "hub").ok());
  EXPECT_TRUE(Exists(sys->Path("module/usbcore/uevent")));
  EXPECT_TRUE(Exists(sys->Path("bus/usb/uevent")));
  EXPECT_TRUE(Exists(sys->Path("bus/usb/drivers/hub/uevent")));
  EXPECT_TRUE(absl::IsInvalidArgument(sys->AddModule("a/b")));
  EXPECT_TRUE(absl::IsInvalidArgument(sys->AddDevice({.devpath = "/class/x"})));
  EXPECT_TRUE(absl::IsInvalidArgument(sys->AddDevice({.devpath = "/devices/a/../b"})));
}

TEST(FakeSysfsTest, RemoveDeviceTakesItsLinksAndChildren) {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok()) << sys.status();
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/usb1", .subsystem = "usb",
                              .kind = FakeSysfs::Kind::kBus})
                  .ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/usb1/1-1/input/input3", .subsystem = "input"})
                  .ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/platform/serial8250/tty/ttyS0",
                              .subsystem = "tty"})
                  .ok());
  ASSERT_TRUE(sys->RemoveDevice("/devices/usb1").ok());
  EXPECT_FALSE(Exists(sys->Path("devices/usb1")));
  EXPECT_FALSE(Exists(sys->Path("bus/usb/devices/usb1")));
  EXPECT_FALSE(Exists(sys->Path("class/input/input3")));
  EXPECT_TRUE(Exists(sys->Path("class/tty/ttyS0")));
  EXPECT_TRUE(absl::IsNotFound(sys->RemoveDevice("/devices/usb1")));
}

TEST(FakeSysfsTest, BrokenUeventFilesFailAsAdvertised) {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok()) << sys.status();
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/a", .subsystem = "misc"}).ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/b", .subsystem = "misc"}).ok());
  ASSERT_TRUE(sys->BreakUevent("/devices/a", FakeSysfs::UeventFault::kUnreadableAndUnwritable)
                  .ok());
  ASSERT_TRUE(sys->BreakUevent("/devices/b", FakeSysfs::UeventFault::kWriteFails).ok());
  EXPECT_LT(::open(sys->UeventPath("/devices/a").c_str(), O_WRONLY | O_CLOEXEC), 0);
  EXPECT_EQ(errno, EISDIR);
  const int fd = ::open(sys->UeventPath("/devices/b").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_LT(::write(fd, "change", 6), 0);
  EXPECT_EQ(errno, ENOSPC);
  ::close(fd);
}

TEST(FakeSysfsTest, TreeIsRemovedWithItsOwner) {
  std::string root;
  {
    absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
    ASSERT_TRUE(sys.ok()) << sys.status();
    ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/x/y", .subsystem = "misc"}).ok());
    FakeSysfs moved = std::move(*sys);
    root = moved.root();
    EXPECT_TRUE(sys->root().empty());
    EXPECT_TRUE(Exists(root + "/devices/x/y/uevent"));
  }
  EXPECT_FALSE(Exists(root));
}

TEST(FakeSysfsTest, KernelBitmapPrintsTheBuildsWordSize) {
  if (sizeof(unsigned long) == 8) {
    EXPECT_EQ(KernelBitmap("10000000000000 0"), "10000000000000 0");
  } else {
    // KEY_POWER (116): 64-bit word 1 bit 52, 32-bit word 3 bit 20.
    EXPECT_EQ(KernelBitmap("10000000000000 0"), "100000 0 0 0");
    EXPECT_EQ(KernelBitmap("1000000000007 ff9f207ac14057ff"), "10000 7 ff9f207a c14057ff");
    EXPECT_EQ(KernelBitmap("0"), "0");
    EXPECT_EQ(KernelBitmap("zz 3"), "zz 0 3");
  }
}

}  // namespace
}  // namespace hotring::testing

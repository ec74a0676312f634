#include "hotplug/boot/block_scan.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::boot {
namespace {

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

void PutLe32(std::string& bytes, size_t offset, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// A fake /sys/class/block and /dev: a virtio disk with a dos table whose first partition holds
// an ext4 filesystem, an empty CD drive, and a disk whose node is missing.
class BlockScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hotring_block_scan_XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    for (const char* d :
         {"/sys", "/sys/class", "/sys/class/block", "/sys/devices", "/sys/devices/virtio1",
          "/sys/devices/virtio1/block", "/sys/devices/virtio1/block/vda",
          "/sys/devices/virtio1/block/vda/queue", "/sys/devices/virtio1/block/vda/vda1",
          "/sys/devices/virtio2", "/sys/devices/virtio2/block", "/sys/devices/virtio2/block/vdb",
          "/sys/devices/ata1", "/sys/devices/ata1/block", "/sys/devices/ata1/block/sr0", "/dev"}) {
      ASSERT_EQ(::mkdir((root_ + d).c_str(), 0755), 0) << d;
    }
    const std::string devices = root_ + "/sys/devices";
    Write(devices + "/virtio1/block/vda/size", "4096\n");
    Write(devices + "/virtio1/block/vda/queue/logical_block_size", "512\n");
    Write(devices + "/virtio1/block/vda/vda1/size", "2048\n");
    Write(devices + "/virtio1/block/vda/vda1/partition", "1\n");
    Write(devices + "/virtio2/block/vdb/size", "4096\n");
    Write(devices + "/ata1/block/sr0/size", "0\n");
    for (const auto& [name, target] :
         {std::pair<const char*, const char*>{"vda", "../../devices/virtio1/block/vda"},
          {"vda1", "../../devices/virtio1/block/vda/vda1"},
          {"vdb", "../../devices/virtio2/block/vdb"},
          {"sr0", "../../devices/ata1/block/sr0"}}) {
      ASSERT_EQ(::symlink(target, (root_ + "/sys/class/block/" + name).c_str()), 0);
    }
    // The disk: a dos table, disk id 5e8f0a11, partition 1 (type 0x83) at sector 2048.
    std::string disk(2 * 1024 * 1024, '\0');
    PutLe32(disk, 440, 0x5e8f0a11);
    disk[446 + 4] = static_cast<char>(0x83);
    PutLe32(disk, 446 + 8, 2048);
    PutLe32(disk, 446 + 12, 2048);
    disk[510] = static_cast<char>(0x55);
    disk[511] = static_cast<char>(0xaa);
    Write(root_ + "/dev/vda", disk);
    // The partition: an ext4 superblock labelled "hotring-root".
    std::string part(8192, '\0');
    part[1024 + 0x38] = static_cast<char>(0x53);
    part[1024 + 0x39] = static_cast<char>(0xef);
    PutLe32(part, 1024 + 0x5c, 0x4);
    PutLe32(part, 1024 + 0x60, 0x40 | 0x2);
    part.replace(1024 + 0x68, 16, "\x01\x23\x45\x67\x89\xab\xcd\xef\x10\x32\x54\x76\x98\xba\xdc\xfe", 16);
    part.replace(1024 + 0x78, 12, "hotring-root");
    Write(root_ + "/dev/vda1", part);
  }
  void TearDown() override {
    ASSERT_EQ(std::system(("rm -rf '" + root_ + "'").c_str()), 0);
  }
  std::string root_;
};

TEST_F(BlockScanTest, NamesFilesystemsPartitionsAndWhatCouldNotBeRead) {
  const std::vector<SeenBlockDevice> seen =
      ScanBlockDevices(root_ + "/sys/class/block", root_ + "/dev");
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].name, "sr0");
  EXPECT_TRUE(seen[0].empty);
  EXPECT_EQ(seen[1].name, "vda");
  EXPECT_FALSE(seen[1].partition);
  EXPECT_EQ(seen[1].type, "");  // a partition table is no filesystem
  EXPECT_EQ(seen[1].problem, "");
  EXPECT_EQ(seen[2].name, "vda1");
  EXPECT_TRUE(seen[2].partition);
  EXPECT_EQ(seen[2].type, "ext4");
  EXPECT_EQ(seen[2].label, "hotring-root");
  EXPECT_EQ(seen[2].uuid, "01234567-89ab-cdef-1032-547698badcfe");
  EXPECT_EQ(seen[2].partuuid, "5e8f0a11-01");
  EXPECT_EQ(seen[2].partlabel, "");
  EXPECT_EQ(seen[3].name, "vdb");
  EXPECT_EQ(seen[3].problem, absl::StrCat("no node ", root_, "/dev/vdb"));
}

TEST(BlockScanEmptyTest, NoClassBlockIsNoDevice) {
  EXPECT_TRUE(ScanBlockDevices("/nonexistent/class/block", "/nonexistent/dev").empty());
}

}  // namespace
}  // namespace hotring::hotplug::boot

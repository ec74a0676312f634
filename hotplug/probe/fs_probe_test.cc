#include "hotplug/probe/fs_probe.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace hotring::hotplug::probe {
namespace {

// A crafted device image, read through the same bounded reader the daemon uses.
class Image {
 public:
  explicit Image(size_t size) : bytes_(size, '\0') {}
  void Put(size_t offset, absl::string_view data) { bytes_.replace(offset, data.size(), data.data(), data.size()); }
  void PutLe16(size_t offset, uint16_t v) {
    bytes_[offset] = static_cast<char>(v & 0xff);
    bytes_[offset + 1] = static_cast<char>(v >> 8);
  }
  void PutLe32(size_t offset, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_[offset + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  }
  absl::StatusOr<std::optional<FsIdentity>> Probe() const {
    return ProbeFilesystem([&](uint64_t offset, size_t length) -> absl::StatusOr<std::string> {
      EXPECT_LE(length, kMaxProbeRead);
      EXPECT_LE(offset, kMaxProbeOffset);
      if (offset >= bytes_.size()) return std::string();
      return bytes_.substr(offset, length);
    });
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

constexpr char kUuid[] = "\x01\x23\x45\x67\x89\xab\xcd\xef\x10\x32\x54\x76\x98\xba\xdc\xfe";
constexpr char kUuidText[] = "01234567-89ab-cdef-1032-547698badcfe";

Image Ext(uint32_t compat, uint32_t incompat) {
  Image image(8192);
  image.PutLe16(1024 + 0x38, 0xEF53);
  image.PutLe32(1024 + 0x5C, compat);
  image.PutLe32(1024 + 0x60, incompat);
  image.Put(1024 + 0x68, absl::string_view(kUuid, 16));
  image.Put(1024 + 0x78, "rootfs");
  return image;
}

TEST(FsProbeTest, ExtFlavoursLabelAndUuid) {
  absl::StatusOr<std::optional<FsIdentity>> fs = Ext(0x4, 0x40 | 0x2).Probe();
  ASSERT_TRUE(fs.ok()) << fs.status();
  ASSERT_TRUE(fs->has_value());
  EXPECT_EQ((*fs)->type, "ext4");
  EXPECT_EQ((*fs)->label, "rootfs");
  EXPECT_EQ((*fs)->uuid, kUuidText);
  const Image ext3 = Ext(0x4, 0x2);
  const Image ext2 = Ext(0, 0x2);
  EXPECT_EQ((*ext3.Probe())->type, "ext3");
  EXPECT_EQ((*ext2.Probe())->type, "ext2");
}

TEST(FsProbeTest, ExtLabelOfSixteenBytesHasNoTerminator) {
  Image image = Ext(0, 0);
  image.Put(1024 + 0x78, "0123456789abcdefXXXX");  // runs into the next field
  EXPECT_EQ((*image.Probe())->label, "0123456789abcdef");
}

TEST(FsProbeTest, MalformedExtIsAnError) {
  Image image = Ext(0, 0);
  image.PutLe32(1024 + 0x18, 40);  // s_log_block_size: a 2^50-byte block
  EXPECT_FALSE(image.Probe().ok());
}

TEST(FsProbeTest, TruncatedImageWithAMagicIsAnError) {
  Image image = Ext(0, 0);
  const std::string cut = image.bytes().substr(0, 1024 + 0x40);
  absl::StatusOr<std::optional<FsIdentity>> fs =
      ProbeFilesystem([&](uint64_t offset, size_t length) -> absl::StatusOr<std::string> {
        return offset >= cut.size() ? std::string() : cut.substr(offset, length);
      });
  EXPECT_FALSE(fs.ok());
}

TEST(FsProbeTest, Vfat32AndFat16) {
  Image fat32(4096);
  fat32.PutLe16(0x0B, 512);
  fat32.Put(0x0D, "\x08");
  fat32.Put(0x52, "FAT32   ");
  fat32.PutLe32(0x43, 0x1234ABCD);
  fat32.Put(0x47, "BOOT       ");
  fat32.Put(510, "\x55\xAA");
  absl::StatusOr<std::optional<FsIdentity>> fs = fat32.Probe();
  ASSERT_TRUE(fs.ok()) << fs.status();
  ASSERT_TRUE(fs->has_value());
  EXPECT_EQ((*fs)->type, "vfat");
  EXPECT_EQ((*fs)->uuid, "1234-ABCD");
  EXPECT_EQ((*fs)->label, "BOOT");

  Image fat16(4096);
  fat16.PutLe16(0x0B, 2048);
  fat16.Put(0x0D, "\x04");
  fat16.Put(0x36, "FAT16   ");
  fat16.PutLe32(0x27, 0x00C0FFEE);
  fat16.Put(0x2B, "NO NAME    ");
  fat16.Put(510, "\x55\xAA");
  fs = fat16.Probe();
  ASSERT_TRUE(fs.ok() && fs->has_value());
  EXPECT_EQ((*fs)->uuid, "00C0-FFEE");
  EXPECT_EQ((*fs)->label, "");  // "NO NAME" means none
}

TEST(FsProbeTest, VfatWithABadSectorSizeIsAnError) {
  Image fat(4096);
  fat.PutLe16(0x0B, 1000);
  fat.Put(0x0D, "\x01");
  fat.Put(0x52, "FAT32   ");
  fat.Put(510, "\x55\xAA");
  EXPECT_FALSE(fat.Probe().ok());
}

TEST(FsProbeTest, MbrSignatureAloneIsNoFilesystem) {
  Image mbr(4096);
  mbr.Put(510, "\x55\xAA");
  absl::StatusOr<std::optional<FsIdentity>> fs = mbr.Probe();
  ASSERT_TRUE(fs.ok());
  EXPECT_FALSE(fs->has_value());
}

TEST(FsProbeTest, Btrfs) {
  Image image(65536 + 4096);
  image.Put(65536 + 0x40, "_BHRfS_M");
  image.Put(65536 + 0x20, absl::string_view(kUuid, 16));
  image.Put(65536 + 0x12b, "data");
  absl::StatusOr<std::optional<FsIdentity>> fs = image.Probe();
  ASSERT_TRUE(fs.ok() && fs->has_value()) << fs.status();
  EXPECT_EQ((*fs)->type, "btrfs");
  EXPECT_EQ((*fs)->label, "data");
  EXPECT_EQ((*fs)->uuid, kUuidText);
}

TEST(FsProbeTest, Xfs) {
  Image image(4096);
  image.Put(0, "XFSB");
  image.Put(4, std::string("\x00\x00\x10\x00", 4));  // 4096, big-endian
  image.Put(32, absl::string_view(kUuid, 16));
  image.Put(108, "scratch");
  absl::StatusOr<std::optional<FsIdentity>> fs = image.Probe();
  ASSERT_TRUE(fs.ok() && fs->has_value()) << fs.status();
  EXPECT_EQ((*fs)->type, "xfs");
  EXPECT_EQ((*fs)->label, "scratch");
  EXPECT_EQ((*fs)->uuid, kUuidText);
  image.Put(4, std::string("\x00\x00\x10\x01", 4));
  EXPECT_FALSE(image.Probe().ok());
}

TEST(FsProbeTest, Swap) {
  Image image(8192);
  image.Put(4096 - 10, "SWAPSPACE2");
  image.PutLe32(1024, 1);
  image.Put(1024 + 12, absl::string_view(kUuid, 16));
  image.Put(1024 + 28, "swap0");
  absl::StatusOr<std::optional<FsIdentity>> fs = image.Probe();
  ASSERT_TRUE(fs.ok() && fs->has_value()) << fs.status();
  EXPECT_EQ((*fs)->type, "swap");
  EXPECT_EQ((*fs)->label, "swap0");
  EXPECT_EQ((*fs)->uuid, kUuidText);
  image.PutLe32(1024, 7);
  EXPECT_FALSE(image.Probe().ok());
}

TEST(FsProbeTest, EmptyOrZeroedDeviceIsNoFilesystem) {
  const Image empty(0);
  const Image zeroed(128 * 1024);
  absl::StatusOr<std::optional<FsIdentity>> fs = empty.Probe();
  ASSERT_TRUE(fs.ok());
  EXPECT_FALSE(fs->has_value());
  fs = zeroed.Probe();
  ASSERT_TRUE(fs.ok());
  EXPECT_FALSE(fs->has_value());
}

TEST(FsProbeTest, ReadsAFileThroughPread) {
  char path[] = "/tmp/hotring_fs_probe_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const Image image = Ext(0x4, 0x40);
  const std::string& bytes = image.bytes();
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  absl::StatusOr<std::optional<FsIdentity>> fs = ProbeFilesystemAt(path);
  ::unlink(path);
  ASSERT_TRUE(fs.ok() && fs->has_value()) << fs.status();
  EXPECT_EQ((*fs)->label, "rootfs");
  EXPECT_FALSE(ProbeFilesystemAt("/nonexistent/dev/vdz").ok());
}

}  // namespace
}  // namespace hotring::hotplug::probe

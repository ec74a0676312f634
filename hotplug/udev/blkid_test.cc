// The filesystem and partition table probers on images made in the test by the real tools
// (mkfs.ext4, mkfs.vfat, mkswap, mksquashfs, sgdisk, sfdisk), checked against Debian's libblkid
// (`blkid -p -o udev`, `partx -P`) on the same images, and on broken images.
#include "hotplug/udev/blkid.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/probe/fs_probe.h"
#include "hotplug/probe/partition_table.h"

namespace hotring::hotplug::udev {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

// Runs a shell command; the test fails with its output when it fails.
std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen " << command;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << command << ":\n" << out
                   << "(the tools come from testing/install_deps.sh --all)";
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An image file made by a command, read through the probers' bounded reader.
class ImageFile {
 public:
  ImageFile(const std::string& name, uint64_t size) : path_(absl::StrCat(TempDir(), "/", name)) {
    ::unlink(path_.c_str());
    Shell(absl::StrCat("truncate -s ", size, " ", path_));
  }
  const std::string& path() const { return path_; }
  std::string bytes() const { return ReadAll(path_); }

 private:
  std::string path_;
};


// A reader over bytes in memory that checks the probers stay within their bounds.
class MemoryReader {
 public:
  explicit MemoryReader(std::string bytes) : bytes_(std::move(bytes)) {}
  absl::StatusOr<std::string> operator()(uint64_t offset, size_t length) const {
    EXPECT_LE(length, probe::kMaxGptEntryBytes);
    if (offset >= bytes_.size()) return std::string();
    return bytes_.substr(offset, length);
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

absl::StatusOr<std::optional<probe::PartitionTable>> Table(const std::string& bytes) {
  MemoryReader reader(bytes);
  return probe::ProbePartitionTable([&](uint64_t o, size_t l) { return reader(o, l); });
}

absl::StatusOr<std::optional<probe::FsIdentity>> Fs(const std::string& bytes) {
  MemoryReader reader(bytes);
  return probe::ProbeFilesystem([&](uint64_t o, size_t l) { return reader(o, l); });
}

// `blkid -p -o udev` of an image, as KEY -> VALUE.
std::map<std::string, std::string> Blkid(const std::string& path) {
  std::map<std::string, std::string> out;
  for (absl::string_view line : absl::StrSplit(Shell("/sbin/blkid -p -o udev " + path), '\n')) {
    const size_t eq = line.find('=');
    if (eq != absl::string_view::npos) out[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return out;
}

// Every property we set has blkid's value, and every ID_FS_ property blkid sets that we know
// of is set by us.
void ExpectSameAsBlkid(const std::string& path, const Properties& ours) {
  const std::map<std::string, std::string> theirs = Blkid(path);
  for (const auto& [k, v] : ours) {
    auto it = theirs.find(k);
    ASSERT_NE(it, theirs.end()) << k << " set by us, not by blkid";
    EXPECT_EQ(it->second, v) << k;
  }
  for (const char* key : {"ID_FS_TYPE", "ID_FS_UUID", "ID_FS_UUID_ENC", "ID_FS_LABEL",
                          "ID_FS_LABEL_ENC", "ID_FS_VERSION", "ID_FS_USAGE",
                          "ID_PART_TABLE_TYPE", "ID_PART_TABLE_UUID"}) {
    if (theirs.count(key) != 0) {
      EXPECT_NE(PropertyValue(ours, key), "") << key << " missing";
    }
  }
}

Properties ProbeFsProperties(const ImageFile& image) {
  absl::StatusOr<std::optional<probe::FsIdentity>> fs = probe::ProbeFilesystemAt(image.path());
  EXPECT_TRUE(fs.ok()) << fs.status();
  if (!fs.ok() || !fs->has_value()) {
    ADD_FAILURE() << "no filesystem found in " << image.path();
    return {};
  }
  return FsProperties(**fs);
}

TEST(BlkidTest, Ext4WithLabelWithSpaces) {
  ImageFile image("ext4.img", 8 << 20);
  Shell("/sbin/mkfs.ext4 -q -F -L 'root fs' -U 0b9c1d3e-5f7a-4c2b-9e8d-123456789abc " + image.path());
  const Properties props = ProbeFsProperties(image);
  EXPECT_THAT(props, ElementsAre(Pair("ID_FS_LABEL", "root_fs"), Pair("ID_FS_LABEL_ENC", "root\\x20fs"),
                                 Pair("ID_FS_UUID", "0b9c1d3e-5f7a-4c2b-9e8d-123456789abc"),
                                 Pair("ID_FS_UUID_ENC", "0b9c1d3e-5f7a-4c2b-9e8d-123456789abc"),
                                 Pair("ID_FS_VERSION", "1.0"),
                                 Pair("ID_FS_TYPE", "ext4"), Pair("ID_FS_USAGE", "filesystem")));
  ExpectSameAsBlkid(image.path(), props);
}

TEST(BlkidTest, Ext2WithLabelThatLooksLikeAPath) {
  ImageFile image("ext2.img", 4 << 20);
  Shell("/sbin/mkfs.ext2 -q -F -L '../../etc' " + image.path());
  const Properties props = ProbeFsProperties(image);
  EXPECT_EQ(PropertyValue(props, "ID_FS_TYPE"), "ext2");
  EXPECT_EQ(PropertyValue(props, "ID_FS_LABEL_ENC"), "..\\x2f..\\x2fetc");
  ExpectSameAsBlkid(image.path(), props);
}

TEST(BlkidTest, VfatFat12AndFat32) {
  ImageFile fat12("fat12.img", 8 << 20);
  Shell("/sbin/mkfs.vfat -n BOOT -i 1234ABCD " + fat12.path());
  Properties props = ProbeFsProperties(fat12);
  EXPECT_THAT(props, ElementsAre(Pair("ID_FS_LABEL", "BOOT"), Pair("ID_FS_LABEL_ENC", "BOOT"),
                                 Pair("ID_FS_UUID", "1234-ABCD"), Pair("ID_FS_UUID_ENC", "1234-ABCD"),
                                 Pair("ID_FS_VERSION", "FAT12"),
                                 Pair("ID_FS_TYPE", "vfat"), Pair("ID_FS_USAGE", "filesystem")));
  ExpectSameAsBlkid(fat12.path(), props);
  ImageFile fat32("fat32.img", 40 << 20);
  Shell("/sbin/mkfs.vfat -F 32 -n EFI -i 7E46580C " + fat32.path());
  props = ProbeFsProperties(fat32);
  EXPECT_EQ(PropertyValue(props, "ID_FS_VERSION"), "FAT32");
  EXPECT_EQ(PropertyValue(props, "ID_FS_UUID"), "7E46-580C");
  ExpectSameAsBlkid(fat32.path(), props);
}

TEST(BlkidTest, SwapAndSquashfs) {
  ImageFile swap("swap.img", 1 << 20);
  Shell("/sbin/mkswap -L 'my  la/bel' -U 7ddc5a7c-a0f2-40c7-a861-31ec166e8644 " + swap.path());
  Properties props = ProbeFsProperties(swap);
  EXPECT_THAT(props, ElementsAre(Pair("ID_FS_LABEL", "my_la/bel"),
                                 Pair("ID_FS_LABEL_ENC", "my\\x20\\x20la\\x2fbel"),
                                 Pair("ID_FS_UUID", "7ddc5a7c-a0f2-40c7-a861-31ec166e8644"),
                                 Pair("ID_FS_UUID_ENC", "7ddc5a7c-a0f2-40c7-a861-31ec166e8644"),
                                 Pair("ID_FS_VERSION", "1"), Pair("ID_FS_TYPE", "swap"),
                                 Pair("ID_FS_USAGE", "other")));
  ExpectSameAsBlkid(swap.path(), props);

  const std::string dir = TempDir() + "/squash";
  Shell(absl::StrCat("rm -rf ", dir, " && mkdir -p ", dir, " && echo hi > ", dir, "/a"));
  const std::string squash = TempDir() + "/squash.img";
  Shell(absl::StrCat("/usr/bin/mksquashfs ", dir, " ", squash, " -quiet -noappend"));
  absl::StatusOr<std::optional<probe::FsIdentity>> fs = probe::ProbeFilesystemAt(squash);
  ASSERT_TRUE(fs.ok() && fs->has_value()) << fs.status();
  props = FsProperties(**fs);
  EXPECT_THAT(props, ElementsAre(Pair("ID_FS_VERSION", "4.0"), Pair("ID_FS_TYPE", "squashfs"),
                                 Pair("ID_FS_USAGE", "filesystem")));
  ExpectSameAsBlkid(squash, props);
}

TEST(BlkidTest, GptFromSgdisk) {
  ImageFile image("gpt.img", 20 << 20);
  Shell("/sbin/sgdisk -U 11111111-2222-3333-4444-555555555555 -n 1:2048:+4M -t 1:8300 "
      "-c '1:my root/x' -u 1:aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee -A 1:set:2 "
      "-n 2:0:0 -t 2:ef00 -u 2:b7e62c63-37cf-4bf6-a038-456b44f1efce " + image.path());
  absl::StatusOr<std::optional<probe::PartitionTable>> table = Table(image.bytes());
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE(table->has_value());
  EXPECT_THAT(PartitionTableProperties(**table),
              ElementsAre(Pair("ID_PART_TABLE_UUID", "11111111-2222-3333-4444-555555555555"),
                          Pair("ID_PART_TABLE_TYPE", "gpt")));
  ExpectSameAsBlkid(image.path(), PartitionTableProperties(**table));
  ASSERT_EQ((*table)->entries.size(), 2u);
  // As `partx -P` (libblkid) lists them: NR=1 START=2048 SECTORS=8192 NAME="my root/x"
  // UUID=aaaaaaaa-... TYPE=0fc63daf-... FLAGS=0x4; NR=2 START=10240 SECTORS=30687 FLAGS=0x0.
  EXPECT_THAT(PartitionEntryProperties(**table, (*table)->entries[0], "254:0"),
              ElementsAre(Pair("ID_PART_ENTRY_SCHEME", "gpt"),
                          Pair("ID_PART_ENTRY_NAME", "my\\x20root\\x2fx"),
                          Pair("ID_PART_ENTRY_UUID", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
                          Pair("ID_PART_ENTRY_TYPE", "0fc63daf-8483-4772-8e79-3d69d8477de4"),
                          Pair("ID_PART_ENTRY_FLAGS", "0x4"), Pair("ID_PART_ENTRY_NUMBER", "1"),
                          Pair("ID_PART_ENTRY_OFFSET", "2048"), Pair("ID_PART_ENTRY_SIZE", "8192"),
                          Pair("ID_PART_ENTRY_DISK", "254:0")));
  const probe::PartitionEntry& two = (*table)->entries[1];
  EXPECT_EQ(two.number, 2);
  EXPECT_EQ(two.offset, 10240u);
  EXPECT_EQ(two.size, 30687u);
  EXPECT_EQ(two.type, "c12a7328-f81f-11d2-ba4b-00a0c93ec93b");
  EXPECT_EQ(two.uuid, "b7e62c63-37cf-4bf6-a038-456b44f1efce");
  // And the same table read as libblkid reads it.
  const std::string partx = Shell("/usr/bin/partx -o NR,START,SECTORS,UUID,TYPE,FLAGS -P " + image.path());
  EXPECT_THAT(partx, ::testing::HasSubstr(
                         "NR=\"1\" START=\"2048\" SECTORS=\"8192\" UUID=\"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\" "
                         "TYPE=\"0fc63daf-8483-4772-8e79-3d69d8477de4\" FLAGS=\"0x4\""));
}

TEST(BlkidTest, DosWithLogicalPartitionsFromSfdisk) {
  ImageFile image("dos.img", 20 << 20);
  Shell(absl::StrCat("printf 'label: dos\\nlabel-id: 0x9e2f1a3b\\nstart=2048, size=8192, type=83, bootable\\n"
                   "start=10240, size=8192, type=5\\nstart=12288, size=2048, type=82\\n"
                   "start=16384, size=2048, type=83\\n' | /sbin/sfdisk -q ",
                   image.path()));
  absl::StatusOr<std::optional<probe::PartitionTable>> table = Table(image.bytes());
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE(table->has_value());
  ExpectSameAsBlkid(image.path(), PartitionTableProperties(**table));
  EXPECT_EQ((*table)->uuid, "9e2f1a3b");
  // partx -P: 1 2048 8192 9e2f1a3b-01 0x83 0x80; 2 10240 8192 -02 0x5; 5 12288 2048 -05 0x82;
  // 6 16384 2048 -06 0x83.
  std::vector<std::string> got;
  for (const probe::PartitionEntry& e : (*table)->entries) {
    got.push_back(absl::StrCat(e.number, " ", e.offset, " ", e.size, " ", e.uuid, " ", e.type, " ", e.flags));
  }
  EXPECT_THAT(got, ElementsAre("1 2048 8192 9e2f1a3b-01 0x83 128", "2 10240 8192 9e2f1a3b-02 0x5 0",
                               "5 12288 2048 9e2f1a3b-05 0x82 0", "6 16384 2048 9e2f1a3b-06 0x83 0"));
  EXPECT_THAT(PartitionEntryProperties(**table, (*table)->entries[0], "8:0"),
              ElementsAre(Pair("ID_PART_ENTRY_SCHEME", "dos"), Pair("ID_PART_ENTRY_UUID", "9e2f1a3b-01"),
                          Pair("ID_PART_ENTRY_TYPE", "0x83"), Pair("ID_PART_ENTRY_FLAGS", "0x80"),
                          Pair("ID_PART_ENTRY_NUMBER", "1"), Pair("ID_PART_ENTRY_OFFSET", "2048"),
                          Pair("ID_PART_ENTRY_SIZE", "8192"), Pair("ID_PART_ENTRY_DISK", "8:0")));
}

TEST(BlkidTest, WholeDiskFatIsAFilesystemNotATable) {
  ImageFile image("fatdisk.img", 8 << 20);
  Shell("/sbin/mkfs.vfat -n DISK " + image.path());
  absl::StatusOr<std::optional<probe::PartitionTable>> table = Table(image.bytes());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_FALSE(table->has_value());
}

TEST(BlkidTest, BrokenGptIsAnErrorNotACrash) {
  ImageFile image("badgpt.img", 4 << 20);
  Shell("/sbin/sgdisk -n 1:2048:+1M " + image.path());
  std::string bytes = image.bytes();
  std::string header_flip = bytes;
  header_flip[512 + 40] ^= 1;  // first usable LBA: the header CRC no longer matches
  EXPECT_EQ(Table(header_flip).status().code(), absl::StatusCode::kDataLoss);
  std::string entry_flip = bytes;
  entry_flip[1024 + 60] ^= 1;  // a name byte: the entry array CRC no longer matches
  EXPECT_EQ(Table(entry_flip).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Table(bytes.substr(0, 700)).status().code(), absl::StatusCode::kDataLoss);  // cut short
  // A header asking for a huge entry array (with a CRC that matches) is refused before reading.
  std::string huge = bytes;
  huge[512 + 80] = '\xff';
  huge[512 + 81] = '\xff';
  huge.replace(512 + 16, 4, 4, '\0');
  const uint32_t crc = probe::Crc32(absl::string_view(huge).substr(512, 92));
  for (int i = 0; i < 4; ++i) huge[512 + 16 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  const absl::Status refused = Table(huge).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("entries"));
}

TEST(BlkidTest, LoopingExtendedChainIsAnError) {
  std::string disk(1 << 20, '\0');
  disk[510] = '\x55';
  disk[511] = '\xAA';
  auto entry = [&](size_t sector, int slot, uint8_t type, uint32_t start, uint32_t size) {
    const size_t at = sector * 512 + 446 + 16 * slot;
    disk[at + 4] = static_cast<char>(type);
    for (int i = 0; i < 4; ++i) {
      disk[at + 8 + i] = static_cast<char>((start >> (8 * i)) & 0xff);
      disk[at + 12 + i] = static_cast<char>((size >> (8 * i)) & 0xff);
    }
    disk[sector * 512 + 510] = '\x55';
    disk[sector * 512 + 511] = '\xAA';
  };
  entry(0, 0, 0x05, 100, 1000);
  entry(100, 0, 0x83, 1, 10);
  entry(100, 1, 0x05, 100, 10);  // the next EBR at 200
  entry(200, 0, 0x83, 1, 10);
  entry(200, 1, 0x05, 50, 10);  // points back at 150: a chain that could loop
  const absl::Status looped = Table(disk).status();
  EXPECT_EQ(looped.code(), absl::StatusCode::kDataLoss) << looped;
}

TEST(BlkidTest, MalformedSuperblocksAreErrors) {
  ImageFile image("ext4b.img", 4 << 20);
  Shell("/sbin/mkfs.ext4 -q -F " + image.path());
  std::string bytes = image.bytes();
  bytes[1024 + 0x18] = 30;  // log block size
  EXPECT_EQ(Fs(bytes).status().code(), absl::StatusCode::kDataLoss);
  std::string squash(4096, '\0');
  squash.replace(0, 4, "hsqs");
  squash[28] = 9;  // major version 9
  EXPECT_EQ(Fs(squash).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Fs("hsqs").status().code(), absl::StatusCode::kDataLoss);
}

TEST(BlkidTest, RandomBytesAfterSignaturesNeverCrash) {
  std::mt19937 rng(17);
  for (int round = 0; round < 2000; ++round) {
    std::string disk(70000, '\0');
    for (char& c : disk) c = static_cast<char>(rng());
    switch (round % 4) {
      case 0:  // protective MBR and a GPT signature
        disk[510] = '\x55';
        disk[511] = '\xAA';
        for (int i = 0; i < 4; ++i) disk[446 + 16 * i] = 0;
        disk[446 + 4] = '\xEE';
        disk.replace(512, 8, "EFI PART");
        break;
      case 1:  // dos with an extended partition
        disk[510] = '\x55';
        disk[511] = '\xAA';
        for (int i = 0; i < 4; ++i) disk[446 + 16 * i] = 0;
        disk[446 + 4] = 0x05;
        break;
      case 2:
        disk.replace(0, 4, "hsqs");
        break;
      default:
        disk[1024 + 0x38] = '\x53';
        disk[1024 + 0x39] = '\xEF';
        break;
    }
    (void)Table(disk);
    (void)Fs(disk);
  }
}

}  // namespace
}  // namespace hotring::hotplug::udev

// The two places where Debian's udevd 252.39 leaves the claim directories alone, as the guest
// comparison (testing/udevcompat/guest_compare.sh --rules) showed them in its /run/udev: a
// disk's own by-diskseq link has no claim directory, and once udevd is idle no ".lock" file
// and no empty claim directory is left. (Claims themselves: udev_rules_handler_test.)
#include "hotplug/udevrules/link_claims.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::udevrules {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

TEST(IsOwnDiskseqLinkTest, OnlyADisksLinkNamedByItsOwnDiskseq) {
  // sr0 (DISKSEQ=11) and vda (DISKSEQ=12) in the guest: no claim directory for these.
  EXPECT_TRUE(IsOwnDiskseqLink("disk/by-diskseq/11", "block", "disk", "11"));
  EXPECT_TRUE(IsOwnDiskseqLink("disk/by-diskseq/12", "block", "disk", "12"));
  // sr0's link of its earlier DISKSEQ (a media change raised it): claims as usual.
  EXPECT_FALSE(IsOwnDiskseqLink("disk/by-diskseq/10", "block", "disk", "11"));
  EXPECT_FALSE(IsOwnDiskseqLink("disk/by-diskseq/12-part1", "block", "partition", "12"));
  EXPECT_FALSE(IsOwnDiskseqLink("disk/by-diskseq/12", "block", "partition", "12"));
  EXPECT_FALSE(IsOwnDiskseqLink("disk/by-diskseq/12", "block", "disk", std::nullopt));
  EXPECT_FALSE(IsOwnDiskseqLink("disk/by-diskseq/", "block", "disk", ""));
  EXPECT_FALSE(IsOwnDiskseqLink("disk/by-diskseq/4", "tty", "", "4"));
  EXPECT_FALSE(IsOwnDiskseqLink("disk/by-id/12", "block", "disk", "12"));
}

TEST(CleanUpLinkClaimsTest, LocksGoAndDirectoriesLeftEmptyWithThem) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string run = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/claims_cleanup");
  ASSERT_EQ(std::system(absl::StrCat("rm -rf ", run).c_str()), 0);
  ASSERT_EQ(::mkdir(run.c_str(), 0755), 0);
  const std::string links = run + "/links";
  // "cdrom" has sr0's claim; "disk\x2fby-diskseq\x2f10" only its lock (the old DISKSEQ's link
  // was withdrawn); "empty" nothing; a file and a hidden directory are not claim directories.
  for (const std::string d : {"", "/cdrom", "/disk\\x2fby-diskseq\\x2f10", "/empty", "/.hidden"}) {
    ASSERT_EQ(::mkdir((links + d).c_str(), 0755), 0) << d;
  }
  for (const std::string f : {"/cdrom/.lock", "/disk\\x2fby-diskseq\\x2f10/.lock", "/.hidden/.lock", "/file"}) {
    const int fd = ::open((links + f).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << f;
    ::close(fd);
  }
  ASSERT_EQ(::symlink("-100:/dev/sr0", (links + "/cdrom/b11:0").c_str()), 0);
  const int run_fd = ::open(run.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(run_fd, 0);
  absl::StatusOr<size_t> removed = CleanUpLinkClaims(run_fd);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 2u);
  EXPECT_FALSE(Exists(links + "/cdrom/.lock"));
  EXPECT_TRUE(Exists(links + "/cdrom/b11:0")) << "a claim stays";
  EXPECT_FALSE(Exists(links + "/disk\\x2fby-diskseq\\x2f10"));
  EXPECT_FALSE(Exists(links + "/empty"));
  EXPECT_TRUE(Exists(links + "/.hidden/.lock"));
  EXPECT_TRUE(Exists(links + "/file"));
  // Again: nothing left to do; without links/ at all, nothing either.
  removed = CleanUpLinkClaims(run_fd);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0u);
  ASSERT_EQ(std::system(absl::StrCat("rm -rf ", links).c_str()), 0);
  removed = CleanUpLinkClaims(run_fd);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 0u);
  ::close(run_fd);
}

}  // namespace
}  // namespace hotring::hotplug::udevrules

#include "hotplug/devroot/dev_root.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace hotring::hotplug::devroot {
namespace {

TEST(SafePathTest, RefusesEscapes) {
  EXPECT_TRUE(IsSafeRelativePath("sda"));
  EXPECT_TRUE(IsSafeRelativePath("bus/usb/001/002"));
  EXPECT_TRUE(IsSafeRelativePath("a..b"));
  EXPECT_FALSE(IsSafeRelativePath(""));
  EXPECT_FALSE(IsSafeRelativePath("/etc/passwd"));
  EXPECT_FALSE(IsSafeRelativePath(".."));
  EXPECT_FALSE(IsSafeRelativePath("../etc/x"));
  EXPECT_FALSE(IsSafeRelativePath("a/../../x"));
  EXPECT_FALSE(IsSafeRelativePath("a/./b"));
  EXPECT_FALSE(IsSafeRelativePath("a//b"));
  EXPECT_FALSE(IsSafeRelativePath("a/"));
  EXPECT_FALSE(IsSafeRelativePath("a\nb"));
  EXPECT_FALSE(IsSafeRelativePath(std::string(300, 'x')));
}

class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/dev_root_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = dir;
    absl::StatusOr<DevRoot> root = DevRoot::Open(path_);
    ASSERT_TRUE(root.ok()) << root.status();
    root_.emplace(*std::move(root));
  }
  void TearDown() override { (void)std::system(("rm -rf " + path_).c_str()); }

  std::string Target(const std::string& link) const {
    char buffer[PATH_MAX];
    const ssize_t n = readlink((path_ + "/" + link).c_str(), buffer, sizeof(buffer));
    return n < 0 ? "" : std::string(buffer, static_cast<size_t>(n));
  }

  std::string path_;
  std::optional<DevRoot> root_;
};

TEST_F(LinkTest, LinksAreRelativeAndReplacedOnlyWhenTheyDiffer) {
  absl::StatusOr<bool> made = MakeLinkBeneath(*root_, "disk/by-label/root", "sda1");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(*made);
  EXPECT_EQ(Target("disk/by-label/root"), "../../sda1");
  struct stat st;
  ASSERT_EQ(stat((path_ + "/disk/by-label").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  // The same link again changes nothing; another target replaces it.
  EXPECT_FALSE(*MakeLinkBeneath(*root_, "disk/by-label/root", "sda1"));
  EXPECT_TRUE(*MakeLinkBeneath(*root_, "disk/by-label/root", "sdb1"));
  EXPECT_EQ(Target("disk/by-label/root"), "../../sdb1");
}

TEST_F(LinkTest, ALinkIsRemovedOnlyWhileItPointsAtItsDevice) {
  ASSERT_TRUE(MakeLinkBeneath(*root_, "disk/by-id/x", "sdb").ok());
  // Another device took the name since: not ours to remove.
  EXPECT_FALSE(*RemoveLinkBeneath(*root_, "disk/by-id/x", "sda"));
  EXPECT_EQ(Target("disk/by-id/x"), "../../sdb");
  EXPECT_TRUE(*RemoveLinkBeneath(*root_, "disk/by-id/x", "sdb"));
  EXPECT_EQ(Target("disk/by-id/x"), "");
  EXPECT_FALSE(*RemoveLinkBeneath(*root_, "disk/by-id/x", "sdb"));  // gone already
}

TEST_F(LinkTest, NeitherAFileNorASymlinkedDirectoryIsEverUsed) {
  ASSERT_EQ(symlink("/etc", (path_ + "/disk").c_str()), 0);
  const absl::StatusOr<bool> through = MakeLinkBeneath(*root_, "disk/passwd", "sda");
  EXPECT_TRUE(absl::IsFailedPrecondition(through.status())) << through.status();
  ASSERT_EQ(close(creat((path_ + "/node").c_str(), 0600)), 0);
  const absl::StatusOr<bool> over = MakeLinkBeneath(*root_, "node", "sda");
  EXPECT_TRUE(absl::IsFailedPrecondition(over.status())) << over.status();
  const absl::StatusOr<bool> escape = MakeLinkBeneath(*root_, "../x", "sda");
  EXPECT_TRUE(absl::IsFailedPrecondition(escape.status())) << escape.status();
}

TEST_F(LinkTest, ALinkWithNoClaimLeftGoesWithItsEmptyDirectories) {
  ASSERT_TRUE(MakeLinkBeneath(*root_, "disk/by-id/x", "sdb").ok());
  ASSERT_TRUE(MakeLinkBeneath(*root_, "disk/by-uuid/y", "sdb").ok());
  EXPECT_TRUE(*RemoveSymlinkBeneath(*root_, "disk/by-id/x"));
  struct stat st;
  EXPECT_NE(lstat((path_ + "/disk/by-id").c_str(), &st), 0) << "empty: removed";
  EXPECT_EQ(lstat((path_ + "/disk/by-uuid/y").c_str(), &st), 0) << "not empty: kept";
  EXPECT_FALSE(*RemoveSymlinkBeneath(*root_, "disk/by-id/x"));
  // Only symlinks: a node of that name stays.
  ASSERT_EQ(close(creat((path_ + "/node").c_str(), 0600)), 0);
  EXPECT_FALSE(*RemoveSymlinkBeneath(*root_, "node"));
  EXPECT_TRUE(StatBeneath(*root_, "node", &st));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_TRUE(StatBeneath(*root_, "disk/by-uuid/y", &st));
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(symlink("/etc", (path_ + "/etc").c_str()), 0);
  EXPECT_FALSE(StatBeneath(*root_, "etc/passwd", &st)) << "never through a symlinked directory";
}

}  // namespace
}  // namespace hotring::hotplug::devroot

#include "hotplug/bench/bench_rules_tree.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/rules/mdev_scan.h"
#include "hotplug/rules/rule_set.h"
#include "hotplug/devroot/user_db.h"

namespace hotring::hotplug::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class BoardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // tmpfs when there is one: thousands of small files.
    char tmpl[] = "/dev/shm/bench_rules_tree_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    EXPECT_TRUE(ClearDirectory(root_).ok());
    ::rmdir(root_.c_str());
  }
  std::string root_;
};

TEST_F(BoardTest, TheBoardHasTheAskedDevicesAndMdevFindsEveryNode) {
  absl::StatusOr<BoardCounts> counts = GenerateBoardTree(root_, 1000);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->total(), 1000u);
  EXPECT_GT(counts->block, 350u);
  EXPECT_GT(counts->tty, 250u);
  EXPECT_GT(counts->input, 200u);
  EXPECT_GT(counts->net, 10u);

  std::set<std::string> names;
  size_t with_subsystem = 0;
  ASSERT_TRUE(rules::ScanSysDev(root_ + "/sys/dev", [&](const rules::ScannedDevice& d) {
                EXPECT_TRUE(names.insert(std::string(d.name)).second) << "twice: " << d.name;
                EXPECT_TRUE(rules::ParseDevNumber(d.dev).has_value()) << d.path;
                if (d.subsystem) ++with_subsystem;
              }).ok());
  // Net interfaces have no node: everything else is under /sys/dev, named by its DEVNAME.
  EXPECT_EQ(names.size(), counts->nodes());
  EXPECT_EQ(with_subsystem, counts->nodes());
  EXPECT_TRUE(names.count("input/event0"));
  EXPECT_TRUE(names.count("snd/controlC0"));
  EXPECT_TRUE(names.count("sda1"));
  EXPECT_TRUE(names.count("mmcblk0p2"));
  EXPECT_TRUE(names.count("ttyS0"));
  EXPECT_FALSE(names.count("eth0"));
}

TEST_F(BoardTest, TheBoardConfigIsFortyRulesThatAllParse) {
  ASSERT_TRUE(GenerateBoardTree(root_, 100).ok());
  absl::StatusOr<devroot::UserDb> users = devroot::UserDb::Load(root_);
  ASSERT_TRUE(users.ok()) << users.status();
  absl::StatusOr<rules::RuleSet> rule_set =
      rules::LoadRules({.file = root_ + "/etc/mdev.conf"}, *users);
  ASSERT_TRUE(rule_set.ok()) << rule_set.status();
  EXPECT_EQ(rule_set->rules().size(), 39u);  // 40 lines, one a comment
  EXPECT_THAT(rule_set->warnings(), IsEmpty());
}

TEST_F(BoardTest, SnapshotsTellEveryDifference) {
  const std::string a = root_ + "/a";
  const std::string b = root_ + "/b";
  for (const std::string& dev : {a, b}) {
    ASSERT_EQ(::mkdir(dev.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dev + "/disk").c_str(), 0755), 0);
    ASSERT_EQ(::mknod((dev + "/disk/sda").c_str(), S_IFBLK | 0660, ::makedev(8, 0)), 0);
    ASSERT_EQ(::chmod((dev + "/disk/sda").c_str(), 0660), 0);  // whatever the umask
    ASSERT_EQ(::symlink("disk/sda", (dev + "/sda").c_str()), 0);
  }
  absl::StatusOr<DevSnapshot> same_a = SnapshotDev(a);
  absl::StatusOr<DevSnapshot> same_b = SnapshotDev(b);
  ASSERT_TRUE(same_a.ok() && same_b.ok());
  EXPECT_EQ(same_a->at("disk/sda"), "b 0660 0:0 8:0");
  EXPECT_EQ(same_a->at("sda"), "l 0777 0:0 -> disk/sda");
  EXPECT_THAT(DiffSnapshots(*same_a, *same_b), IsEmpty());

  ASSERT_EQ(::chmod((b + "/disk/sda").c_str(), 0600), 0);
  ASSERT_EQ(::mknod((b + "/null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)), 0);
  ASSERT_EQ(::chmod((b + "/null").c_str(), 0666), 0);
  absl::StatusOr<DevSnapshot> changed = SnapshotDev(b);
  ASSERT_TRUE(changed.ok());
  EXPECT_THAT(DiffSnapshots(*same_a, *changed),
              ElementsAre("disk/sda: b 0660 0:0 8:0 vs b 0600 0:0 8:0",
                          "only in the second: null c 0666 0:0 1:3"));
}

}  // namespace
}  // namespace hotring::hotplug::bench

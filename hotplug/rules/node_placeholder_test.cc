// Placeholders, and the engine on a placeholder dev root: the same node actions as with real
// nodes (made, moved, linked, rechowned, removed only when still the device's), with no mknod,
// so that the results do not depend on the privilege of whoever runs them.
#include "hotplug/rules/node_placeholder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hotplug/rules/engine.h"

namespace hotring::hotplug::rules {
namespace {

TEST(NodePlaceholderTest, FormatsAndParsesBack) {
  const PlaceholderNode node{.block = true, .major = 8, .minor = 0, .uid = 0, .gid = 6,
                             .mode = 0640};
  EXPECT_EQ(FormatNodePlaceholder(node), "hotring-node block 8:0 0:6 0640\n");
  EXPECT_EQ(ParseNodePlaceholder("hotring-node block 8:0 0:6 0640\n"), node);
  const PlaceholderNode tty{.major = 4, .minor = 64, .uid = 0, .gid = 5, .mode = 02620};
  EXPECT_EQ(ParseNodePlaceholder(FormatNodePlaceholder(tty)), tty);
}

TEST(NodePlaceholderTest, AnythingElseIsNotOne) {
  for (const char* text : {"", "hotring-node block 8:0 0:6 0640", "hotring-node pipe 8:0 0:6 0640\n",
                           "hotring-node block 8 0:6 0640\n", "hotring-node block 8:0 0:6 640\n",
                           "hotring-node block 8:0 0:6 0648\n", "hotring-node block 8:0 0:6 0640 x\n",
                           "some file a command wrote\n"}) {
    EXPECT_FALSE(ParseNodePlaceholder(text).has_value()) << text;
  }
}

class PlaceholderDevRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(mkdir(dev_.c_str(), 0755), 0);
    absl::StatusOr<DevRoot> root = DevRoot::Open(dev_, DevNodes::kPlaceholders);
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_TRUE(root->placeholders());
    root_ = std::make_unique<DevRoot>(std::move(*root));
    users_ = std::make_unique<UserDb>(
        UserDb::FromText("root:x:0:0::/:/bin/sh\n", "root:x:0:\ndisk:x:6:\n"));
  }

  void Run(absl::string_view rules_text, absl::string_view action, absl::string_view name,
           std::optional<DevNumber> number) {
    absl::StatusOr<RuleSet> rules = ParseRules(rules_text, "mdev.conf", *users_);
    ASSERT_TRUE(rules.ok()) << rules.status();
    name_ = std::string(name);
    Device device;
    device.action = ParseDeviceAction(action);
    device.devpath = "/devices/pci0/block/sda";
    device.subsystem = "block";
    device.name = name_;
    device.number = number;
    report_ = ApplyNodes(*root_, PlanEvent(*rules, device));
  }

  // The placeholder text at `relative`, "" when there is no regular file.
  std::string Text(absl::string_view relative) const {
    const std::string path = absl::StrCat(dev_, "/", relative);
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string LinkTarget(absl::string_view relative) const {
    char buf[256];
    const ssize_t n = readlink(absl::StrCat(dev_, "/", relative).c_str(), buf, sizeof(buf));
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

  std::string dev_;
  std::string name_;
  std::unique_ptr<DevRoot> root_;
  std::unique_ptr<UserDb> users_;
  NodeReport report_;
};

TEST_F(PlaceholderDevRootTest, AddWritesThePlannedNodeAndRemoveDeletesIt) {
  Run("sd[a-z] root:disk 0640\n", "add", "sda", DevNumber{8, 0});
  EXPECT_EQ(Text("sda"), "hotring-node block 8:0 0:6 0640\n");
  EXPECT_EQ(report_.nodes_made, 1u);
  EXPECT_EQ(report_.chowned, 1u);
  EXPECT_TRUE(report_.errors.empty()) << report_.errors[0];
  // StatAsNode shows it as the node (what ApplyNodes and the replay's listing read).
  const UniqueFd dir(open(dev_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st;
  ASSERT_EQ(fstatat(dir.get(), "sda", &st, AT_SYMLINK_NOFOLLOW), 0);
  ASSERT_TRUE(StatAsNode(dir.get(), "sda", st));
  EXPECT_TRUE(S_ISBLK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_rdev, makedev(8, 0));
  EXPECT_EQ(st.st_gid, 6u);

  Run("sd[a-z] root:disk 0640\n", "remove", "sda", DevNumber{8, 0});
  EXPECT_EQ(report_.removed, 1u);
  EXPECT_EQ(Text("sda"), "");
}

TEST_F(PlaceholderDevRootTest, MoveAndLinkThenASecondAddRechowns) {
  Run("sda root:root 0600 >disk/boot\n", "add", "sda", DevNumber{8, 0});
  EXPECT_EQ(Text("disk/boot"), "hotring-node block 8:0 0:0 0600\n");
  EXPECT_EQ(LinkTarget("sda"), "disk/boot");
  // The same device again with another owner and mode: the placeholder is rewritten, as a real
  // node would be chowned and chmodded, not made twice.
  Run("sda root:disk 0660 >disk/boot\n", "add", "sda", DevNumber{8, 0});
  EXPECT_EQ(Text("disk/boot"), "hotring-node block 8:0 0:6 0660\n");
  EXPECT_EQ(report_.nodes_made, 0u);
  EXPECT_EQ(report_.chowned, 1u);
}

TEST_F(PlaceholderDevRootTest, AnotherDevicesNodeAndPlainFilesAreKept) {
  Run("sda 0:0 0660\n", "add", "sda", DevNumber{8, 0});
  // A remove for another number (a newer device took the name): kept, as with real nodes.
  Run("sda 0:0 0660\n", "remove", "sda", DevNumber{8, 16});
  EXPECT_EQ(Text("sda"), "hotring-node block 8:0 0:0 0660\n");
  EXPECT_EQ(report_.removed, 0u);
  // A file a command wrote where a node goes is not a node: neither replaced nor removed.
  std::ofstream(dev_ + "/sdb") << "log\n";
  Run("sd[a-z] 0:0 0660\n", "add", "sdb", DevNumber{8, 16});
  EXPECT_EQ(Text("sdb"), "log\n");
  ASSERT_EQ(report_.errors.size(), 1u);
  EXPECT_EQ(report_.errors[0], "node sdb: exists and is not a device node");
  Run("sd[a-z] 0:0 0660\n", "remove", "sdb", DevNumber{8, 16});
  EXPECT_EQ(Text("sdb"), "log\n");
}

}  // namespace
}  // namespace hotring::hotplug::rules

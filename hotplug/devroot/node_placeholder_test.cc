// Placeholders, and the engine on a placeholder dev root: the same node actions as with real
// nodes (made, moved, linked, rechowned, removed only when still the device's), with no mknod,
// so that the results do not depend on the privilege of whoever runs them.
#include "hotplug/devroot/node_placeholder.h"

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
#include "hotplug/devroot/dev_root.h"

namespace hotring::hotplug::devroot {
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
  }

  // Applies one node step: what a rule planned for device `name` (the kernel's name), its node
  // at `path`, a link at `link` ("" for none).
  void Run(NodeStep::Kind kind, absl::string_view path, absl::string_view name,
           absl::string_view link, DevNumber number, Owner owner, mode_t mode) {
    NodeStep step;
    step.kind = kind;
    step.path = std::string(path);
    step.name = std::string(name);
    step.link = std::string(link);
    step.number = number;
    step.block = true;
    step.owner = owner;
    step.mode = mode;
    report_ = ApplyNodes(*root_, {step});
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
  NodeReport report_;
};

TEST_F(PlaceholderDevRootTest, AddWritesThePlannedNodeAndRemoveDeletesIt) {
  Run(NodeStep::Kind::kCreate, "sda", "sda", "", {8, 0}, {0, 6}, 0640);
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

  Run(NodeStep::Kind::kRemove, "sda", "sda", "", {8, 0}, {0, 6}, 0640);
  EXPECT_EQ(report_.removed, 1u);
  EXPECT_EQ(Text("sda"), "");
}

TEST_F(PlaceholderDevRootTest, MoveAndLinkThenASecondAddRechowns) {
  Run(NodeStep::Kind::kCreate, "disk/boot", "sda", "sda", {8, 0}, {0, 0}, 0600);
  EXPECT_EQ(Text("disk/boot"), "hotring-node block 8:0 0:0 0600\n");
  EXPECT_EQ(LinkTarget("sda"), "disk/boot");
  // The same device again with another owner and mode: the placeholder is rewritten, as a real
  // node would be chowned and chmodded, not made twice.
  Run(NodeStep::Kind::kCreate, "disk/boot", "sda", "sda", {8, 0}, {0, 6}, 0660);
  EXPECT_EQ(Text("disk/boot"), "hotring-node block 8:0 0:6 0660\n");
  EXPECT_EQ(report_.nodes_made, 0u);
  EXPECT_EQ(report_.chowned, 1u);
}

TEST_F(PlaceholderDevRootTest, AnotherDevicesNodeAndPlainFilesAreKept) {
  Run(NodeStep::Kind::kCreate, "sda", "sda", "", {8, 0}, {0, 0}, 0660);
  // A remove for another number (a newer device took the name): kept, as with real nodes.
  Run(NodeStep::Kind::kRemove, "sda", "sda", "", {8, 16}, {0, 0}, 0660);
  EXPECT_EQ(Text("sda"), "hotring-node block 8:0 0:0 0660\n");
  EXPECT_EQ(report_.removed, 0u);
  // A file a command wrote where a node goes is not a node: neither replaced nor removed.
  std::ofstream(dev_ + "/sdb") << "log\n";
  Run(NodeStep::Kind::kCreate, "sdb", "sdb", "", {8, 16}, {0, 0}, 0660);
  EXPECT_EQ(Text("sdb"), "log\n");
  ASSERT_EQ(report_.errors.size(), 1u);
  EXPECT_EQ(report_.errors[0], "node sdb: exists and is not a device node");
  Run(NodeStep::Kind::kRemove, "sdb", "sdb", "", {8, 16}, {0, 0}, 0660);
  EXPECT_EQ(Text("sdb"), "log\n");
}

}  // namespace
}  // namespace hotring::hotplug::devroot

// The engine on a real temporary dev root (the tests run as root: mknod and chown work).
#include "hotplug/rules/engine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const UserDb& Users() {
  static const UserDb* const db =
      new UserDb(UserDb::FromText("root:x:0:0::/:/bin/sh\n", "root:x:0:\ndisk:x:6:\n"));
  return *db;
}

// What is at a path (lstat), for assertions.
struct Entry {
  bool exists = false;
  char type = '?';  // 'b', 'c', 'd', 'l', '-'
  mode_t perms = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  DevNumber number;
  std::string target;  // symlinks
};

Entry Look(const std::string& path) {
  Entry e;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return e;
  e.exists = true;
  e.type = S_ISBLK(st.st_mode)   ? 'b'
           : S_ISCHR(st.st_mode) ? 'c'
           : S_ISDIR(st.st_mode) ? 'd'
           : S_ISLNK(st.st_mode) ? 'l'
                                 : '-';
  e.perms = st.st_mode & 07777;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.number = {major(st.st_rdev), minor(st.st_rdev)};
  if (e.type == 'l') {
    char buf[4096];
    const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
    if (n > 0) e.target.assign(buf, static_cast<size_t>(n));
  }
  return e;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    dev_ = base_ + "/dev";
    outside_ = base_ + "/outside";
    ASSERT_EQ(mkdir(base_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(dev_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0755), 0);
    absl::StatusOr<DevRoot> root = DevRoot::Open(dev_);
    ASSERT_TRUE(root.ok()) << root.status();
    root_ = std::make_unique<DevRoot>(std::move(*root));
  }

  void UseRules(absl::string_view text) {
    absl::StatusOr<RuleSet> rules = ParseRules(text, "mdev.conf", Users());
    ASSERT_TRUE(rules.ok()) << rules.status();
    rules_ = std::move(*rules);
  }

  // Plans and applies one event, like the daemon (commands are only collected).
  EventPlan Run(absl::string_view action, absl::string_view devpath, absl::string_view devname,
                std::optional<DevNumber> number,
                std::vector<std::pair<std::string, std::string>> extra = {}) {
    env_ = {{"ACTION", std::string(action)}, {"DEVPATH", std::string(devpath)},
            {"SUBSYSTEM", devpath.find("/block/") != absl::string_view::npos ? "block" : "tty"},
            {"DEVNAME", std::string(devname)}};
    for (auto& kv : extra) env_.push_back(kv);
    names_.push_back(std::string(devname));
    Device device;
    device.action = ParseDeviceAction(action);
    device.devpath = env_[1].second;
    device.subsystem = env_[2].second;
    device.name = names_.back();
    device.number = number;
    for (const auto& [k, v] : env_) {
      if (k == "FIRMWARE") device.firmware = v;
    }
    device.env = env_;
    EventPlan plan = PlanEvent(rules_, device);
    report_ = ApplyNodes(*root_, plan);
    return plan;
  }

  std::string D(absl::string_view relative) const { return absl::StrCat(dev_, "/", relative); }

  std::string base_, dev_, outside_;
  std::unique_ptr<DevRoot> root_;
  RuleSet rules_;
  std::vector<std::pair<std::string, std::string>> env_;
  std::vector<std::string> names_;
  NodeReport report_;
};

// The cases of busybox's testsuite/mdev.tests, at the engine's level.
TEST_F(EngineTest, DefaultRuleMakesRootRoot0660AndRemoveDeletes) {
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  Entry e = Look(D("sda"));
  EXPECT_EQ(e.type, 'b');
  EXPECT_EQ(e.perms, 0660u);
  EXPECT_EQ(e.uid, 0u);
  EXPECT_EQ(e.gid, 0u);
  EXPECT_EQ(e.number, (DevNumber{8, 0}));
  EXPECT_EQ(report_.nodes_made, 1u);
  EXPECT_EQ(report_.chowned, 1u);
  Run("remove", "/block/sda", "sda", std::nullopt);
  EXPECT_FALSE(Look(D("sda")).exists);
  EXPECT_EQ(report_.removed, 1u);
}

TEST_F(EngineTest, StopsOnFirstRuleButNotOnDashRules) {
  UseRules(".* 1:1 666\nsda 2:2 444\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("sda")).perms, 0666u);
  EXPECT_EQ(Look(D("sda")).uid, 1u);
  ASSERT_EQ(unlink(D("sda").c_str()), 0);
  UseRules("-.* 1:1 666\nsda 2:2 444\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("sda")).perms, 0444u);
  EXPECT_EQ(Look(D("sda")).gid, 2u);
}

TEST_F(EngineTest, MoveAndLinkIntoSubdirectory) {
  UseRules("sda 0:0 444 >disk/scsiA\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("disk")).type, 'd');
  EXPECT_EQ(Look(D("disk")).perms, 0755u);
  EXPECT_EQ(Look(D("disk/scsiA")).type, 'b');
  EXPECT_EQ(Look(D("disk/scsiA")).perms, 0444u);
  EXPECT_EQ(Look(D("sda")).type, 'l');
  EXPECT_EQ(Look(D("sda")).target, "disk/scsiA");
  EXPECT_EQ(report_.linked, 1u);
  Run("remove", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_FALSE(Look(D("sda")).exists);
  EXPECT_FALSE(Look(D("disk/scsiA")).exists);
  EXPECT_EQ(report_.removed, 2u);
}

TEST_F(EngineTest, TrailingSlashMovesIntoDirectoryWithTheDeviceName) {
  UseRules("sda 0:0 444 >disk/\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("disk/sda")).type, 'b');
  EXPECT_EQ(Look(D("sda")).target, "disk/sda");
}

TEST_F(EngineTest, MoveMakesIntermediateDirectoriesAndNoLink) {
  UseRules("sda 0:0 444 =disk/sd/a\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("disk/sd")).type, 'd');
  EXPECT_EQ(Look(D("disk/sd/a")).type, 'b');
  EXPECT_FALSE(Look(D("sda")).exists);
}

TEST_F(EngineTest, RegexSubstringReplace) {
  UseRules("s([0-9])*d([a-z]+) 0:0 644 >sd/%2_%0\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("sd/a_sda")).perms, 0644u);
  EXPECT_EQ(Look(D("sda")).target, "sd/a_sda");
}

TEST_F(EngineTest, MajorMinorRuleAndNumericOwner) {
  UseRules("@8,0 0:1 644\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("sda")).gid, 1u);
  EXPECT_EQ(Look(D("sda")).perms, 0644u);
}

TEST_F(EngineTest, MoveRuleDoesNotDeleteNodeWithNameEqualToDeviceName) {
  UseRules("capi 0:0 0660 =capi20\ncapi([0-9]) 0:0 0660 =capi20.0%1\ncapi([0-9]*) 0:0 0660 =capi20.%1\n");
  Run("add", "/class/tty/capi", "capi", DevNumber{191, 0});
  Run("add", "/class/tty/capi1", "capi1", DevNumber{191, 1});
  Run("add", "/class/tty/capi20", "capi20", DevNumber{191, 20});
  EXPECT_EQ(Look(D("capi20")).number, (DevNumber{191, 0}));
  EXPECT_EQ(Look(D("capi20")).type, 'c');
  EXPECT_EQ(Look(D("capi20.01")).number, (DevNumber{191, 1}));
  EXPECT_EQ(Look(D("capi20.20")).number, (DevNumber{191, 20}));
}

TEST_F(EngineTest, DevtmpfsNodeIsRenamedNotDuplicated) {
  // What devtmpfs leaves before the event: the kernel's node under DEVNAME.
  ASSERT_EQ(mknod(D("sda").c_str(), S_IFBLK | 0600, makedev(8, 0)), 0);
  UseRules("sda 0:6 640 =disk/a\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_FALSE(Look(D("sda")).exists);
  EXPECT_EQ(Look(D("disk/a")).number, (DevNumber{8, 0}));
  EXPECT_EQ(Look(D("disk/a")).perms, 0640u);
  EXPECT_EQ(Look(D("disk/a")).gid, 6u);
  EXPECT_EQ(report_.renamed, 1u);
  EXPECT_EQ(report_.nodes_made, 0u);
}

TEST_F(EngineTest, ExistingNodeGetsOwnerAndModeOnly) {
  ASSERT_EQ(mknod(D("ttyS0").c_str(), S_IFCHR | 0600, makedev(4, 64)), 0);
  UseRules("ttyS[0-9]+ 0:6 0620\n");
  Run("add", "/class/tty/ttyS0", "ttyS0", DevNumber{4, 64});
  EXPECT_EQ(Look(D("ttyS0")).perms, 0620u);
  EXPECT_EQ(report_.nodes_made, 0u);
  EXPECT_EQ(report_.chowned, 1u);
}

// Create skips the chmod and chown after its own mknod when they would change nothing; these
// pin the cases where they do change something.
class UmaskGuard {
 public:
  explicit UmaskGuard(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskGuard() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST_F(EngineTest, FreshNodeGetsTheRuleModeWhateverTheUmask) {
  for (const mode_t mask : {mode_t{0}, mode_t{022}, mode_t{077}}) {
    SCOPED_TRACE(mask);
    UmaskGuard guard(mask);
    absl::StatusOr<DevRoot> root = DevRoot::Open(dev_);  // the umask is read here
    ASSERT_TRUE(root.ok()) << root.status();
    root_ = std::make_unique<DevRoot>(std::move(*root));
    UseRules("null 0:0 0666\nsd[a-z] 0:6 0640\nttyS0 0:0 04620\n");
    Run("add", "/class/mem/null", "null", DevNumber{1, 3});
    Run("add", "/block/sda", "sda", DevNumber{8, 0});
    Run("add", "/class/tty/ttyS0", "ttyS0", DevNumber{4, 64});
    Run("add", "/class/tty/ttyS1", "ttyS1", DevNumber{4, 65});  // the default rule
    EXPECT_EQ(Look(D("null")).perms, 0666u);
    EXPECT_EQ(Look(D("sda")).perms, 0640u);
    EXPECT_EQ(Look(D("sda")).gid, 6u);
    EXPECT_EQ(Look(D("ttyS0")).perms, 04620u);
    EXPECT_EQ(Look(D("ttyS1")).perms, 0660u);
    EXPECT_EQ(Look(D("ttyS1")).gid, 0u);
    for (const char* name : {"null", "sda", "ttyS0", "ttyS1"}) ASSERT_EQ(unlink(D(name).c_str()), 0);
  }
}

TEST_F(EngineTest, SetgidDirectoriesDoNotLendTheirGroupToFreshNodes) {
  UmaskGuard guard(0);
  // A setgid dev root, and a setgid subdirectory, both of group 6: a node made in either
  // would inherit group 6 if its owner were taken for granted after mknod.
  ASSERT_EQ(chown(dev_.c_str(), 0, 6), 0);
  ASSERT_EQ(chmod(dev_.c_str(), 02755), 0);
  ASSERT_EQ(mkdir(D("snd").c_str(), 0755), 0);
  ASSERT_EQ(chown(D("snd").c_str(), 0, 6), 0);
  ASSERT_EQ(chmod(D("snd").c_str(), 02755), 0);
  absl::StatusOr<DevRoot> root = DevRoot::Open(dev_);
  ASSERT_TRUE(root.ok()) << root.status();
  root_ = std::make_unique<DevRoot>(std::move(*root));
  Run("add", "/class/tty/ttyS0", "ttyS0", DevNumber{4, 64});
  Run("add", "/class/sound/controlC0", "snd/controlC0", DevNumber{116, 0});
  EXPECT_EQ(Look(D("ttyS0")).gid, 0u);
  EXPECT_EQ(Look(D("ttyS0")).perms, 0660u);
  EXPECT_EQ(Look(D("snd/controlC0")).gid, 0u);
  EXPECT_EQ(Look(D("snd/controlC0")).perms, 0660u);
}

TEST_F(EngineTest, NodeLeftByAnEarlierRunIsCorrectedNotDuplicated) {
  // Not devtmpfs: mknod comes first and meets the old node (EEXIST); it must still be checked
  // and get this rule's owner and mode.
  ASSERT_FALSE(root_->devtmpfs());
  ASSERT_EQ(mknod(D("sda").c_str(), S_IFBLK | 0600, makedev(8, 0)), 0);
  UseRules("sd[a-z] 0:6 0640\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(D("sda")).perms, 0640u);
  EXPECT_EQ(Look(D("sda")).gid, 6u);
  EXPECT_EQ(report_.nodes_made, 0u);
  EXPECT_EQ(report_.chowned, 1u);
  EXPECT_THAT(report_.errors, IsEmpty());
}

TEST_F(EngineTest, NoNodeRuleCreatesAndRemovesNothingButRunsCommands) {
  UseRules("tty[a-z]. 0:0 660 ! @echo $MDEV\n");
  EventPlan plan = Run("add", "/class/tty/ttyab", "ttyab", DevNumber{3, 1});
  EXPECT_FALSE(Look(D("ttyab")).exists);
  ASSERT_EQ(plan.commands.size(), 1u);
  ASSERT_EQ(mknod(D("ttyab").c_str(), S_IFCHR | 0600, makedev(3, 1)), 0);
  Run("remove", "/class/tty/ttyab", "ttyab", DevNumber{3, 1});
  EXPECT_TRUE(Look(D("ttyab")).exists);
}

TEST_F(EngineTest, RemoveKeepsANewerDevicesNodeOfTheSameName) {
  ASSERT_EQ(mknod(D("sdb").c_str(), S_IFBLK | 0600, makedev(8, 32)), 0);
  Run("remove", "/block/sdb", "sdb", DevNumber{8, 16});
  EXPECT_TRUE(Look(D("sdb")).exists);
  EXPECT_THAT(report_.errors, ElementsAre(HasSubstr("another device's node")));
}

TEST_F(EngineTest, NoNumberNoNodeButCommandsStillPlanned) {
  UseRules("$MODALIAS=.* 0:0 660 @modprobe \"$MODALIAS\"\n");
  EventPlan plan = Run("add", "/devices/pci0000:00/x", "x", std::nullopt, {{"MODALIAS", "pci:v1"}});
  EXPECT_THAT(plan.nodes, IsEmpty());
  ASSERT_EQ(plan.commands.size(), 1u);
  EXPECT_EQ(plan.commands[0].text, "modprobe \"$MODALIAS\"");
  EXPECT_THAT(plan.commands[0].envp, Contains("MODALIAS=pci:v1"));
  EXPECT_THAT(plan.commands[0].envp, Contains("MDEV=x"));
}

TEST_F(EngineTest, CommandsRunPerActionWithTheEventInTheirEnvironment) {
  UseRules("-sda 0:0 660 =block/ @echo add\n-sda 0:0 660 $echo remove\nsda 0:0 660 *echo any\n");
  EventPlan add = Run("add", "/block/sda", "sda", DevNumber{8, 0});
  ASSERT_EQ(add.commands.size(), 2u);
  EXPECT_EQ(add.commands[0].text, "echo add");
  EXPECT_EQ(add.commands[0].origin, "mdev.conf:1");
  EXPECT_THAT(add.commands[0].envp, Contains("MDEV=block/sda"));
  EXPECT_THAT(add.commands[0].envp, Contains("ACTION=add"));
  EXPECT_THAT(add.commands[0].envp, Contains("DEVPATH=/block/sda"));
  EXPECT_THAT(add.commands[0].envp, Contains("SUBSYSTEM=block"));
  EXPECT_EQ(add.commands[1].text, "echo any");
  EXPECT_THAT(add.commands[1].envp, Contains("MDEV=sda"));
  EventPlan remove = Run("remove", "/block/sda", "sda", DevNumber{8, 0});
  ASSERT_EQ(remove.commands.size(), 2u);
  EXPECT_EQ(remove.commands[0].text, "echo remove");
  EventPlan change = Run("change", "/block/sda", "sda", DevNumber{8, 0});
  ASSERT_EQ(change.commands.size(), 1u);
  EXPECT_EQ(change.commands[0].text, "echo any");
  EXPECT_THAT(change.nodes, IsEmpty());
}

TEST_F(EngineTest, RemoveWithFirmwareIsIgnoredAndAddPlansTheLoad) {
  EventPlan remove = Run("remove", "/devices/x/firmware/fw", "fw", std::nullopt,
                         {{"FIRMWARE", "brcm/fw.bin"}});
  EXPECT_THAT(remove.nodes, IsEmpty());
  EventPlan add = Run("add", "/devices/x/firmware/fw", "fw", std::nullopt,
                      {{"FIRMWARE", "brcm/fw.bin"}});
  ASSERT_TRUE(add.firmware.has_value());
  EXPECT_EQ(*add.firmware, "brcm/fw.bin");
  EventPlan bad = Run("add", "/devices/x/firmware/fw", "fw", std::nullopt,
                      {{"FIRMWARE", "../../etc/shadow"}});
  EXPECT_FALSE(bad.firmware.has_value());
  EXPECT_THAT(bad.refused, ElementsAre(HasSubstr("leaves the firmware root")));
  // An ignored remove still says when its DEVNAME leaves the dev root (mdev_conf_fuzz).
  EventPlan outside = Run("remove", "/devices/x/tty/tty3", "/fw", std::nullopt,
                          {{"FIRMWARE", "intel/ibt.sfi"}});
  EXPECT_THAT(outside.refused, ElementsAre("DEVNAME '/fw' leaves the dev root"));
  EXPECT_THAT(outside.nodes, IsEmpty());
  EXPECT_THAT(outside.commands, IsEmpty());
}

TEST_F(EngineTest, RootDeviceGetsARootLink) {
  absl::StatusOr<RuleSet> rules = ParseRules("", "mdev.conf", Users());
  ASSERT_TRUE(rules.ok());
  std::vector<std::pair<std::string, std::string>> env = {{"ACTION", "add"}};
  Device device{.action = DeviceAction::kAdd, .devpath = "/block/vda", .subsystem = "block",
                .name = "vda", .number = DevNumber{254, 0}, .env = env};
  EventPlan plan = PlanEvent(*rules, device, {.root_device = DevNumber{254, 0}});
  report_ = ApplyNodes(*root_, plan);
  EXPECT_EQ(Look(D("root")).target, "vda");
}

TEST_F(EngineTest, RemoveWithoutNumberIsBusyboxsUnlessTheCallerAsksForANumber) {
  ASSERT_EQ(mknod(D("card0").c_str(), S_IFCHR | 0600, makedev(116, 0)), 0);
  std::vector<std::pair<std::string, std::string>> env = {{"ACTION", "remove"}};
  Device device{.action = DeviceAction::kRemove, .devpath = "/devices/pci/sound/card0",
                .subsystem = "sound", .name = "card0", .env = env};
  EventPlan plan = PlanEvent(rules_, device, {.remove_needs_number = true});
  EXPECT_THAT(plan.nodes, IsEmpty());
  plan = PlanEvent(rules_, device);
  ASSERT_EQ(plan.nodes.size(), 1u);
  report_ = ApplyNodes(*root_, plan);
  EXPECT_FALSE(Look(D("card0")).exists);
}

// Security: nothing outside the dev root, whatever the event says.

TEST_F(EngineTest, DotDotDevnameIsRefusedWholly) {
  UseRules(".* 0:0 666 @touch should-not-run\n");
  EventPlan plan = Run("add", "/class/x/x", "../outside/x", DevNumber{1, 3});
  EXPECT_THAT(plan.refused, ElementsAre("DEVNAME '../outside/x' leaves the dev root"));
  EXPECT_THAT(plan.nodes, IsEmpty());
  EXPECT_THAT(plan.commands, IsEmpty());
  EXPECT_FALSE(Look(outside_ + "/x").exists);
  plan = Run("add", "/class/x/x", absl::StrCat(outside_, "/y"), DevNumber{1, 3});
  EXPECT_THAT(plan.refused, ElementsAre(HasSubstr("leaves the dev root")));
  EXPECT_FALSE(Look(outside_ + "/y").exists);
  // remove too: nothing unlinked outside.
  ASSERT_EQ(mknod((outside_ + "/z").c_str(), S_IFCHR | 0600, makedev(1, 3)), 0);
  plan = Run("remove", "/class/x/z", "../outside/z", DevNumber{1, 3});
  EXPECT_FALSE(plan.refused.empty());
  EXPECT_TRUE(Look(outside_ + "/z").exists);
}

TEST_F(EngineTest, SubstitutedPathThatEscapesIsRefusedForThatRule) {
  UseRules("$EVIL=(.*) 0:0 666 =%1 @touch should-not-run\n");
  EventPlan plan =
      Run("add", "/class/x/x", "x", DevNumber{1, 3}, {{"EVIL", "../outside/pwned"}});
  EXPECT_THAT(plan.refused, ElementsAre("mdev.conf:1: path '../outside/pwned' leaves the dev root"));
  EXPECT_THAT(plan.commands, IsEmpty());
  EXPECT_FALSE(Look(outside_ + "/pwned").exists);
}

TEST_F(EngineTest, SymlinkedSubdirectoryIsNeverFollowed) {
  ASSERT_EQ(symlink(outside_.c_str(), D("disk").c_str()), 0);
  UseRules("sda 0:0 666 >disk/sda\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_FALSE(Look(outside_ + "/sda").exists);
  EXPECT_EQ(report_.refused, 1u);
  // A DEVNAME through the symlink: neither created nor removed.
  UseRules("");
  Run("add", "/block/sdb", "disk/sdb", DevNumber{8, 16});
  EXPECT_FALSE(Look(outside_ + "/sdb").exists);
  EXPECT_EQ(report_.refused, 1u);
  ASSERT_EQ(mknod((outside_ + "/sdc").c_str(), S_IFBLK | 0600, makedev(8, 32)), 0);
  Run("remove", "/block/sdc", "disk/sdc", DevNumber{8, 32});
  EXPECT_TRUE(Look(outside_ + "/sdc").exists);
  EXPECT_EQ(report_.refused, 1u);
}

TEST_F(EngineTest, SymlinkAtTheNodeNameIsNotChmoddedThrough) {
  const std::string victim = outside_ + "/victim";
  std::ofstream(victim) << "x";
  ASSERT_EQ(chmod(victim.c_str(), 0600), 0);
  ASSERT_EQ(symlink(victim.c_str(), D("sda").c_str()), 0);
  UseRules("sda 1:1 666\n");
  Run("add", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_EQ(Look(victim).perms, 0600u);
  EXPECT_EQ(Look(victim).uid, 0u);
  EXPECT_EQ(report_.refused, 1u);
  // And remove does not unlink the symlink's target nor the symlink (it is not a node).
  Run("remove", "/block/sda", "sda", DevNumber{8, 0});
  EXPECT_TRUE(Look(victim).exists);
}

TEST_F(EngineTest, ShellMetacharactersStayOutOfTheCommandText) {
  UseRules(".* 0:0 660 @echo \"$MDEV\"\n");
  const std::string evil = "x;touch pwned$(touch pwned2)`touch pwned3`";
  EventPlan plan = Run("add", "/class/x/x", evil, std::nullopt);
  ASSERT_EQ(plan.commands.size(), 1u);
  EXPECT_EQ(plan.commands[0].text, "echo \"$MDEV\"");
  EXPECT_THAT(plan.commands[0].envp, Contains("MDEV=" + evil));
}

}  // namespace
}  // namespace hotring::hotplug::rules

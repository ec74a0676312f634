// The real binary end to end: `hotring record` on a fake board, `hotring replay` with rules,
// modules and an --exec handler, and the golden comparison.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "hotplug/replay/tree.h"
#include "testing/daemon_fixture.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::replay {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::FakeSysfs;
using testing::RunHotring;

constexpr char kPci[] = "/devices/pci0000:00/0000:00:1f.2";
constexpr char kSda[] = "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda";
constexpr char kTty[] = "/devices/platform/serial8250/tty/ttyS0";
// Firmware requests: the kernel's firmware class device of a driver waiting for its file.
constexpr char kWifiFw[] = "/devices/platform/wifi0/firmware/brcm!fw.bin";
constexpr char kGpuFw[] = "/devices/platform/gpu0/firmware/gpu.bin";

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir = testing::MakeTempDir("replay_test");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
    absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
    ASSERT_TRUE(sys.ok());
    ASSERT_TRUE(sys->AddDevice({.devpath = kPci,
                                .subsystem = "pci",
                                .kind = FakeSysfs::Kind::kBus,
                                .uevent = {{"MODALIAS", "pci:v00008086d00002922sv0sd0bc01sc06i01"}},
                                .attributes = {{"modalias", "pci:v00008086d00002922sv0sd0bc01sc06i01\n"}}})
                    .ok());
    ASSERT_TRUE(sys->AddDevice({.devpath = kSda,
                                .subsystem = "block",
                                .uevent = {{"MAJOR", "8"}, {"MINOR", "0"}, {"DEVNAME", "sda"},
                                           {"DEVTYPE", "disk"}},
                                .attributes = {{"dev", "8:0\n"}}})
                    .ok());
    ASSERT_TRUE(sys->AddDevice({.devpath = kTty,
                                .subsystem = "tty",
                                .uevent = {{"MAJOR", "4"}, {"MINOR", "64"}, {"DEVNAME", "ttyS0"}},
                                .attributes = {{"dev", "4:64\n"}}})
                    .ok());
    ASSERT_TRUE(sys->AddDevice({.devpath = kWifiFw,
                                .subsystem = "firmware",
                                .uevent = {{"FIRMWARE", "brcm/fw.bin"}}})
                    .ok());
    ASSERT_TRUE(sys->AddDevice({.devpath = kGpuFw,
                                .subsystem = "firmware",
                                .uevent = {{"FIRMWARE", "gpu.bin"}}})
                    .ok());
    before_ = *sys->ReadUevent(kSda);
    ASSERT_TRUE(WriteWholeFile(dir_ + "/passwd", "root:x:0:0::/:/bin/sh\n").ok());
    ASSERT_TRUE(WriteWholeFile(dir_ + "/group", "root:x:0:\ntty:x:5:\ndisk:x:6:\n").ok());
    ASSERT_TRUE(WriteWholeFile(dir_ + "/modules", "ahci 2 0 - Live 0x0\n").ok());
    absl::StatusOr<testing::CommandResult> rec =
        RunHotring({"record", "--out", dir_ + "/board.rec", "--sysfs-root", sys->root(),
                    "--proc-root", dir_, "--etc-root", dir_, "--kernel-version", "6.1.0-test"});
    ASSERT_TRUE(rec.ok());
    ASSERT_EQ(rec->exit_code, 0) << rec->err;
    EXPECT_THAT(rec->err, HasSubstr("5 devices, 5 events, 1 loaded modules, kernel 6.1.0-test"));
    EXPECT_EQ(*sys->ReadUevent(kSda), before_);  // record writes nothing into sysfs

    absl::StatusOr<hotplug::modules::FakeModulesTree> tree =
        hotplug::modules::FakeModulesTree::Create("6.1.0-test");
    ASSERT_TRUE(tree.ok());
    tree->AddModule({.path = "kernel/drivers/ata/libata.ko"});
    tree->AddModule({.path = "kernel/drivers/ata/ahci.ko",
                     .deps = {"kernel/drivers/ata/libata.ko"},
                     .aliases = {"pci:v00008086d00002922sv*sd*bc*sc*i*"}});
    tree->AddConfig("/etc/modprobe.d", "ahci.conf", "options ahci mobile_lpm_policy=1\n");
    ASSERT_TRUE(tree->Write().ok());
    modules_ = std::make_unique<hotplug::modules::FakeModulesTree>(std::move(*tree));

    WriteConfig("0640");
    ASSERT_TRUE(WriteWholeFile(dir_ + "/handler.sh",
                               "#!/bin/sh\n[ \"$1\" = tty ] && exit 3\nexit 0\n", 0755)
                    .ok());
  }

  void WriteConfig(absl::string_view disk_mode) {
    ASSERT_TRUE(WriteWholeFile(dir_ + "/mdev.conf",
                               absl::StrCat("sd[a-z] root:disk ", disk_mode,
                                            " >disk/boot @echo made $MDEV\n"
                                            "ttyS[0-9] root:tty 0620\n"))
                    .ok());
  }

  std::vector<std::string> ReplayArgs(const std::string& dir) const {
    return {"replay", dir + "/board.rec", "--config", dir + "/mdev.conf", "--modules-root",
            dir == dir_ ? modules_->root() : dir + "/modules", "--exec", dir + "/handler.sh"};
  }
  std::vector<std::string> ReplayArgs() const { return ReplayArgs(dir_); }

  absl::StatusOr<testing::CommandResult> Replay(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = ReplayArgs();
    args.insert(args.end(), extra.begin(), extra.end());
    return RunHotring(args);
  }

  std::string dir_;
  std::string before_;
  std::unique_ptr<hotplug::modules::FakeModulesTree> modules_;
};

TEST_F(ReplayTest, ManifestListsNodesLinksModulesAndCommands) {
  absl::StatusOr<testing::CommandResult> r = Replay();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->exit_code, 0) << r->err;
  const std::string& m = r->out;
  EXPECT_THAT(m, HasSubstr("hotring-manifest 1\n"));
  // Whoever replays: nodes are placeholders, listed as the nodes they stand for.
  // `>disk/boot`: the node moves there, DEVNAME becomes a link to it (busybox's semantics).
  EXPECT_THAT(m, HasSubstr("\ndir disk 0:0 0755\nnode disk/boot block 8:0 0:6 0640\n"
                           "link sda disk/boot\n"));
  EXPECT_THAT(m, HasSubstr("\nnode ttyS0 char 4:64 0:5 0620\n"));
  // No --firmware-root: both requests are answered "missing", in event order.
  EXPECT_THAT(m, HasSubstr("\nfirmware gpu.bin missing\nfirmware brcm/fw.bin missing\n"));
  // Modules in load order: the dependency first, the options from modprobe.d.
  EXPECT_THAT(m, HasSubstr("# modules, in load order\n"
                           "module libata lib/modules/6.1.0-test/kernel/drivers/ata/libata.ko\n"
                           "module ahci lib/modules/6.1.0-test/kernel/drivers/ata/ahci.ko "
                           "mobile_lpm_policy=1\n"));
  // Every command with its environment and exit status, in event order.
  EXPECT_THAT(m, HasSubstr("run 1 exec handler.sh pci\n  env ACTION=add\n"));
  EXPECT_THAT(m, HasSubstr("run 2 rule \"echo made $MDEV\"\n  env ACTION=add\n"));
  EXPECT_THAT(m, HasSubstr("  env MDEV=disk/boot\n"));
  EXPECT_THAT(m, HasSubstr("run 2 exec handler.sh block\n"));
  // The walk's order: platform/gpu0 (SEQNUM 3) before serial8250 before wifi0.
  EXPECT_THAT(m, HasSubstr("run 4 exec handler.sh tty\n  env ACTION=add\n  env DEVNAME=ttyS0\n"
                           "  env DEVPATH=/devices/platform/serial8250/tty/ttyS0\n  env HOME=/\n"
                           "  env MAJOR=4\n  env MINOR=64\n"
                           "  env PATH=/sbin:/bin:/usr/sbin:/usr/bin\n  env SEQNUM=4\n"
                           "  env SUBSYSTEM=tty\n  exit 3\n"));
  EXPECT_THAT(m, Not(HasSubstr("problem")));
  EXPECT_THAT(m, Not(HasSubstr(dir_)));
}

TEST_F(ReplayTest, SameInputSameBytes) {
  absl::StatusOr<testing::CommandResult> a = Replay();
  absl::StatusOr<testing::CommandResult> b = Replay();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->exit_code, 0) << a->err;
  EXPECT_EQ(a->out, b->out);
}

TEST_F(ReplayTest, GoldenComparisonShowsARuleChangeAsADiff) {
  const std::string golden = dir_ + "/golden.manifest";
  absl::StatusOr<testing::CommandResult> update = Replay({"--golden", golden, "--update"});
  ASSERT_TRUE(update.ok());
  ASSERT_EQ(update->exit_code, 0) << update->err;
  absl::StatusOr<testing::CommandResult> same = Replay({"--golden", golden});
  ASSERT_EQ(same->exit_code, 0) << same->out << same->err;

  WriteConfig("0600");
  absl::StatusOr<testing::CommandResult> changed = Replay({"--golden", golden});
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->exit_code, 1);
  EXPECT_THAT(changed->out, HasSubstr("--- " + golden + "\n+++ replay\n@@ "));
  EXPECT_THAT(changed->out,
              HasSubstr("\n-node disk/boot block 8:0 0:6 0640\n+node disk/boot block 8:0 0:6 0600\n"));
}

TEST_F(ReplayTest, FirmwareIsServedFromTheFirmwareRoot) {
  ASSERT_EQ(::mkdir((dir_ + "/firmware").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir_ + "/firmware/brcm").c_str(), 0755), 0);
  // As in Bazel's runfiles: the file is a symlink out of the directory given to the replay.
  ASSERT_TRUE(WriteWholeFile(dir_ + "/fw.bin", "FIRMWARE-BYTES").ok());
  ASSERT_EQ(::symlink((dir_ + "/fw.bin").c_str(), (dir_ + "/firmware/brcm/fw.bin").c_str()), 0);
  const std::string work = dir_ + "/work";
  absl::StatusOr<testing::CommandResult> r =
      Replay({"--firmware-root", dir_ + "/firmware", "--keep-work", work});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->exit_code, 0) << r->err;
  EXPECT_THAT(r->out, HasSubstr("# firmware requests, in event order: firmware NAME "
                                "found|missing|failed|unanswered\n"
                                "firmware gpu.bin missing\nfirmware brcm/fw.bin found\n"));
  // What the daemon's loader wrote into the kernel's files: the bytes, between "1" and "0".
  EXPECT_EQ(*ReadWholeFile(work + "/sys" + kWifiFw + "/data", 100), "FIRMWARE-BYTES");
  EXPECT_EQ(*ReadWholeFile(work + "/sys" + kWifiFw + "/loading", 100), "10");
  EXPECT_EQ(*ReadWholeFile(work + "/sys" + kGpuFw + "/loading", 100), "-1");
}

// The manifest as root and as an unprivileged user (nobody, 65534) is the same text, nodes
// included. Nobody cannot reach the runfiles or $TEST_TMPDIR (under /root): both replays run
// from copies in a scratch directory under /tmp.
TEST_F(ReplayTest, UnprivilegedReplayWritesTheSameManifest) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to compare with an unprivileged replay";
  char scratch_template[] = "/tmp/hotring-replay-test-XXXXXX";
  ASSERT_NE(::mkdtemp(scratch_template), nullptr);
  const std::string scratch = scratch_template;
  ASSERT_EQ(::chmod(scratch.c_str(), 0755), 0);
  for (const std::string& from : {testing::HotringBinary(), dir_ + "/board.rec",
                                  dir_ + "/mdev.conf", dir_ + "/handler.sh"}) {
    absl::StatusOr<testing::CommandResult> cp = testing::RunCommand({"/bin/cp", from, scratch});
    ASSERT_TRUE(cp.ok() && cp->exit_code == 0) << from;
  }
  absl::StatusOr<testing::CommandResult> cp =
      testing::RunCommand({"/bin/cp", "-R", modules_->root(), scratch + "/modules"});
  ASSERT_TRUE(cp.ok() && cp->exit_code == 0);
  absl::StatusOr<testing::CommandResult> readable =
      testing::RunCommand({"/bin/chmod", "-R", "a+rX", scratch});
  ASSERT_TRUE(readable.ok() && readable->exit_code == 0);
  for (const char* tmp : {"/tmp-root", "/tmp-nobody"}) {
    ASSERT_EQ(::mkdir((scratch + tmp).c_str(), 0700), 0);
  }
  ASSERT_EQ(::chown((scratch + "/tmp-nobody").c_str(), 65534, 65534), 0);

  std::vector<std::string> replay = {scratch + "/hotring"};
  for (const std::string& a : ReplayArgs(scratch)) replay.push_back(a);
  absl::StatusOr<testing::CommandResult> as_root =
      testing::RunCommand(replay, {"PATH=/usr/bin:/bin", "TEST_TMPDIR=" + scratch + "/tmp-root"});
  std::vector<std::string> dropped = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                      "--clear-groups", "--"};
  dropped.insert(dropped.end(), replay.begin(), replay.end());
  // Checks that the drop is real: the same command reports nobody's ids.
  absl::StatusOr<testing::CommandResult> ids = testing::RunCommand(
      {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/id"});
  absl::StatusOr<testing::CommandResult> as_nobody = testing::RunCommand(
      dropped, {"PATH=/usr/bin:/bin", "TEST_TMPDIR=" + scratch + "/tmp-nobody"});
  (void)testing::RunCommand({"/bin/rm", "-rf", scratch});
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(ids->out, HasSubstr("uid=65534"));
  ASSERT_TRUE(as_root.ok() && as_nobody.ok());
  ASSERT_EQ(as_root->exit_code, 0) << as_root->err;
  ASSERT_EQ(as_nobody->exit_code, 0) << as_nobody->err;
  EXPECT_THAT(as_nobody->out, HasSubstr("\ndir disk 0:0 0755\nnode disk/boot block 8:0 0:6 0640\n"
                                        "link sda disk/boot\nnode ttyS0 char 4:64 0:5 0620\n"));
  EXPECT_THAT(as_nobody->out, HasSubstr("run 2 rule \"echo made $MDEV\"\n"));
  EXPECT_THAT(as_nobody->out, Not(HasSubstr("problem")));
  EXPECT_EQ(as_nobody->out, as_root->out);
}

TEST_F(ReplayTest, BadRecordingNamesTheLine) {
  ASSERT_TRUE(WriteWholeFile(dir_ + "/bad.rec", "hotring-recording 1\nkernel 6.1\nevent x\n").ok());
  absl::StatusOr<testing::CommandResult> r = RunHotring({"replay", dir_ + "/bad.rec"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_THAT(r->err, HasSubstr(dir_ + "/bad.rec:3: event field x is not KEY=VALUE"));
}

TEST_F(ReplayTest, BadArgumentsExitTwo) {
  absl::StatusOr<testing::CommandResult> r = RunHotring({"replay", "--update"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 2);
  r = RunHotring({"record"});
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("--out FILE is required"));
}

}  // namespace
}  // namespace hotring::hotplug::replay

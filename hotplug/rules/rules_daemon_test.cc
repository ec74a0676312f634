// End-to-end: the real `hotring daemon --config --dev-root` on a private socket, events sent
// over the control socket, and assertions on the dev root, the commands' output and the
// counters.
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"

namespace hotring::hotplug::rules {
namespace {

using ::hotring::testing::ControlSender;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::MakeTempDir;
using ::hotring::testing::RunHotring;
using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

class RulesDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir = MakeTempDir("rules_daemon");
    ASSERT_TRUE(dir.ok()) << dir.status();
    base_ = *dir;
    dev_ = base_ + "/dev";
    conf_ = base_ + "/mdev.conf";
    out_ = base_ + "/out";
    ASSERT_EQ(mkdir(dev_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir((base_ + "/outside").c_str(), 0755), 0);
  }
  void TearDown() override { (void)!system(absl::StrCat("rm -rf '", base_, "'").c_str()); }

  void WriteConfig(const std::string& text) { std::ofstream(conf_) << text; }

  DaemonProcess Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--config", conf_, "--dev-root", dev_,
                                     "--sysfs-root", base_ + "/sys", "--log-level", "info"};
    for (std::string& a : extra) args.push_back(std::move(a));
    absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start({.args = std::move(args)});
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return std::move(*daemon);
  }

  void Send(const DaemonProcess& daemon, hotplug::EnvVars env) {
    env.emplace_back("SEQNUM", absl::StrCat(++seqnum_));
    ControlSender sender(daemon.socket());
    ASSERT_TRUE(sender.SendEvent(env));
    ASSERT_TRUE(daemon.Settle().ok()) << daemon.Log();
  }

  static hotplug::EnvVars Block(const std::string& action, const std::string& name, int minor) {
    return {{"ACTION", action},
            {"DEVPATH", "/devices/virtual/block/" + name},
            {"SUBSYSTEM", "block"},
            {"DEVNAME", name},
            {"MAJOR", "8"},
            {"MINOR", absl::StrCat(minor)}};
  }

  std::map<std::string, uint64_t> Counters(const DaemonProcess& daemon) {
    auto status = daemon.Status();
    EXPECT_TRUE(status.ok()) << status.status();
    return status.ok() ? *status : std::map<std::string, uint64_t>{};
  }

  std::string base_, dev_, conf_, out_;
  uint64_t seqnum_ = 0;
};

TEST_F(RulesDaemonTest, NodesLinksCommandsAndCounters) {
  WriteConfig(absl::StrCat(
      "# board rules\n"
      "sd([a-z]) root:6 0640 >disk/%1 @echo \"add $MDEV $ACTION $SUBSYSTEM $(pwd)\" >> ", out_,
      "\n"
      "-sd([a-z])([0-9]+) 0:0 600 $test -b \"$MDEV\" && echo \"remove $MDEV still there\" >> ",
      out_, "\n"));
  DaemonProcess daemon = Start();
  Send(daemon, Block("add", "sda", 0));
  struct stat st;
  ASSERT_EQ(lstat((dev_ + "/disk/a").c_str(), &st), 0) << daemon.Log();
  EXPECT_TRUE(S_ISBLK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_gid, 6u);
  EXPECT_EQ(st.st_rdev, makedev(8, 0));
  char target[64] = {};
  ASSERT_GT(readlink((dev_ + "/sda").c_str(), target, sizeof(target) - 1), 0);
  EXPECT_STREQ(target, "disk/a");
  EXPECT_EQ(Read(out_), absl::StrCat("add disk/a add block ", dev_, "\n"));

  Send(daemon, Block("add", "sda1", 1));
  Send(daemon, Block("remove", "sda1", 1));
  EXPECT_FALSE(Exists(dev_ + "/sda1"));
  EXPECT_THAT(Read(out_), HasSubstr("remove sda1 still there\n"));
  Send(daemon, Block("remove", "sda", 0));
  EXPECT_FALSE(Exists(dev_ + "/sda"));
  EXPECT_FALSE(Exists(dev_ + "/disk/a"));

  auto c = Counters(daemon);
  EXPECT_EQ(c["rules_nodes_made"], 2u);
  EXPECT_EQ(c["rules_linked"], 1u);
  EXPECT_EQ(c["rules_removed"], 3u);  // sda1, then disk/a and its link sda
  EXPECT_EQ(c["rules_commands_run"], 2u);
  EXPECT_EQ(c["rules_commands_failed"], 0u);
  EXPECT_EQ(c["dropped_bad_devname"], 0u);
  EXPECT_TRUE(daemon.Stop().ok()) << daemon.Log();
}

TEST_F(RulesDaemonTest, MissingConfigIsRootRoot0660) {
  DaemonProcess daemon = Start();
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/tty/ttyS0"}, {"SUBSYSTEM", "tty"},
                {"DEVNAME", "ttyS0"}, {"MAJOR", "4"}, {"MINOR", "64"}});
  struct stat st;
  ASSERT_EQ(lstat((dev_ + "/ttyS0").c_str(), &st), 0) << daemon.Log();
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
  EXPECT_THAT(daemon.Log(), HasSubstr("built-in default"));
}

TEST_F(RulesDaemonTest, BadDevnamesAreDroppedAndCountedAndTouchNothingOutside) {
  WriteConfig(".* 0:0 666\n");
  DaemonProcess daemon = Start();
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/x/evil"}, {"SUBSYSTEM", "x"},
                {"DEVNAME", "../outside/evil"}, {"MAJOR", "1"}, {"MINOR", "3"}});
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/x/abs"}, {"SUBSYSTEM", "x"},
                {"DEVNAME", base_ + "/outside/abs"}, {"MAJOR", "1"}, {"MINOR", "3"}});
  ASSERT_EQ(symlink((base_ + "/outside").c_str(), (dev_ + "/link").c_str()), 0);
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/x/through"}, {"SUBSYSTEM", "x"},
                {"DEVNAME", "link/through"}, {"MAJOR", "1"}, {"MINOR", "3"}});
  EXPECT_FALSE(Exists(base_ + "/outside/evil"));
  EXPECT_FALSE(Exists(base_ + "/outside/abs"));
  EXPECT_FALSE(Exists(base_ + "/outside/through"));
  EXPECT_EQ(Counters(daemon)["dropped_bad_devname"], 3u);
  EXPECT_EQ(Counters(daemon)["rules_nodes_made"], 0u);
  EXPECT_THAT(daemon.Log(), HasSubstr("DEVNAME '../outside/evil' leaves the dev root"));
}

TEST_F(RulesDaemonTest, ShellMetacharactersInDevnameRunNothing) {
  WriteConfig(absl::StrCat(".* 0:0 660 @echo \"$MDEV\" >> ", out_, "\n"));
  DaemonProcess daemon = Start();
  const std::string evil = "x;touch pwned1;$(touch pwned2)`touch pwned3`";
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/x/x"}, {"SUBSYSTEM", "x"},
                {"DEVNAME", evil}});
  EXPECT_EQ(Read(out_), evil + "\n") << daemon.Log();
  for (const char* name : {"pwned1", "pwned2", "pwned3"}) {
    EXPECT_FALSE(Exists(dev_ + "/" + name)) << name;
    EXPECT_FALSE(Exists(base_ + "/" + name)) << name;
  }
  EXPECT_EQ(Counters(daemon)["rules_commands_run"], 1u);
}

TEST_F(RulesDaemonTest, ReloadSwapsRulesAndABrokenFileKeepsTheOldOnes) {
  WriteConfig("null 0:0 600\n");
  DaemonProcess daemon = Start();
  auto add_null = [&](int n) {
    return hotplug::EnvVars{{"ACTION", "add"},
                            {"DEVPATH", absl::StrCat("/devices/virtual/mem/null", n)},
                            {"SUBSYSTEM", "mem"},
                            {"DEVNAME", "null"},
                            {"MAJOR", "1"},
                            {"MINOR", "3"}};
  };
  auto mode = [&] {
    struct stat st;
    return lstat((dev_ + "/null").c_str(), &st) == 0 ? (st.st_mode & 07777) : 0u;
  };
  Send(daemon, add_null(1));
  EXPECT_EQ(mode(), 0600u);
  WriteConfig("null 0:0 666\n");
  auto reload = RunHotring({"control", "reload", "--socket", daemon.socket()});
  ASSERT_TRUE(reload.ok());
  EXPECT_EQ(reload->exit_code, 0) << reload->err;
  Send(daemon, add_null(2));
  EXPECT_EQ(mode(), 0666u);
  WriteConfig("null 0:0 644\nzero nobody-here 666\n");
  reload = RunHotring({"control", "reload", "--socket", daemon.socket()});
  ASSERT_TRUE(reload.ok());
  EXPECT_NE(reload->exit_code, 0);
  EXPECT_THAT(reload->out + reload->err,
              HasSubstr(conf_ + ":2: unknown user 'nobody-here' (old rules kept)"));
  ASSERT_EQ(chmod((dev_ + "/null").c_str(), 0), 0);
  Send(daemon, add_null(3));
  EXPECT_EQ(mode(), 0666u);  // the old rules
  EXPECT_EQ(Counters(daemon)["rules_config_errors"], 1u);
  // SIGHUP reloads too, now from a fixed file.
  WriteConfig("null 0:0 604\n");
  auto reloads = [&] {
    const std::string log = daemon.Log();
    int n = 0;
    for (size_t at = log.find("rules: reloaded"); at != std::string::npos;
         at = log.find("rules: reloaded", at + 1)) {
      ++n;
    }
    return n;
  };
  ASSERT_EQ(reloads(), 1);  // the first `control reload`
  ASSERT_EQ(kill(daemon.pid(), SIGHUP), 0);
  const absl::Status reloaded = daemon.WaitForLog("rules: reloaded", 2);
  ASSERT_TRUE(reloaded.ok()) << reloaded << "\n" << daemon.Log();
  ASSERT_EQ(reloads(), 2) << daemon.Log();
  Send(daemon, add_null(4));
  EXPECT_EQ(mode(), 0604u) << daemon.Log();
}

TEST_F(RulesDaemonTest, BrokenConfigAtStartUpExitsWithFileAndLine) {
  WriteConfig("sda 0:0 660\n\nsdb 0:0 66x\n");
  auto run = RunHotring({"daemon", "--no-netlink", "--socket", "@rules_daemon_broken_config",
                         "--config", conf_, "--dev-root", dev_});
  ASSERT_TRUE(run.ok());
  EXPECT_NE(run->exit_code, 0);
  EXPECT_THAT(run->err, HasSubstr(conf_ + ":3: bad mode '66x' (octal, up to 07777)"));
}

TEST_F(RulesDaemonTest, ExecStillRunsAfterTheRules) {
  WriteConfig("");
  const std::string script = base_ + "/exec.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                        << "if test -c '" << dev_ << "/'\"$DEVNAME\"; then echo node-first >> '"
                        << out_ << "'; else echo no-node >> '" << out_ << "'; fi\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  DaemonProcess daemon = Start({"--exec", script});
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/tty/tty1"}, {"SUBSYSTEM", "tty"},
                {"DEVNAME", "tty1"}, {"MAJOR", "4"}, {"MINOR", "1"}});
  EXPECT_EQ(Read(out_), "node-first\n") << daemon.Log();
  EXPECT_THAT(daemon.Log(), HasSubstr("handler rules+exec"));
}

TEST_F(RulesDaemonTest, FirmwareIsLoadedThroughFakeSysfs) {
  const std::string devpath = "/devices/platform/wifi/firmware/wifi";
  ASSERT_EQ(system(absl::StrCat("mkdir -p ", base_, "/sys", devpath, " ", base_, "/fw").c_str()),
            0);
  std::ofstream(base_ + "/sys" + devpath + "/loading").flush();
  std::ofstream(base_ + "/sys" + devpath + "/data").flush();
  std::ofstream(base_ + "/fw/wifi.bin") << "BLOB";
  DaemonProcess daemon = Start({"--firmware-root", base_ + "/fw"});
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", devpath}, {"SUBSYSTEM", "firmware"},
                {"FIRMWARE", "wifi.bin"}});
  EXPECT_EQ(Read(base_ + "/sys" + devpath + "/loading"), "10") << daemon.Log();
  EXPECT_EQ(Read(base_ + "/sys" + devpath + "/data"), "BLOB");
  EXPECT_EQ(Counters(daemon)["rules_firmware_loaded"], 1u);
}

TEST_F(RulesDaemonTest, FailingAndHangingCommandsAreCountedAndKilled) {
  WriteConfig("-null 0:0 666 @exit 3\nnull 0:0 666 @sleep 60\n");
  DaemonProcess daemon = Start({"--event-timeout", "1", "--kill-grace", "1"});
  Send(daemon, {{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/mem/null"}, {"SUBSYSTEM", "mem"},
                {"DEVNAME", "null"}, {"MAJOR", "1"}, {"MINOR", "3"}});
  auto c = Counters(daemon);
  EXPECT_EQ(c["rules_commands_run"], 2u);
  EXPECT_EQ(c["rules_commands_failed"], 2u);
  EXPECT_EQ(c["handled"], 1u);
  EXPECT_TRUE(Exists(dev_ + "/null"));
  EXPECT_THAT(daemon.Log(), HasSubstr("mdev.conf:1: command exit 3"));
  EXPECT_THAT(daemon.Log(), HasSubstr("mdev.conf:2: command timed out"));
}

TEST_F(RulesDaemonTest, FirmwareWaitsForTheLoadingFileWithoutBlockingOtherEvents) {
  const std::string devpath = "/devices/platform/late/firmware/late";
  const std::string dir = base_ + "/sys" + devpath;
  ASSERT_EQ(system(absl::StrCat("mkdir -p ", base_, "/fw").c_str()), 0);
  std::ofstream(base_ + "/fw/late.bin") << "LATE";
  DaemonProcess daemon = Start({"--firmware-root", base_ + "/fw"});
  ControlSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent({{"ACTION", "add"}, {"DEVPATH", devpath}, {"SUBSYSTEM", "firmware"},
                                {"FIRMWARE", "late.bin"}, {"SEQNUM", "1"}}));
  // Another device's event is handled while the firmware load waits (a timer, not a sleep).
  ASSERT_TRUE(sender.SendEvent({{"ACTION", "add"}, {"DEVPATH", "/devices/virtual/mem/null"},
                                {"SUBSYSTEM", "mem"}, {"DEVNAME", "null"}, {"MAJOR", "1"},
                                {"MINOR", "3"}, {"SEQNUM", "2"}}));
  // The firmware event waits for its loading file up to 30 s (kFirmwareTries, 1 s apart), and
  // the load below must still find it waiting: an event handled only after that wait gave up
  // fails the test there. So the deadline here stays well inside those 30 s.
  absl::StatusOr<std::map<std::string, uint64_t>> c =
      daemon.WaitForCounters({{"handled", 1}}, absl::Seconds(20));
  ASSERT_TRUE(c.ok()) << c.status() << "\n" << daemon.Log();
  EXPECT_TRUE(Exists(dev_ + "/null")) << daemon.Log();
  EXPECT_EQ((*c)["handled"], 1u);
  EXPECT_EQ((*c)["running"], 1u) << "the firmware event should still be waiting";
  EXPECT_EQ((*c)["rules_firmware_loaded"], 0u);
  ASSERT_EQ(system(absl::StrCat("mkdir -p ", dir).c_str()), 0);
  std::ofstream(dir + "/data").flush();
  std::ofstream(dir + "/loading").flush();
  ASSERT_TRUE(daemon.Settle().ok()) << daemon.Log();
  EXPECT_EQ(Read(dir + "/loading"), "10") << daemon.Log();
  EXPECT_EQ(Read(dir + "/data"), "LATE");
  EXPECT_EQ(Counters(daemon)["rules_firmware_loaded"], 1u);
}

}  // namespace
}  // namespace hotring::hotplug::rules

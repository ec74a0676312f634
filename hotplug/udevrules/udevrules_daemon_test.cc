// `hotring daemon --udev-compat --udev-rules-dir DIR` end to end with a board's rule set: events
// sent to the real binary get their node's owner and mode, their links, their database entry,
// their RUN programs (testing/record_handler) and their libudev announcement on group 2 (in a
// private network namespace); `control reload` takes a changed rule set and keeps the good rules
// of a broken file; udev.conf's exec_delay stops the daemon from starting with a clear message;
// a watched node's close after a write becomes a `change`, also for a restarted daemon.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udev/monitor.h"
#include "testing/daemon_fixture.h"
#include "testing/fake_sysfs.h"
#include "testing/handler_recorder.h"
#include "testing/udev_monitor_listener.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug::udevrules {
namespace {

using ::testing::HasSubstr;
using testing::FakeSysfs;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Readlink(const std::string& path) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

class UdevRulesDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::EnterPrivateNetworkNamespace().ok());
    absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
    ASSERT_TRUE(sys.ok());
    sys_.emplace(std::move(*sys));
    absl::StatusOr<std::string> dir = testing::MakeTempDir("udevrules_daemon");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
    for (const char* d : {"/dev", "/run", "/rules", "/etc"}) ASSERT_EQ(::mkdir((dir_ + d).c_str(), 0755), 0);
    std::ofstream(dir_ + "/etc/passwd") << "root:x:0:0::/root:/bin/sh\ngpsd:x:117:20::/:/bin/false\n";
    std::ofstream(dir_ + "/etc/group") << "root:x:0:\ndialout:x:20:\n";
    std::ofstream(dir_ + "/udev.conf") << "# board\nevent_timeout=20\nchildren_max=2\nudev_log=info\n";
    // The board's layer: a GNSS receiver by USB ids, its owner and link, a script.
    std::ofstream(dir_ + "/rules/10-board.rules")
        << "ACTION==\"remove\", GOTO=\"board_end\"\n"
        << "SUBSYSTEM==\"tty\", ATTRS{idVendor}==\"1546\", ATTRS{idProduct}==\"01a[0-9a-f]\", "
           "SYMLINK+=\"gps0\", OWNER=\"gpsd\", GROUP=\"dialout\", MODE=\"0660\", ENV{ID_BOARD_ROLE}=\"gnss\"\n"
        << "SUBSYSTEM==\"tty\", ENV{ID_BOARD_ROLE}==\"gnss\", TAG+=\"systemd\", ENV{SYSTEMD_WANTS}=\"gpsd.service\"\n"
        << "LABEL=\"board_end\"\n";
    std::ofstream(dir_ + "/rules/90-late.rules")
        << "SUBSYSTEM==\"tty\", ENV{ID_BOARD_ROLE}==\"gnss\", RUN+=\"" << recorder_.handler() << " gnss\"\n";
    const std::string usb = "/devices/pci0000:00/0000:00:05.0/usb1/1-5";
    ASSERT_TRUE(sys_->AddDevice({.devpath = usb, .subsystem = "usb", .kind = FakeSysfs::Kind::kBus,
                                 .attributes = {{"idVendor", "1546\n"}, {"idProduct", "01a8\n"}}}).ok());
    ASSERT_TRUE(sys_->AddDevice({.devpath = usb + "/1-5:1.0", .subsystem = "usb", .kind = FakeSysfs::Kind::kBus}).ok());
    ASSERT_TRUE(sys_->AddDevice({.devpath = kAcm, .subsystem = "tty",
                                 .uevent = {{"MAJOR", "166"}, {"MINOR", "0"}, {"DEVNAME", "ttyACM0"}}}).ok());
    ASSERT_EQ(::mknod((dir_ + "/dev/ttyACM0").c_str(), S_IFCHR | 0600, makedev(166, 0)), 0);
  }

  absl::StatusOr<testing::DaemonProcess> StartDaemon(const std::string& conf) {
    return testing::DaemonProcess::Start(
        {.args = {"--udev-compat", "--udev-rules-dir", dir_ + "/rules", "--udev-conf", conf, "--udev-run",
                  dir_ + "/run", "--dev-root", dir_ + "/dev", "--users-root", dir_, "--sysfs-root", sys_->root(),
                  "--seqnum-file", ""}});
  }

  absl::Status Send(const testing::DaemonProcess& daemon, const std::string& action, int seqnum) {
    absl::StatusOr<testing::CommandResult> sent = testing::RunHotring(
        {"send", "--socket", daemon.socket(), "--wait=20", "--env", "ACTION=" + action, "--env",
         absl::StrCat("DEVPATH=", kAcm), "--env", "SUBSYSTEM=tty", "--env", absl::StrCat("SEQNUM=", seqnum),
         "--env", "MAJOR=166", "--env", "MINOR=0", "--env", "DEVNAME=ttyACM0"});
    if (!sent.ok()) return sent.status();
    if (sent->exit_code != 0) return absl::InternalError(sent->err + daemon.Log());
    return absl::OkStatus();
  }

  static constexpr char kAcm[] = "/devices/pci0000:00/0000:00:05.0/usb1/1-5/1-5:1.0/tty/ttyACM0";
  testing::HandlerRecorder recorder_;
  std::optional<FakeSysfs> sys_;
  std::string dir_;
};

TEST_F(UdevRulesDaemonTest, BoardRulesGiveNodeLinksDatabaseRunAndAnnouncement) {
  absl::StatusOr<testing::UdevMonitorListener> listener = testing::UdevMonitorListener::Open();
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<testing::DaemonProcess> daemon = StartDaemon(dir_ + "/udev.conf");
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  {
    const absl::Status sent = Send(*daemon, "add", 5);
    ASSERT_TRUE(sent.ok()) << sent;
  }

  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/dev/ttyACM0").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 117u);
  EXPECT_EQ(st.st_gid, 20u);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(Readlink(dir_ + "/dev/gps0"), "ttyACM0");
  const std::string db = ReadFile(dir_ + "/run/data/c166:0");
  EXPECT_THAT(db, HasSubstr("S:gps0\n"));
  EXPECT_THAT(db, HasSubstr("E:ID_BOARD_ROLE=gnss\nE:SYSTEMD_WANTS=gpsd.service\nG:systemd\nQ:systemd\nV:1\n"));
  const std::vector<testing::HandlerRun> runs = recorder_.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].subsystem, "gnss");
  EXPECT_EQ(runs[0].seqnum, "5");
  EXPECT_THAT(runs[0].env_keys, HasSubstr("ID_BOARD_ROLE"));

  const std::vector<std::string> got = listener->Receive();
  ASSERT_FALSE(got.empty()) << "no announcement on group 2";
  auto props = udev::DecodeMonitorMessage(got[0]);
  ASSERT_TRUE(props.ok()) << props.status();
  EXPECT_THAT(*props, ::testing::Contains(std::make_pair(std::string("DEVLINKS"), std::string("/dev/gps0"))));
  EXPECT_THAT(*props, ::testing::Contains(std::make_pair(std::string("TAGS"), std::string(":systemd:"))));

  // A new rule set, one line of it broken: the good lines load, the broken one is named.
  std::ofstream(dir_ + "/rules/20-more.rules", std::ios::trunc)
      << "SUBSYSTEM==\"tty\", KERNEL==\"ttyACM0\", SYMLINK+=\"gnss-uart\"\n"
      << "SUBSYSTEM==\"tty\", NOSUCHKEY==\"1\"\n";
  absl::StatusOr<testing::CommandResult> reload =
      testing::RunHotring({"control", "reload", "--socket", daemon->socket()});
  ASSERT_TRUE(reload.ok());
  {
    const absl::Status sent = Send(*daemon, "change", 6);
    ASSERT_TRUE(sent.ok()) << sent;
  }
  EXPECT_EQ(Readlink(dir_ + "/dev/gnss-uart"), "ttyACM0");
  EXPECT_EQ(Readlink(dir_ + "/dev/gps0"), "ttyACM0");
  EXPECT_THAT(daemon->Log(), HasSubstr("20-more.rules:2: Invalid key 'NOSUCHKEY'"));

  {
    const absl::Status sent = Send(*daemon, "remove", 7);
    ASSERT_TRUE(sent.ok()) << sent;
  }
  EXPECT_EQ(Readlink(dir_ + "/dev/gps0"), "");
  EXPECT_EQ(ReadFile(dir_ + "/run/data/c166:0"), "");
  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon->Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->at("udevrules_events"), 3u);
  // The late rule runs on remove too: the device's properties come from its database entry then.
  EXPECT_EQ(status->at("udevrules_run_programs"), 3u);
  ASSERT_EQ(recorder_.Runs().size(), 3u);
  EXPECT_EQ(recorder_.Runs()[2].action, "remove");
  EXPECT_EQ(status->at("udevrules_monitor_sent"), 3u);
  EXPECT_EQ(status->at("udevrules_reloads"), 1u);
  EXPECT_EQ(status->count("udevcompat_events"), 0u) << "the fallback does not run";
  ASSERT_TRUE(daemon->Stop().ok());
}

TEST_F(UdevRulesDaemonTest, WhatIsKeptOfSysfsBetweenEventsGoesWhenTheDaemonIsIdle) {
  absl::StatusOr<testing::DaemonProcess> daemon = StartDaemon("");
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  {
    const absl::Status sent = Send(*daemon, "change", 5);  // ATTRS{} walks the parents
    ASSERT_TRUE(sent.ok()) << sent;
  }
  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon->Status();
  ASSERT_TRUE(status.ok());
  EXPECT_GT(status->at("udevrules_sysfs_shapes_kept"), 0u);
  // Two seconds without an event make the daemon idle; status requests do not count.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  uint64_t kept = status->at("udevrules_sysfs_shapes_kept");
  while (kept > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(250));
    status = daemon->Status();
    ASSERT_TRUE(status.ok());
    kept = status->at("udevrules_sysfs_shapes_kept");
  }
  EXPECT_EQ(kept, 0u);
  // And the next event finds its parents again.
  {
    const absl::Status sent = Send(*daemon, "change", 6);
    ASSERT_TRUE(sent.ok()) << sent;
  }
  EXPECT_EQ(Readlink(dir_ + "/dev/gps0"), "ttyACM0");
  ASSERT_TRUE(daemon->Stop().ok());
}

TEST_F(UdevRulesDaemonTest, ExecDelayIsRefusedAtStart) {
  std::ofstream(dir_ + "/bad.conf") << "exec_delay=5\n";
  absl::StatusOr<testing::DaemonProcess> daemon = StartDaemon(dir_ + "/bad.conf");
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.status().message(), HasSubstr("bad.conf:1"));
  EXPECT_THAT(daemon.status().message(), HasSubstr("exec_delay"));
}

// OPTIONS+="watch" in the real daemon: a writer's close of the watched node makes the daemon
// write `change` into the device's uevent file; a restarted daemon watches it again from the
// records the first one left.
TEST_F(UdevRulesDaemonTest, AWatchedNodeClosedAfterAWriteGetsAChangeAlsoAfterARestart) {
  // Major 1, minor 3 is the null device: a node the test can open for writing.
  const std::string devpath = "/devices/virtual/mem/watchme";
  ASSERT_TRUE(sys_->AddDevice({.devpath = devpath, .subsystem = "mem",
                               .uevent = {{"MAJOR", "1"}, {"MINOR", "3"}, {"DEVNAME", "watchme"}}}).ok());
  ASSERT_TRUE(sys_->WriteFile("/dev/char/.keep", "").ok());
  ASSERT_EQ(::symlink(absl::StrCat("../..", devpath).c_str(), sys_->Path("/dev/char/1:3").c_str()), 0);
  ASSERT_EQ(::mknod((dir_ + "/dev/watchme").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  std::ofstream(dir_ + "/rules/60-watch.rules") << "KERNEL==\"watchme\", OPTIONS+=\"watch\"\n";
  const auto close_after_write = [&] {
    std::ofstream(dir_ + "/dev/watchme") << "x";
  };
  const auto changed = [&] {
    for (int i = 0; i < 1000; ++i) {
      if (absl::StartsWith(sys_->ReadUevent(devpath).value_or(""), "change")) return true;
      ::usleep(10 * 1000);
    }
    return false;
  };
  {
    absl::StatusOr<testing::DaemonProcess> daemon = StartDaemon("");
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    absl::StatusOr<testing::CommandResult> sent = testing::RunHotring(
        {"send", "--socket", daemon->socket(), "--wait=20", "--env", "ACTION=add", "--env",
         absl::StrCat("DEVPATH=", devpath), "--env", "SUBSYSTEM=mem", "--env", "SEQNUM=1", "--env", "MAJOR=1",
         "--env", "MINOR=3", "--env", "DEVNAME=watchme"});
    ASSERT_TRUE(sent.ok());
    ASSERT_EQ(sent->exit_code, 0) << sent->err << daemon->Log();
    EXPECT_FALSE(Readlink(dir_ + "/run/watch/c1:3").empty());
    close_after_write();
    EXPECT_TRUE(changed()) << daemon->Log();
    absl::StatusOr<std::map<std::string, uint64_t>> status = daemon->Status();
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(status->at("udevrules_watch_closes"), 1u);
    EXPECT_EQ(status->at("udevrules_watch_changes"), 1u);
    ASSERT_TRUE(daemon->Stop().ok());
  }
  // The records stay; the next daemon watches the node again before any event of it.
  ASSERT_TRUE(sys_->WriteFile(absl::StrCat(devpath, "/uevent"), "MAJOR=1\nMINOR=3\nDEVNAME=watchme\n").ok());
  absl::StatusOr<testing::DaemonProcess> again = StartDaemon("");
  ASSERT_TRUE(again.ok()) << again.status();
  const std::string number = Readlink(dir_ + "/run/watch/c1:3");
  ASSERT_FALSE(number.empty());
  EXPECT_EQ(Readlink(dir_ + "/run/watch/" + number), "c1:3");
  close_after_write();
  EXPECT_TRUE(changed()) << again->Log();
  ASSERT_TRUE(again->Stop().ok());
}

}  // namespace
}  // namespace hotring::hotplug::udevrules

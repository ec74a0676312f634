// `hotring daemon --udev-compat` end to end: an event sent to the real binary gets its database
// entry, its by-* links and its libudev announcement on group 2 (in a private network namespace).
#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udev/monitor.h"
#include "testing/daemon_fixture.h"
#include "testing/fake_sysfs.h"
#include "testing/udev_monitor_listener.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug::udevcompat {
namespace {

using ::testing::HasSubstr;
using testing::FakeSysfs;

TEST(UdevCompatDaemonTest, SentEventGetsDatabaseLinksAndAnnouncement) {
  ASSERT_TRUE(testing::EnterPrivateNetworkNamespace().ok());
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/platform/i8042", .subsystem = "platform",
                              .kind = FakeSysfs::Kind::kBus}).ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = "/devices/platform/i8042/serio1", .subsystem = "serio",
                              .kind = FakeSysfs::Kind::kBus}).ok());
  const std::string input = "/devices/platform/i8042/serio1/input/input3";
  ASSERT_TRUE(sys->AddDevice({.devpath = input, .subsystem = "input"}).ok());
  // Bitmaps as a kernel of this build's word size prints them (recorded on x86-64).
  ASSERT_TRUE(sys->WriteFile(input + "/capabilities/ev", testing::KernelBitmap("7") + "\n").ok());
  ASSERT_TRUE(sys->WriteFile(input + "/capabilities/key",
                             testing::KernelBitmap("1f0000 0 0 0 0") + "\n").ok());
  ASSERT_TRUE(sys->WriteFile(input + "/capabilities/rel", testing::KernelBitmap("143") + "\n").ok());
  ASSERT_TRUE(sys->AddDevice({.devpath = input + "/event3", .subsystem = "input",
                              .uevent = {{"MAJOR", "13"}, {"MINOR", "67"}, {"DEVNAME", "input/event3"}}}).ok());
  absl::StatusOr<std::string> dir = testing::MakeTempDir("udevcompat_daemon");
  ASSERT_TRUE(dir.ok());
  const std::string dev = *dir + "/dev";
  const std::string run = *dir + "/run";
  ASSERT_EQ(::mkdir(dev.c_str(), 0755), 0);
  { std::ofstream(*dir + "/mdev.conf") << ""; }

  absl::StatusOr<testing::UdevMonitorListener> listener = testing::UdevMonitorListener::Open();
  ASSERT_TRUE(listener.ok()) << listener.status();

  absl::StatusOr<testing::DaemonProcess> daemon = testing::DaemonProcess::Start(
      {.args = {"--udev-compat", "--udev-fallback", "--udev-run", run, "--dev-root", dev, "--config", *dir + "/mdev.conf",
                "--sysfs-root", sys->root(), "--seqnum-file", ""}});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  absl::StatusOr<testing::CommandResult> sent = testing::RunHotring(
      {"send", "--socket", daemon->socket(), "--wait=10", "--env", "ACTION=add", "--env",
       "DEVPATH=" + input + "/event3", "--env", "SUBSYSTEM=input", "--env", "SEQNUM=5", "--env",
       "MAJOR=13", "--env", "MINOR=67", "--env", "DEVNAME=input/event3"});
  ASSERT_TRUE(sent.ok());
  ASSERT_EQ(sent->exit_code, 0) << sent->err << daemon->Log();

  std::ifstream in(run + "/data/c13:67");
  std::stringstream db;
  db << in.rdbuf();
  EXPECT_THAT(db.str(), HasSubstr("E:ID_INPUT_MOUSE=1\n"));
  EXPECT_THAT(db.str(), HasSubstr("E:ID_BUS=i8042\n"));
  EXPECT_THAT(db.str(), HasSubstr("E:ID_PATH=platform-i8042-serio-1\n"));
  EXPECT_THAT(db.str(), HasSubstr("S:input/by-path/platform-i8042-serio-1-event-mouse\n"));
  char target[PATH_MAX];
  const ssize_t n = ::readlink((dev + "/input/by-path/platform-i8042-serio-1-event-mouse").c_str(), target,
                               sizeof(target));
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(target, static_cast<size_t>(n)), "../../input/event3");

  const std::vector<std::string> got = listener->Receive();
  ASSERT_FALSE(got.empty()) << "no announcement on group 2";
  auto props = udev::DecodeMonitorMessage(got[0]);
  ASSERT_TRUE(props.ok()) << props.status();
  EXPECT_THAT(*props, ::testing::Contains(std::make_pair(std::string("ID_INPUT_MOUSE"), std::string("1"))));

  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon->Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->at("udevcompat_db_written"), 1u);
  EXPECT_EQ(status->at("udevcompat_monitor_sent"), 1u);
  // by-path only: an i8042 device has no USB interface for a by-id link.
  EXPECT_EQ(status->at("udevcompat_links_made"), 1u);
  ASSERT_TRUE(daemon->Stop().ok());
}

TEST(UdevCompatDaemonTest, RebroadcastOnGroupTwoConflicts) {
  absl::StatusOr<testing::CommandResult> r =
      testing::RunHotring({"daemon", "--udev-compat", "--rebroadcast", "2", "--no-netlink"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("group 2"));
}

}  // namespace
}  // namespace hotring::hotplug::udevcompat

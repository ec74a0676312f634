// End to end: Debian's own udevadm 252 (and libudev's udev_queue) against `hotring daemon
// --udev-control`, in private network and mount namespaces (tmpfs over /run: udevadm's fixed
// /run/udev/control and /run/udev/queue are the test daemon's). Events are injected as kernel
// uevents (--netlink-trust-userspace), so udevadm settle's ping races them as it races a
// trigger's. Host device events reach the namespace too: assertions look at kPrefix only.
// A handler that waits for a gate file (WAIT_FOR) keeps an event running for as long as a test
// needs, so nothing depends on timing.
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udev/control_message.h"
#include "io/socket.h"
#include "testing/daemon_assertions.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"
#include "testing/udev_namespace.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::CommandResult;
using ::hotring::testing::Counters;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::HandlerRecorder;
using ::hotring::testing::HandlerRun;
using ::hotring::testing::PathExists;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kBase = 2'000'000'000'000ULL;  // far above any host SEQNUM
constexpr char kPrefix[] = "/devices/virtual/hotring_udev_test";
constexpr char kControl[] = "/run/udev/control";
constexpr char kQueue[] = "/run/udev/queue";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class UdevControlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { entered_ = new absl::Status(testing::EnterUdevTestNamespaces()); }

  void SetUp() override {
    if (absl::IsUnavailable(*entered_)) GTEST_SKIP() << entered_->message();
    ASSERT_TRUE(entered_->ok()) << *entered_;
    // Each test starts with an empty /run/udev: no socket or queue file of the test before.
    ASSERT_EQ(::mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"), 0) << "mount(/run)";
    ASSERT_EQ(::mkdir("/run/udev", 0755), 0);
    std::optional<std::string> udevadm = testing::DebianUdevadm();
    if (!udevadm.has_value()) {
      GTEST_SKIP() << "Debian's udevadm is not installed (/usr/bin/udevadm; apt-get install udev)";
    }
    udevadm_ = *udevadm;
  }

  DaemonProcess Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--udev-control", "--netlink-trust-userspace",
                                     "--expect-seqnum", absl::StrCat(kBase),
                                     "--exec",         recorder_.handler()};
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<DaemonProcess> daemon =
        DaemonProcess::Start({.args = std::move(args), .netlink = true});
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return std::move(*daemon);
  }

  CommandResult Udevadm(std::vector<std::string> args) {
    args.insert(args.begin(), udevadm_);
    absl::StatusOr<CommandResult> result = testing::RunCommand(args);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CommandResult{};
  }

  // `sh -c SCRIPT`, for what must happen right after a udevadm command returns.
  CommandResult Shell(const std::string& script) {
    absl::StatusOr<CommandResult> result = testing::RunCommand({"/bin/sh", "-c", script});
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CommandResult{};
  }

  // Injects event kBase + n on DEVICE as the kernel would send it.
  void Inject(uint64_t n, const std::string& device,
              const std::vector<std::pair<std::string, std::string>>& extra = {}) {
    absl::StatusOr<testing::UeventInjector> injector = testing::UeventInjector::Create(1);
    ASSERT_TRUE(injector.ok()) << injector.status();
    absl::StatusOr<Event> event = testing::MakeUevent(
        "add", absl::StrCat(kPrefix, "/", device), "hotring_test", kBase + n, extra);
    ASSERT_TRUE(event.ok()) << event.status();
    ASSERT_TRUE(injector->Send(*event).ok());
  }

  // A gate a WAIT_FOR handler waits for; Open() lets it go on.
  std::string Gate(const std::string& name) { return recorder_.dir() + "/" + name; }
  void Open(const std::string& gate) { std::ofstream(gate) << "go\n"; }
  // Waits until a WAIT_FOR handler waits at `gate` (it runs).
  void AwaitWaiting(const std::string& gate) {
    ASSERT_TRUE(testing::WaitUntil([&] { return PathExists(gate + ".waiting"); }))
        << "the handler never started";
  }
  // Waits until `control status` says `key` is `value`.
  void AwaitCounter(const DaemonProcess& daemon, const std::string& key, uint64_t value) {
    uint64_t seen = 0;
    const bool reached = testing::WaitUntil([&] {
      seen = Counters(daemon)[key];
      return seen == value;
    });
    ASSERT_TRUE(reached) << key << " stayed " << seen << ", want " << value << "\n"
                         << daemon.Log();
  }

  std::vector<HandlerRun> Runs() const { return recorder_.RunsUnder(kPrefix); }
  std::string Seq(uint64_t n) const { return absl::StrCat(kBase + n); }

  static absl::Status* entered_;
  std::string udevadm_;
  HandlerRecorder recorder_;
};

absl::Status* UdevControlTest::entered_ = nullptr;

TEST_F(UdevControlTest, SettleWaitsForAUeventQueuedJustBeforeIt) {
  DaemonProcess daemon = Start();
  // Each event is injected right before settle starts: its ping must find it read (so the queue
  // file exists) before settle looks, and settle may return only once its handler has ended.
  // What record.log holds at that moment is copied by the same shell.
  for (int i = 0; i < 3; ++i) {
    Inject(i, absl::StrCat("race", i), {{"SLEEP_MS", "200"}});
    const std::string snapshot = recorder_.dir() + absl::StrCat("/snapshot", i);
    const CommandResult settle = Shell(absl::StrCat(udevadm_, " settle --timeout=60; echo $? > ",
                                                    snapshot, ".rc; cp ", recorder_.dir(),
                                                    "/record.log ", snapshot));
    EXPECT_EQ(ReadAll(snapshot + ".rc"), "0\n") << settle.err;
    EXPECT_THAT(ReadAll(snapshot), HasSubstr(absl::StrCat(Seq(i), " ", kPrefix, "/race", i)))
        << "settle returned before the event's handler ended\n"
        << daemon.Log();
  }
  EXPECT_FALSE(PathExists(kQueue));
  EXPECT_GE(Counters(daemon)["udev_control_connections"], 3u);
}

// At --max-pending the daemon leaves uevents in the socket; a ping must still wait until they
// are read, or settle would see the queue file go when the running event ends and return
// before the unread one even started.
TEST_F(UdevControlTest, PingWaitsForUeventsNotReadYet) {
  DaemonProcess daemon = Start({"--max-pending", "1"});
  const std::string gate = Gate("first");
  Inject(0, "first", {{"WAIT_FOR", gate}});
  AwaitWaiting(gate);
  Inject(1, "unread");  // stays in the socket while the first runs
  const std::string snapshot = recorder_.dir() + "/snapshot";
  absl::StatusOr<testing::BackgroundCommand> settle = testing::BackgroundCommand::Start(
      {"/bin/sh", "-c",
       absl::StrCat(udevadm_, " settle --timeout=60 && cp ", recorder_.dir(), "/record.log ",
                    snapshot)});
  ASSERT_TRUE(settle.ok()) << settle.status();
  AwaitCounter(daemon, "udev_control_connections", 1);
  Open(gate);
  const absl::StatusOr<CommandResult> settled = settle->Wait(absl::Seconds(90));
  ASSERT_TRUE(settled.ok()) << settled.status();
  EXPECT_EQ(settled->exit_code, 0) << settled->err;
  EXPECT_THAT(ReadAll(snapshot), HasSubstr(absl::StrCat(Seq(1), " ", kPrefix, "/unread")))
      << "settle returned before the unread uevent was handled\n"
      << daemon.Log();
}

TEST_F(UdevControlTest, SettleAnswersAtOnceWhenIdle) {
  DaemonProcess daemon = Start();
  const CommandResult settle = Udevadm({"settle", "--timeout=60"});
  EXPECT_EQ(settle.exit_code, 0) << settle.err;
  EXPECT_FALSE(PathExists(kQueue));
  // It asked us (a settle without a daemon returns at once too, having asked nobody).
  const auto counters = Counters(daemon);
  EXPECT_EQ(counters.at("udev_control_connections"), 1u);
  EXPECT_EQ(counters.at("udev_control_messages"), 1u);  // the ping
  EXPECT_EQ(counters.at("udev_control_refused"), 0u);
}

TEST_F(UdevControlTest, QueueFileAndLibudevFollowPendingEvents) {
  DaemonProcess daemon = Start();
  const auto libudev = [this] {
    absl::StatusOr<CommandResult> r =
        testing::RunCommand({"hotplug/daemon/libudev_queue_client"});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->out : std::string();
  };
  EXPECT_EQ(libudev(), "active=1 empty=1\n");
  const std::string gate = Gate("slow");
  Inject(0, "slow", {{"WAIT_FOR", gate}});
  AwaitWaiting(gate);
  EXPECT_TRUE(PathExists(kQueue));
  EXPECT_EQ(libudev(), "active=1 empty=0\n");
  Open(gate);
  const CommandResult settle = Udevadm({"settle", "--timeout=60"});
  EXPECT_EQ(settle.exit_code, 0) << settle.err;
  ASSERT_EQ(Runs().size(), 1u);
  EXPECT_FALSE(PathExists(kQueue));
  EXPECT_EQ(libudev(), "active=1 empty=1\n");
}

TEST_F(UdevControlTest, ExitHangsUpAtOnceAndStopsOnceRunningEventsEnd) {
  DaemonProcess daemon = Start({"--children-max", "1"});
  const std::string gate = Gate("exit");
  Inject(0, "parent", {{"WAIT_FOR", gate}});
  Inject(1, "parent/child");  // waits for its parent: queued
  Inject(2, "other");         // waits for the one slot: queued
  AwaitWaiting(gate);
  AwaitCounter(daemon, "queued", 2);

  const CommandResult exit = Udevadm({"control", "--exit"});
  EXPECT_EQ(exit.exit_code, 0) << exit.err;
  // udevadm is back while the first event still runs (its handler waits for the gate).
  const absl::StatusOr<int> early = daemon.WaitExit(absl::ZeroDuration());
  EXPECT_EQ(early.status().code(), absl::StatusCode::kDeadlineExceeded);
  // Nobody listens any more, as after udevd's exit.
  EXPECT_NE(Udevadm({"control", "--ping"}).exit_code, 0);
  EXPECT_TRUE(PathExists(kQueue));

  Open(gate);
  const absl::StatusOr<int> code = daemon.WaitExit(absl::Seconds(60));
  ASSERT_TRUE(code.ok()) << code.status() << "\n" << daemon.Log();
  EXPECT_EQ(*code, 0) << daemon.Log();
  const std::vector<HandlerRun> runs = Runs();
  ASSERT_EQ(runs.size(), 1u) << "queued events must be discarded, as udevd does";
  EXPECT_EQ(runs[0].seqnum, Seq(0));
  EXPECT_NE(runs[0].end, -1);
  EXPECT_THAT(daemon.Log(), HasSubstr("2 held or queued events discarded"));
  EXPECT_FALSE(PathExists(kQueue));
  EXPECT_TRUE(PathExists(kControl)) << "udevd leaves its socket behind; so do we";
}

TEST_F(UdevControlTest, ReloadReadsAChangedRulesFile) {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("udev_reload");
  ASSERT_TRUE(dir.ok());
  const std::string conf = *dir + "/mdev.conf";
  std::ofstream(conf) << "hrt[0-9] 0:0 600 =first/\n";
  ASSERT_EQ(::mkdir((*dir + "/dev").c_str(), 0755), 0);
  DaemonProcess daemon = Start({"--config", conf, "--dev-root", *dir + "/dev",
                                "--dev-root-placeholders", "--no-modules"});
  const auto node = [](int n) -> std::vector<std::pair<std::string, std::string>> {
    return {{"DEVNAME", absl::StrCat("hrt", n)}, {"MAJOR", "250"}, {"MINOR", absl::StrCat(n)}};
  };
  Inject(0, "hrt0", node(0));
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  EXPECT_TRUE(PathExists(*dir + "/dev/first/hrt0")) << daemon.Log();

  std::ofstream(conf) << "hrt[0-9] 0:0 600 =second/\n";
  const CommandResult reload = Udevadm({"control", "--reload"});
  EXPECT_EQ(reload.exit_code, 0) << reload.err;
  Inject(1, "hrt1", node(1));
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  EXPECT_TRUE(PathExists(*dir + "/dev/second/hrt1")) << daemon.Log();
  EXPECT_FALSE(PathExists(*dir + "/dev/first/hrt1"));
  EXPECT_THAT(daemon.Log(), HasSubstr("reload requested (udev control): ok"));
}

TEST_F(UdevControlTest, PingAnswersWhileTheDaemonServes) {
  absl::StatusOr<DaemonProcess> started = DaemonProcess::Start(
      {.args = {"--udev-control", "--netlink-trust-userspace"}, .netlink = true});
  ASSERT_TRUE(started.ok()) << started.status();
  DaemonProcess& daemon = *started;
  const CommandResult ping = Udevadm({"control", "--ping", "--timeout=60"});
  EXPECT_EQ(ping.exit_code, 0) << ping.err;
  EXPECT_EQ(Counters(daemon).at("udev_control_messages"), 1u);
  ASSERT_TRUE(daemon.Stop().ok()) << daemon.Log();
  // The socket file is left, nobody answers it: udevadm says so.
  const CommandResult after = Udevadm({"control", "--ping", "--timeout=5"});
  EXPECT_NE(after.exit_code, 0);
  EXPECT_THAT(after.err, HasSubstr("Connection refused"));
}

TEST_F(UdevControlTest, LogLevelChangesWhatTheDaemonLogs) {
  DaemonProcess daemon = Start();  // notice: handled events are not logged
  const auto handled_line = [this](uint64_t n) {
    return absl::StrCat("SEQNUM=", kBase + n, " ACTION=add DEVPATH=", kPrefix, "/log", n,
                        " SUBSYSTEM=hotring_test: handled in");
  };
  Inject(0, "log0");
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  ASSERT_EQ(Udevadm({"control", "--log-level=debug"}).exit_code, 0);
  Inject(1, "log1");
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  ASSERT_EQ(Udevadm({"control", "--log-level=err"}).exit_code, 0);
  Inject(2, "log2");
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  const std::string log = daemon.Log();
  EXPECT_THAT(log, Not(HasSubstr(handled_line(0))));
  EXPECT_THAT(log, HasSubstr(handled_line(1)));
  EXPECT_THAT(log, HasSubstr("hotring: debug: "));
  EXPECT_THAT(log, Not(HasSubstr(handled_line(2))));
  EXPECT_EQ(Runs().size(), 3u);
}

TEST_F(UdevControlTest, StopExecQueueHoldsEventsAndStartRunsThemInOrder) {
  DaemonProcess daemon = Start({"--children-max", "1"});
  ASSERT_EQ(Udevadm({"control", "--stop-exec-queue"}).exit_code, 0);
  for (int i = 0; i < 3; ++i) Inject(i, absl::StrCat("held", i));
  AwaitCounter(daemon, "queued", 3);
  EXPECT_TRUE(Runs().empty());
  EXPECT_TRUE(PathExists(kQueue));
  EXPECT_EQ(Counters(daemon).at("exec_queue_stopped"), 1u);
  // settle does not pretend: the events are queued until its timeout.
  EXPECT_NE(Udevadm({"settle", "--timeout=1"}).exit_code, 0);
  EXPECT_TRUE(Runs().empty());

  ASSERT_EQ(Udevadm({"control", "--start-exec-queue"}).exit_code, 0);
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  EXPECT_EQ(testing::Seqnums(Runs()), (std::vector<std::string>{Seq(0), Seq(1), Seq(2)}));
  EXPECT_FALSE(PathExists(kQueue));
}

TEST_F(UdevControlTest, ChildrenMaxChangesConcurrency) {
  DaemonProcess daemon = Start({"--children-max", "8"});
  ASSERT_EQ(Udevadm({"control", "--children-max=1"}).exit_code, 0);
  EXPECT_EQ(Counters(daemon).at("children_max"), 1u);
  for (int i = 0; i < 4; ++i) Inject(i, absl::StrCat("one", i), {{"SLEEP_MS", "50"}});
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  std::vector<HandlerRun> runs = Runs();
  ASSERT_EQ(runs.size(), 4u);
  std::sort(runs.begin(), runs.end(),
            [](const HandlerRun& a, const HandlerRun& b) { return a.start < b.start; });
  for (size_t i = 1; i < runs.size(); ++i) {
    EXPECT_GE(runs[i].start, runs[i - 1].end) << "two handlers ran at once with children_max 1";
  }
  // 0 is ignored, as by udevd.
  ASSERT_EQ(Udevadm({"control", "-m", "0"}).exit_code, 0);
  EXPECT_EQ(Counters(daemon).at("children_max"), 1u);
  ASSERT_EQ(Udevadm({"control", "-m", "3"}).exit_code, 0);
  EXPECT_EQ(Counters(daemon).at("children_max"), 3u);
}

TEST_F(UdevControlTest, PropertiesReachHandlersStartedAfterThem) {
  DaemonProcess daemon = Start();
  ASSERT_EQ(Udevadm({"control", "-p", "HOTRING_GLOBAL_A=1", "--property=HOTRING_GLOBAL_B=two"})
                .exit_code,
            0);
  EXPECT_EQ(Counters(daemon).at("global_properties"), 2u);
  Inject(0, "env0");
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  ASSERT_EQ(Udevadm({"control", "--property=HOTRING_GLOBAL_A="}).exit_code, 0);
  Inject(1, "env1");
  ASSERT_EQ(Udevadm({"settle", "--timeout=60"}).exit_code, 0);
  const std::vector<HandlerRun> runs = Runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].seqnum, Seq(0));
  EXPECT_THAT(runs[0].env_keys, HasSubstr("HOTRING_GLOBAL_A,HOTRING_GLOBAL_B"));
  EXPECT_EQ(runs[1].seqnum, Seq(1));
  EXPECT_THAT(runs[1].env_keys, Not(HasSubstr("HOTRING_GLOBAL_A"))) << daemon.Log();
  EXPECT_THAT(runs[1].env_keys, HasSubstr("HOTRING_GLOBAL_B"));
  // udevadm itself refuses a property without '='.
  EXPECT_NE(Udevadm({"control", "-p", "NOEQUALS"}).exit_code, 0);
}

// A client of another uid (the socket opened to everyone for the test: udevd's own 0755 keeps
// them out before they connect) is hung up on, its request not carried out.
TEST_F(UdevControlTest, OnlyRootIsHeard) {
  DaemonProcess daemon = Start();
  ASSERT_EQ(::chmod(kControl, 0777), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(2);
    absl::StatusOr<UniqueFd> fd = io::ConnectUnix(SOCK_SEQPACKET, kControl);
    if (!fd.ok()) _exit(3);
    for (const udev::ControlType type :
         {udev::ControlType::kReload, udev::ControlType::kEndMessages}) {
      const std::string packet = udev::EncodeControlMessage(type);
      if (::send(fd->get(), packet.data(), packet.size(), MSG_NOSIGNAL) < 0) _exit(0);  // gone
    }
    pollfd p{fd->get(), POLLIN, 0};
    char byte;
    if (::poll(&p, 1, 30000) != 1 || ::recv(fd->get(), &byte, 1, 0) > 0) _exit(4);
    _exit(0);  // hung up on
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  AwaitCounter(daemon, "udev_control_refused", 1);
  EXPECT_THAT(daemon.Log(), HasSubstr("refused (root only)"));
  EXPECT_THAT(daemon.Log(), Not(HasSubstr("reload requested")));
  // Root is still heard afterwards.
  EXPECT_EQ(Udevadm({"control", "--reload"}).exit_code, 0);
  EXPECT_THAT(daemon.Log(), HasSubstr("reload requested (udev control)"));
}

TEST_F(UdevControlTest, ASecondServerOnALiveSocketIsRefused) {
  DaemonProcess first = Start();
  absl::StatusOr<DaemonProcess> second = DaemonProcess::Start(
      {.args = {"--udev-control", "--netlink-trust-userspace"}, .netlink = true});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("already in use"));
  EXPECT_EQ(Udevadm({"control", "--ping"}).exit_code, 0);
}

}  // namespace
}  // namespace hotring::hotplug

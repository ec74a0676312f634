// End-to-end tests of `hotring daemon` with the real binary: events sent over the control
// socket, a recording handler (testing/record_handler.cc) that logs what ran when, and
// assertions on what actually happened.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "core/unique_fd.h"
#include "hotplug/event_parser.h"
#include "hotplug/wire.h"
#include "io/socket.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::BackgroundCommand;
using ::hotring::testing::HandlerRun;
using ::hotring::testing::TestEvent;
using Recorder = ::hotring::testing::HandlerRecorder;
using RawSender = ::hotring::testing::ControlSender;
using ::hotring::testing::CommandResult;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::HotringBinary;
using ::hotring::testing::MakeTempDir;
using ::hotring::testing::RunHotring;
using ::hotring::testing::ScaledForEmulation;

DaemonProcess StartDaemon(std::vector<std::string> args) {
  absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start({.args = std::move(args)});
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return std::move(*daemon);
}

// Every SEQNUM ran exactly once; on each DEVPATH, runs did not overlap and went in SEQNUM order.
void ExpectOrderedAndComplete(const std::vector<HandlerRun>& runs, uint64_t first, uint64_t count) {
  std::map<uint64_t, int> times;
  std::map<std::string, std::vector<std::pair<uint64_t, const HandlerRun*>>> by_devpath;
  for (const HandlerRun& r : runs) {
    uint64_t seqnum;
    ASSERT_TRUE(absl::SimpleAtoi(r.seqnum, &seqnum)) << r.seqnum;
    ++times[seqnum];
    by_devpath[r.devpath].emplace_back(seqnum, &r);
  }
  ASSERT_EQ(times.size(), count);
  for (uint64_t s = first; s < first + count; ++s) EXPECT_EQ(times[s], 1) << "SEQNUM " << s;
  for (auto& [devpath, list] : by_devpath) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.second->start < b.second->start;
    });
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_LT(list[i - 1].first, list[i].first) << devpath << ": ran out of SEQNUM order";
      EXPECT_LE(list[i - 1].second->end, list[i].second->start)
          << devpath << ": SEQNUM " << list[i - 1].first << " and " << list[i].first
          << " overlapped";
    }
  }
}

std::map<std::string, uint64_t> Status(const DaemonProcess& daemon) {
  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon.Status();
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : std::map<std::string, uint64_t>{};
}

// The seed's first run: SEQNUM 0..999 in order (twenty devices, so some must wait their turn).
TEST(DaemonTest, ThousandEventsInOrderRunOnceEachAndInOrderPerDevice) {
  Recorder recorder;
  DaemonProcess daemon =
      StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "0", "--children-max", "8"});
  RawSender sender(daemon.socket());
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(sender.SendEvent(
        TestEvent(i, absl::StrCat("/devices/test/dev", i % 20), {{"SLEEP_MS", "1"}})));
  }
  // A thousand handler processes: a few seconds on a quiet machine (30 s in the sanitizer
  // build), 123 s once on a loaded one, 189 s in an emulated guest. So the guard is against a
  // hang (nothing moving for a minute), not against a slow machine.
  const absl::Status settled = daemon.SettleWhileProgressing();
  ASSERT_TRUE(settled.ok()) << settled << "\n" << daemon.Log();
  ExpectOrderedAndComplete(recorder.Runs(), 0, 1000);
  auto status = Status(daemon);
  EXPECT_EQ(status["received"], 1000u);
  EXPECT_EQ(status["handled"], 1000u);
  EXPECT_EQ(status["missing_seqnums"], 0u);
  EXPECT_TRUE(daemon.Stop().ok()) << daemon.Log();
}

// The seed's second run: SEQNUM 1..1000 with 0 never sent. Everything waits for the timeout,
// then runs in order.
TEST(DaemonTest, MissingFirstSeqnumHoldsEverythingUntilTheTimeout) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon(
      {"--exec", recorder.handler(), "--expect-seqnum", "0", "--reorder-timeout", "1"});
  RawSender sender(daemon.socket());
  timespec t0;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  const int64_t sent_at = static_cast<int64_t>(t0.tv_sec) * 1000000000 + t0.tv_nsec;
  for (uint64_t i = 1; i <= 1000; ++i) {
    ASSERT_TRUE(sender.SendEvent(TestEvent(i, absl::StrCat("/devices/test/dev", i % 20))));
  }
  const absl::Status settled = daemon.SettleWhileProgressing();
  ASSERT_TRUE(settled.ok()) << settled << "\n" << daemon.Log();
  const std::vector<HandlerRun> runs = recorder.Runs();
  ExpectOrderedAndComplete(runs, 1, 1000);
  int64_t first_start = INT64_MAX;
  for (const HandlerRun& r : runs) first_start = std::min(first_start, r.start);
  EXPECT_GE(first_start - sent_at, 1'000'000'000) << "released before the 1 s timeout";
  auto status = Status(daemon);
  EXPECT_EQ(status["missing_seqnums"], 1u);
  EXPECT_GE(status["reorder_timeouts"], 1u);
  EXPECT_NE(daemon.Log().find("gave up waiting for SEQNUM 0"), std::string::npos) << daemon.Log();
}

// --reorder-timeout 0 waits for nothing: each gap is given up when the event after it arrives,
// every event runs once, in the order received, and the gaps are counted and logged.
TEST(DaemonTest, ZeroReorderTimeoutRunsEveryEventAsItComes) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon(
      {"--exec", recorder.handler(), "--expect-seqnum", "1", "--reorder-timeout", "0"});
  RawSender sender(daemon.socket());
  for (const uint64_t i : {3, 4, 7, 8, 5}) {
    ASSERT_TRUE(sender.SendEvent(TestEvent(i, "/devices/test/one")));
  }
  const absl::Status settled = daemon.SettleWhileProgressing();
  ASSERT_TRUE(settled.ok()) << settled << "\n" << daemon.Log();
  std::vector<std::string> order;
  for (const HandlerRun& r : recorder.Runs()) order.push_back(r.seqnum);
  // 5 came after its gap was given up: a straggler, run last, as it came.
  EXPECT_EQ(order, (std::vector<std::string>{"3", "4", "7", "8", "5"}));
  auto status = Status(daemon);
  EXPECT_EQ(status["handled"], 5u);
  EXPECT_EQ(status["reorder_timeouts"], 2u);
  EXPECT_EQ(status["missing_seqnums"], 4u);
  EXPECT_EQ(status["held"], 0u);
  EXPECT_NE(daemon.Log().find("reorder timeout: gave up waiting for SEQNUM 1-2"), std::string::npos)
      << daemon.Log();
}

// As udevd: an event waits for the earlier ones with its device number, its ifindex, or its
// DEVPATH_OLD as DEVPATH, though their DEVPATHs are unrelated to its own.
TEST(DaemonTest, EventsOfOneDeviceUnderTwoPathsRunOneAfterTheOther) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  const std::vector<hotplug::EnvVars> events = {
      TestEvent(1, "/devices/a/tty0", {{"MAJOR", "4"}, {"MINOR", "1"}, {"SLEEP_MS", "200"}}),
      TestEvent(2, "/devices/b/tty0", {{"MAJOR", "4"}, {"MINOR", "1"}}),
      TestEvent(3, "/devices/c/net/eth0", {{"IFINDEX", "5"}, {"SLEEP_MS", "200"}}),
      TestEvent(4, "/devices/d/net/wan0", {{"IFINDEX", "5"}}),
      TestEvent(5, "/devices/e/old", {{"SLEEP_MS", "200"}}),
      TestEvent(6, "/devices/f/new", {{"DEVPATH_OLD", "/devices/e/old"}}),
  };
  for (const hotplug::EnvVars& e : events) ASSERT_TRUE(sender.SendEvent(e));
  const absl::Status settled = daemon.SettleWhileProgressing();
  ASSERT_TRUE(settled.ok()) << settled << "\n" << daemon.Log();
  std::map<std::string, HandlerRun> by_seqnum;
  for (const HandlerRun& r : recorder.Runs()) by_seqnum[r.seqnum] = r;
  ASSERT_EQ(by_seqnum.size(), 6u);
  for (const auto& [first, second] : {std::pair<const char*, const char*>{"1", "2"}, {"3", "4"}, {"5", "6"}}) {
    EXPECT_LE(by_seqnum[first].end, by_seqnum[second].start)
        << "SEQNUM " << second << " started before SEQNUM " << first << " ended";
  }
}

// The timeouts are short to keep the test quick, and scaled in an emulated guest
// (testing::ScaledForEmulation). The one handler that does not hang must finish within the
// event timeout: 0.5 s was too short in an emulated guest and once in the sanitizer build
// beside a build, so it is 2 s.
TEST(DaemonTest, HangingHandlerIsTerminatedAndTheDaemonGoesOn) {
  Recorder recorder;
  const auto seconds = [](double s) {
    return absl::StrCat(absl::ToDoubleSeconds(ScaledForEmulation(absl::Seconds(s))));
  };
  DaemonProcess daemon =
      StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1", "--event-timeout",
                   seconds(2), "--kill-grace", seconds(0.3)});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/hang", {{"HANG", "1"}})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(2, "/devices/stubborn", {{"HANG", "stubborn"}})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(3, "/devices/fine")));
  ASSERT_TRUE(daemon.Settle(absl::Seconds(30)).ok()) << daemon.Log();
  auto status = Status(daemon);
  EXPECT_EQ(status["timed_out"], 2u);
  EXPECT_EQ(status["killed"], 1u);  // only the one that ignored SIGTERM
  EXPECT_EQ(status["handled"], 1u);
  const std::vector<HandlerRun> runs = recorder.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].devpath, "/devices/fine");
  EXPECT_TRUE(daemon.Stop().ok());
}

TEST(DaemonTest, CrashingHandlerCountsAsFailed) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/crash", {{"CRASH", "1"}})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(2, "/devices/exit3", {{"EXIT", "3"}})));
  ASSERT_TRUE(daemon.Settle().ok());
  auto status = Status(daemon);
  EXPECT_EQ(status["failed"], 2u);
  EXPECT_EQ(status["handled"], 0u);
  EXPECT_NE(daemon.Log().find("signal 6"), std::string::npos) << daemon.Log();
  EXPECT_NE(daemon.Log().find("exit 3"), std::string::npos) << daemon.Log();
}

TEST(DaemonTest, GrandchildHoldingStdoutDoesNotHoldTheEvent) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/gc", {{"GRANDCHILD", "1"}})));
  // The grandchild sleeps 30 s with the pipes open; the event must be done long before.
  EXPECT_TRUE(daemon.Settle(absl::Seconds(10)).ok()) << daemon.Log();
  EXPECT_EQ(Status(daemon)["handled"], 1u);
}

TEST(DaemonTest, FloodingHandlerDoesNotGrowTheDaemon) {
  Recorder recorder;
  // At info level, where the handler's stdout goes through a pipe (below it, to /dev/null).
  DaemonProcess daemon = StartDaemon(
      {"--exec", recorder.handler(), "--expect-seqnum", "1", "--log-level", "info"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/flood", {{"FLOOD", "100000000"}})));
  ASSERT_TRUE(daemon.Settle(absl::Seconds(60)).ok()) << daemon.Log().substr(0, 2000);
  EXPECT_EQ(Status(daemon)["handled"], 1u);
  std::ifstream in(absl::StrCat("/proc/", daemon.pid(), "/status"));
  std::string line;
  int64_t hwm_kb = -1;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "VmHWM:")) {
      (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::StripSuffix(line.substr(6), "kB")),
                             &hwm_kb);
    }
  }
  ASSERT_GT(hwm_kb, 0);
  EXPECT_LT(hwm_kb, 64 * 1024) << "peak RSS after 100 MB of handler output";
}

TEST(DaemonTest, HandlerStdoutIsPipedAndLoggedOnlyWhereInfoIsLogged) {
  absl::StatusOr<std::string> dir = MakeTempDir();
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string handler = *dir + "/handler";
  {
    std::ofstream script(handler);
    // The shell's own fd 1 ($$), read inside $(...): dash applies a command's redirections
    // to itself before it forks.
    script << "#!/bin/sh\nfd1=$(readlink /proc/$$/fd/1)\necho $fd1 > \"" << *dir
           << "/fd1.$SEQNUM\"\necho stdout-line-$SEQNUM\n";
  }
  ASSERT_EQ(::chmod(handler.c_str(), 0755), 0);
  auto read_file = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  {
    DaemonProcess daemon = StartDaemon({"--exec", handler, "--expect-seqnum", "1"});
    RawSender sender(daemon.socket());
    ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/quiet")));
    ASSERT_TRUE(daemon.Settle().ok()) << daemon.Log();
    EXPECT_EQ(Status(daemon)["handled"], 1u);
    EXPECT_EQ(read_file(*dir + "/fd1.1"), "/dev/null\n");
    EXPECT_EQ(daemon.Log().find("stdout-line-1"), std::string::npos) << daemon.Log();
  }
  DaemonProcess daemon =
      StartDaemon({"--exec", handler, "--expect-seqnum", "2", "--log-level", "info"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(2, "/devices/chatty")));
  ASSERT_TRUE(daemon.Settle().ok()) << daemon.Log();
  EXPECT_EQ(Status(daemon)["handled"], 1u);
  EXPECT_TRUE(absl::StartsWith(read_file(*dir + "/fd1.2"), "pipe:")) << read_file(*dir + "/fd1.2");
  EXPECT_NE(daemon.Log().find("stdout-line-2"), std::string::npos) << daemon.Log();
}

TEST(DaemonTest, HandlerSeesOnlyStdioAndTheEventEnvironment) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/env", {{"FOO", "bar"}})));
  ASSERT_TRUE(daemon.Settle().ok());
  const std::vector<HandlerRun> runs = recorder.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].fds, "0,1,2");
  EXPECT_EQ(runs[0].subsystem, "test");  // argv[1]
  EXPECT_EQ(runs[0].env_keys, "ACTION,DEVPATH,FOO,HOME,PATH,SEQNUM,SUBSYSTEM");
}

TEST(DaemonTest, UnprivilegedSenderIsDroppedAndCounted) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  const std::string bytes = EncodeWireMessage(
      EventMessage(*EventFromFields(TestEvent(1, "/devices/evil")), 7, false));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(3);
    }
    RawSender sender(daemon.socket());
    ::_exit(sender.SendBytes(bytes) ? 0 : 4);
  }
  int wstatus;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(2, "/devices/good")));
  ASSERT_TRUE(daemon.Settle().ok());
  auto status = Status(daemon);
  EXPECT_EQ(status["dropped_unprivileged"], 1u);
  const std::vector<HandlerRun> runs = recorder.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].devpath, "/devices/good");
}

TEST(DaemonTest, MalformedDatagramsAreCountedAndSurvived) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  std::string good = EncodeWireMessage(EventMessage(*EventFromFields(TestEvent(9, "/x")), 1, false));
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  std::string bad_version = good;
  bad_version[4] = 99;
  ASSERT_TRUE(sender.SendBytes(bad_magic));
  ASSERT_TRUE(sender.SendBytes(bad_version));
  ASSERT_TRUE(sender.SendBytes(good.substr(0, 10)));                 // truncated header
  ASSERT_TRUE(sender.SendBytes(std::string(9000, 'A')));             // oversize
  ASSERT_TRUE(sender.SendBytes(""));                                 // empty
  auto event_bytes = [](const EnvVars& fields) {
    WireMessage m;
    m.type = WireType::kEvent;
    m.fields = fields;
    return EncodeWireMessage(m);
  };
  ASSERT_TRUE(sender.SendBytes(event_bytes({{"DEVPATH", "/a"}, {"SEQNUM", "3"}})));  // no ACTION
  ASSERT_TRUE(sender.SendBytes(event_bytes({{"ACTION", "add"}, {"DEVPATH", "a"}})));
  ASSERT_TRUE(
      sender.SendBytes(event_bytes({{"ACTION", "add"}, {"DEVPATH", "/a"}, {"SEQNUM", "x1"}})));
  EnvVars many = {{"ACTION", "add"}, {"DEVPATH", "/a"}};
  for (int i = 0; i < 70; ++i) many.emplace_back(absl::StrCat("V", i), "1");
  ASSERT_TRUE(sender.SendBytes(event_bytes(many)));
  // A key without '=': hand-built env block.
  std::string no_eq = good.substr(0, 16) + std::string("ACTION=add\0DEVPATH=/a\0NOEQUALS\0", 31);
  const uint32_t len = 31;
  std::memcpy(no_eq.data() + 12, &len, 4);
  ASSERT_TRUE(sender.SendBytes(no_eq));
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/after")));
  ASSERT_TRUE(daemon.Settle().ok()) << daemon.Log();
  auto status = Status(daemon);
  EXPECT_EQ(status["dropped_bad_magic"], 1u);
  EXPECT_EQ(status["dropped_bad_version"], 1u);
  EXPECT_EQ(status["dropped_truncated"], 2u);
  EXPECT_EQ(status["dropped_oversize"], 1u);
  EXPECT_EQ(status["dropped_bad_action"], 1u);
  EXPECT_EQ(status["dropped_bad_devpath"], 1u);
  EXPECT_EQ(status["dropped_bad_seqnum"], 1u);
  EXPECT_EQ(status["dropped_too_many_variables"], 1u);
  EXPECT_EQ(status["dropped_bad_variable"], 1u);
  EXPECT_EQ(status["handled"], 1u);
  const std::vector<HandlerRun> runs = recorder.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].devpath, "/devices/after");
}

TEST(DaemonTest, SecondDaemonOnTheSameSocketRefusesToStart) {
  DaemonProcess daemon = StartDaemon({});
  absl::StatusOr<CommandResult> second =
      RunHotring({"daemon", "--no-netlink", "--socket", daemon.socket()}, {}, absl::Seconds(10));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_NE(second->err.find("already in use"), std::string::npos) << second->err;
}

TEST(DaemonTest, SendFromTheUeventHelperEnvironmentWaitsForTheAck) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "5"});
  absl::StatusOr<CommandResult> sent = RunHotring(
      {"send", "usb", "--socket", daemon.socket(), "--wait=10"},
      {"ACTION=add", "DEVPATH=/devices/usb1", "SEQNUM=5", "HOME=/", "PATH=/bin", "PRODUCT=1/2/3"});
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->exit_code, 0) << sent->err;
  // Acked after handling: the run is already on record without a settle.
  const std::vector<HandlerRun> runs = recorder.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].seqnum, "5");
  EXPECT_EQ(runs[0].subsystem, "usb");
  EXPECT_EQ(runs[0].env_keys, "ACTION,DEVPATH,HOME,PATH,PRODUCT,SEQNUM,SUBSYSTEM");
}

TEST(DaemonTest, RetransmittedDuplicateIsHandledOnceAndAckedTwice) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<CommandResult> sent =
        RunHotring({"send", "--socket", daemon.socket(), "--wait=10", "--env", "ACTION=add",
                    "--env", "DEVPATH=/devices/dup", "--env", "SEQNUM=1", "--env", "SUBSYSTEM=t"});
    ASSERT_TRUE(sent.ok());
    EXPECT_EQ(sent->exit_code, 0) << sent->err;
  }
  EXPECT_EQ(recorder.Runs().size(), 1u);
  // The second send is a duplicate; on a slow machine (a sanitizer build under load) `send
  // --wait` may also have retransmitted before its ack came, and each copy is one more.
  EXPECT_GE(Status(daemon)["dropped_duplicate"], 1u);
}

TEST(DaemonTest, FailedHandlerMakesSendWaitFail) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  absl::StatusOr<CommandResult> sent =
      RunHotring({"send", "--socket", daemon.socket(), "--wait=10", "--env", "ACTION=add",
                  "--env", "DEVPATH=/devices/f", "--env", "SEQNUM=1", "--env", "EXIT=2"});
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->exit_code, 1);
  EXPECT_NE(sent->err.find("failed"), std::string::npos) << sent->err;
}

TEST(DaemonTest, KilledDaemonRestartedWhileSendWaitRetriesLosesNothing) {
  Recorder recorder;
  // A path socket (not abstract), so the restart also replaces a stale socket file. /tmp keeps
  // the path within sun_path's 108 bytes.
  char dir_template[] = "/tmp/hotring_restart_XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string socket = dir + "/control";
  const std::string gate = dir + "/gate";
  const std::vector<std::string> args = {"--exec", recorder.handler(), "--expect-seqnum", "1"};
  absl::StatusOr<DaemonProcess> daemon =
      DaemonProcess::Start({.socket = socket, .args = args});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  std::vector<BackgroundCommand> senders;
  for (int i = 1; i <= 10; ++i) {
    // Each handler waits for the gate, which opens only after the restart: whatever ran at the
    // kill was still running then, however slow the machine (no ack could have been sent).
    absl::StatusOr<BackgroundCommand> c = BackgroundCommand::Start(
        {testing::HotringBinary(), "send", "--socket", socket, "--wait=60", "--env",
         "ACTION=add", "--env", absl::StrCat("DEVPATH=/devices/r", i), "--env",
         absl::StrCat("SEQNUM=", i), "--env", absl::StrCat("WAIT_FOR=", gate)});
    ASSERT_TRUE(c.ok());
    senders.push_back(std::move(*c));
  }
  // The kill comes while events run (their acks not sent yet).
  absl::StatusOr<std::map<std::string, uint64_t>> running =
      daemon->WaitForCounters({{"running", 1}});
  ASSERT_TRUE(running.ok()) << running.status() << "\n" << daemon->Log();
  daemon->Kill();  // SIGKILL: no ack for whatever was queued or running
  // Deliberately no daemon for a while (not a wait for a state): the senders retry against a
  // dead socket before the new daemon binds it.
  ::usleep(500 * 1000);
  absl::StatusOr<DaemonProcess> restarted =
      DaemonProcess::Start({.socket = socket, .args = args});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  {
    std::ofstream open_gate(gate);
  }
  for (BackgroundCommand& c : senders) {
    absl::StatusOr<CommandResult> r = c.Wait(absl::Seconds(90));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, 0) << r->err;
  }
  std::set<std::string> seen;
  for (const HandlerRun& r : recorder.Runs()) seen.insert(r.seqnum);
  for (int i = 1; i <= 10; ++i) EXPECT_TRUE(seen.contains(absl::StrCat(i))) << "SEQNUM " << i;
  // The acks the kill lost were got from the new daemon: some sender sent it its event again.
  EXPECT_GE(Status(*restarted)["received"], 1u) << restarted->Log();
  EXPECT_TRUE(restarted->Stop().ok());
}

TEST(DaemonTest, MonitorSeesEveryHandledEventInOrderPerDevice) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  absl::StatusOr<BackgroundCommand> monitor = BackgroundCommand::Start(
      {testing::HotringBinary(), "monitor", "--socket", daemon.socket(), "--count", "60"});
  ASSERT_TRUE(monitor.ok());
  // The monitor says so on stderr once the daemon has taken its subscription.
  ASSERT_TRUE(monitor->WaitForErr("monitoring handled events")) << monitor->ErrSoFar();
  RawSender sender(daemon.socket());
  for (uint64_t i = 1; i <= 60; ++i) {
    ASSERT_TRUE(sender.SendEvent(TestEvent(i, absl::StrCat("/devices/m", i % 3))));
  }
  absl::StatusOr<CommandResult> out = monitor->Wait(absl::Seconds(30));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_code, 0) << out->err;
  std::map<std::string, std::vector<uint64_t>> by_devpath;
  std::set<uint64_t> seen;
  for (const absl::string_view line : absl::StrSplit(out->out, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    ASSERT_GE(f.size(), 5u) << line;
    uint64_t seqnum;
    ASSERT_TRUE(absl::SimpleAtoi(f[0], &seqnum)) << line;
    EXPECT_EQ(f[1], "add");
    EXPECT_EQ(f[3], "(test)");
    EXPECT_EQ(f[4], "handled");
    seen.insert(seqnum);
    by_devpath[std::string(f[2])].push_back(seqnum);
  }
  EXPECT_EQ(seen.size(), 60u);
  for (const auto& [devpath, list] : by_devpath) {
    EXPECT_TRUE(std::is_sorted(list.begin(), list.end())) << devpath;
  }
}

TEST(DaemonTest, ControlStatusJsonAndExit) {
  DaemonProcess daemon = StartDaemon({});
  absl::StatusOr<CommandResult> json =
      RunHotring({"control", "status", "--json", "--socket", daemon.socket()});
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->exit_code, 0);
  for (const char* key : {"\"received\": 0", "\"handled\": 0", "\"failed\": 0",
                          "\"timed_out\": 0", "\"killed\": 0", "\"held\": 0", "\"queued\": 0",
                          "\"running\": 0", "\"dropped_bad_magic\": 0"}) {
    EXPECT_NE(json->out.find(key), std::string::npos) << key << " in " << json->out;
  }
  absl::StatusOr<CommandResult> exit =
      RunHotring({"control", "exit", "--socket", daemon.socket()});
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 0);
  // The daemon must have exited by itself (reaped here), not merely be quiet: its exit code
  // exists only once it is gone. 30 s: nothing is pending, so only a loaded machine takes long.
  absl::StatusOr<int> exited = daemon.WaitExit(absl::Seconds(30));
  ASSERT_TRUE(exited.ok()) << exited.status() << "\n" << daemon.Log();
  EXPECT_EQ(*exited, 0) << daemon.Log();
}

TEST(DaemonTest, SettleTimesOutWhileAnEventHangs) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/hang", {{"HANG", "1"}})));
  absl::StatusOr<CommandResult> settle =
      RunHotring({"settle", "--socket", daemon.socket(), "--timeout", "0.5"});
  ASSERT_TRUE(settle.ok());
  EXPECT_EQ(settle->exit_code, 1);
  EXPECT_EQ(Status(daemon)["running"], 1u);
}

// The tests' guard for long runs (DaemonProcess::SettleWhileProgressing): it waits out a run
// longer than its stall as long as events keep finishing, and gives up on one that hangs,
// saying where the counters stood.
TEST(DaemonTest, SettleWhileProgressingWaitsOutSlowRunsButNotAHang) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  // One device, so one after another: 6 x 0.8 s, twice the stall.
  for (uint64_t i = 1; i <= 6; ++i) {
    ASSERT_TRUE(sender.SendEvent(TestEvent(i, "/devices/slow", {{"SLEEP_MS", "800"}})));
  }
  const absl::Status slow = daemon.SettleWhileProgressing(absl::Seconds(2));
  ASSERT_TRUE(slow.ok()) << slow;
  EXPECT_EQ(Status(daemon)["handled"], 6u);

  ASSERT_TRUE(sender.SendEvent(TestEvent(7, "/devices/hang", {{"HANG", "1"}})));
  const absl::Status hung = daemon.SettleWhileProgressing(absl::Seconds(2));
  EXPECT_TRUE(absl::IsDeadlineExceeded(hung)) << hung;
  EXPECT_NE(hung.message().find("no progress for"), absl::string_view::npos) << hung;
  EXPECT_NE(hung.message().find("received=7 handled=6"), absl::string_view::npos) << hung;
}

// A settle request that never got into a full queue has not seen the daemon settle: exit 1
// with the reason, not 0 as if no daemon existed. The "daemon" here is a socket nobody reads.
TEST(DaemonTest, SettleAgainstAFullQueueIsNotSettled) {
  const std::string name = absl::StrCat("@hotring-full-queue-", ::getpid());
  absl::StatusOr<UniqueFd> busy = io::BindUnix(SOCK_DGRAM, name);
  ASSERT_TRUE(busy.ok()) << busy.status();
  absl::StatusOr<io::SocketAddress> address = io::UnixAddress(name);
  ASSERT_TRUE(address.ok());
  absl::StatusOr<UniqueFd> fd = io::UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(fd.ok());
  int queued = 0;
  for (; queued < 100000; ++queued) {
    if (::sendto(fd->get(), "x", 1, MSG_DONTWAIT, address->get(), address->length) < 0) {
      ASSERT_EQ(errno, EAGAIN);
      break;
    }
  }
  ASSERT_LT(queued, 100000);
  absl::StatusOr<CommandResult> settle =
      RunHotring({"settle", "--socket", name, "--timeout", "0.3"});
  ASSERT_TRUE(settle.ok());
  EXPECT_EQ(settle->exit_code, 1) << settle->err;
  EXPECT_NE(settle->err.find("queue full"), std::string::npos) << settle->err;
}

TEST(DaemonTest, SigtermFinishesAcceptedEventsBeforeExiting) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon(
      {"--exec", recorder.handler(), "--expect-seqnum", "1", "--reorder-timeout", "30"});
  RawSender sender(daemon.socket());
  // 1 runs for 2 s, long enough to be seen running; 3 is held: 2 is missing.
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/a", {{"SLEEP_MS", "2000"}})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(3, "/devices/b")));
  // SIGTERM comes with one event running and one held.
  absl::StatusOr<std::map<std::string, uint64_t>> accepted =
      daemon.WaitForCounters({{"running", 1}, {"held", 1}});
  ASSERT_TRUE(accepted.ok()) << accepted.status() << "\n" << daemon.Log();
  ASSERT_TRUE(daemon.Stop().ok()) << daemon.Log();
  std::set<std::string> seen;
  for (const HandlerRun& r : recorder.Runs()) seen.insert(r.seqnum);
  EXPECT_EQ(seen, (std::set<std::string>{"1", "3"}));
}

// The kernel's uevent helper convention: invoked as hotring-send with the event in the
// environment and the subsystem in argv[1]; no daemon yet, so it starts one.
TEST(DaemonTest, UeventHelperStartsTheDaemonAndDeliversTheEvent) {
  Recorder recorder;
  char dir_template[] = "/tmp/hotring_helper_XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string helper = dir + "/hotring-send";
  ASSERT_EQ(::symlink(testing::HotringBinary().c_str(), helper.c_str()), 0);
  const std::string socket = absl::StrCat("@hotring-helper-test-", ::getpid());
  absl::StatusOr<CommandResult> sent = testing::RunCommand(
      {helper, "usb"},
      {"ACTION=add", "DEVPATH=/devices/helper", "SEQNUM=7", "HOME=/", "PATH=/bin",
       absl::StrCat("HOTRING_SOCKET=", socket),
       absl::StrCat("HOTRING_DAEMON_ARGS=--no-netlink --expect-seqnum 7 --exec ",
                    recorder.handler())});
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->exit_code, 0) << sent->err;
  absl::StatusOr<CommandResult> settled =
      RunHotring({"settle", "--socket", socket, "--timeout", "20"});
  ASSERT_TRUE(settled.ok());
  EXPECT_EQ(settled->exit_code, 0) << settled->err;
  const std::vector<HandlerRun> runs = recorder.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].seqnum, "7");
  EXPECT_EQ(runs[0].subsystem, "usb");
  absl::StatusOr<CommandResult> exit = RunHotring({"control", "exit", "--socket", socket});
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 0) << exit->err;
  ::unlink(helper.c_str());
  ::rmdir(dir.c_str());
}

// Sends an empty datagram to `name` at once: true if it was queued (the name is bound, so a
// request sent now is read; the daemon drops this one as truncated), false if nobody has it.
bool ProbeBound(const std::string& name) {
  absl::StatusOr<io::SocketAddress> address = io::UnixAddress(name);
  absl::StatusOr<UniqueFd> fd = io::UnixSocket(SOCK_DGRAM);
  if (!address.ok() || !fd.ok()) return false;
  return ::sendto(fd->get(), "", 0, MSG_DONTWAIT, address->get(), address->length) == 0;
}

// --daemonize (and its aliases): the parent's exit 0 means the daemon already serves, so the
// very first request is queued and read without any retry loop in the caller.
TEST(DaemonTest, DaemonizeExitsOnceTheDaemonServes) {
  absl::StatusOr<std::string> dir = MakeTempDir("daemonize");
  ASSERT_TRUE(dir.ok());
  const std::string log = *dir + "/daemon.log";
  for (const char* flag : {"--daemonize", "--daemon", "-d"}) {
    const std::string socket = absl::StrCat("@hotring-daemonize-test-", ::getpid(), flag);
    absl::StatusOr<CommandResult> started = RunHotring(
        {"daemon", "--no-netlink", "--socket", socket, flag, "--log-file", log}, {},
        absl::Seconds(20));
    ASSERT_TRUE(started.ok());
    ASSERT_EQ(started->exit_code, 0) << flag << ": " << started->err;
    EXPECT_TRUE(ProbeBound(socket)) << flag << ": exited 0 before the socket was bound";
    absl::StatusOr<CommandResult> status =
        RunHotring({"control", "status", "--socket", socket});
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(status->exit_code, 0) << flag << ": " << status->err;
    EXPECT_NE(status->out.find("dropped_truncated 1"), std::string::npos) << status->out;
    absl::StatusOr<CommandResult> exit = RunHotring({"control", "exit", "--socket", socket});
    ASSERT_TRUE(exit.ok());
    EXPECT_EQ(exit->exit_code, 0) << exit->err;
  }
  ::unlink(log.c_str());
  ::rmdir(dir->c_str());
}

// Quotes `text` for /bin/sh.
std::string ShellQuote(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// Runs `script` with /bin/sh -c; the deadline only keeps a hang from hanging the test (a
// daemon that keeps the caller's streams makes `$(...)` and a pipe wait for it forever).
CommandResult RunShell(const std::string& script) {
  absl::StatusOr<CommandResult> r =
      ::hotring::testing::RunCommand({"/bin/sh", "-c", script}, {}, ScaledForEmulation(absl::Seconds(30)));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult{};
}

// An init script's `out=$(hotring daemon --daemonize ... 2>&1)` and a pipe around the daemon
// both end once the daemon serves: it lets go of stdin, stdout and stderr (as daemon(3) and
// udevd --daemon) and logs where --log-file says. A start-up error still reaches the caller.
TEST(DaemonTest, DaemonizeLetsGoOfTheCallersStreams) {
  absl::StatusOr<std::string> dir = MakeTempDir("daemonize_streams");
  ASSERT_TRUE(dir.ok());
  const std::string log = *dir + "/daemon.log";
  const std::string socket = absl::StrCat("@hotring-daemonize-streams-", ::getpid());
  const std::string daemon = absl::StrCat(ShellQuote(HotringBinary()), " daemon --no-netlink --socket ",
                                          socket, " --daemonize --log-file ", ShellQuote(log));
  // In a command substitution, stderr into it too.
  const CommandResult captured = RunShell(absl::StrCat("out=$(", daemon, " 2>&1); echo \"status=$? out=[$out]\""));
  EXPECT_EQ(captured.exit_code, 0) << "the shell was killed at its deadline: " << captured.err;
  EXPECT_EQ(captured.out, "status=0 out=[]\n");
  absl::StatusOr<CommandResult> status = RunHotring({"control", "status", "--socket", socket});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->exit_code, 0) << status->err;
  // The second start finds the socket taken: its error comes through the substitution, and
  // its exit status is non-zero; the first daemon serves on.
  const CommandResult taken = RunShell(absl::StrCat("out=$(", daemon, " 2>&1); echo \"status=$? out=[$out]\""));
  EXPECT_EQ(taken.exit_code, 0) << taken.err;
  EXPECT_TRUE(absl::StartsWith(taken.out, "status=1 out=[hotring daemon: socket " + socket +
                                              " is already in use"))
      << taken.out;
  absl::StatusOr<CommandResult> exit = RunHotring({"control", "exit", "--socket", socket});
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 0) << exit->err;

  // In a pipe, stdout and stderr both into it.
  const CommandResult piped = RunShell(absl::StrCat("{ ", daemon, " 2>&1; echo \"status=$?\"; } | cat"));
  EXPECT_EQ(piped.exit_code, 0) << "the pipe was killed at its deadline: " << piped.err;
  EXPECT_EQ(piped.out, "status=0\n");
  status = RunHotring({"control", "status", "--socket", socket});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->exit_code, 0) << status->err;
  exit = RunHotring({"control", "exit", "--socket", socket});
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 0) << exit->err;

  // The log went to the file: both starts, and no line to the caller.
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  size_t ready = 0;
  for (size_t at = 0; (at = text.str().find("hotring: notice: daemon ready: socket " + socket, at)) !=
                      std::string::npos;
       ++at) {
    ++ready;
  }
  EXPECT_EQ(ready, 2u) << text.str();
  // A --log-file that cannot be opened is a start-up error the caller sees.
  const CommandResult bad = RunShell(absl::StrCat(
      "out=$(", ShellQuote(HotringBinary()), " daemon --no-netlink --socket ", socket,
      "-bad --daemonize --log-file ", ShellQuote(*dir + "/no/such/dir/log"), " 2>&1); echo \"status=$? out=[$out]\""));
  EXPECT_TRUE(absl::StartsWith(bad.out, "status=1 out=[hotring daemon: ")) << bad.out;
  EXPECT_NE(bad.out.find("no/such/dir/log"), std::string::npos) << bad.out;
  ::unlink(log.c_str());
  ::rmdir(dir->c_str());
}

// A daemonized start that fails reports the child's error and exit code from the parent.
TEST(DaemonTest, DaemonizeReportsTheChildsError) {
  DaemonProcess daemon = StartDaemon({});
  absl::StatusOr<CommandResult> second = RunHotring(
      {"daemon", "--no-netlink", "--socket", daemon.socket(), "--daemonize"}, {},
      absl::Seconds(20));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_NE(second->err.find("hotring daemon: socket " + daemon.socket() + " is already in use"),
            std::string::npos)
      << second->err;
  // A bad --exec is found in the child (after the fork): still a usage error, exit 2.
  absl::StatusOr<CommandResult> bad = RunHotring(
      {"daemon", "--no-netlink", "--socket", "@hotring-daemonize-bad", "-d", "--exec", "rel"},
      {}, absl::Seconds(20));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->exit_code, 2) << bad->err;
  EXPECT_NE(bad->err.find("--exec needs an absolute path"), std::string::npos) << bad->err;
  EXPECT_EQ(Status(daemon)["received"], 0u);  // the first daemon is untouched
}

TEST(DaemonTest, ReadyFdMustBeOpen) {
  absl::StatusOr<CommandResult> r =
      RunHotring({"daemon", "--no-netlink", "--socket", "@hotring-ready-fd-bad", "--ready-fd",
                  "77"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_NE(r->err.find("--ready-fd 77: not an open file descriptor"), std::string::npos)
      << r->err;
}

// sd_notify: with NOTIFY_SOCKET set (here an abstract name), READY=1 arrives there, and only
// once the daemon serves: a status request sent right after it is answered.
TEST(DaemonTest, NotifySocketGetsReadyOnceTheDaemonServes) {
  const std::string notify = absl::StrCat("@hotring-notify-e2e-", ::getpid());
  absl::StatusOr<UniqueFd> manager = io::BindUnix(SOCK_DGRAM, notify);
  ASSERT_TRUE(manager.ok()) << manager.status();
  const std::string socket = absl::StrCat("@hotring-notify-daemon-", ::getpid());
  absl::StatusOr<BackgroundCommand> daemon = BackgroundCommand::Start(
      {testing::HotringBinary(), "daemon", "--no-netlink", "--socket", socket},
      {absl::StrCat("NOTIFY_SOCKET=", notify)});
  ASSERT_TRUE(daemon.ok());
  pollfd p{manager->get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 20'000), 1) << daemon->ErrSoFar();
  char buffer[64];
  const ssize_t n = ::recv(manager->get(), buffer, sizeof(buffer), 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buffer, static_cast<size_t>(n)), "READY=1");
  EXPECT_TRUE(ProbeBound(socket)) << "READY=1 before the socket was bound";
  absl::StatusOr<CommandResult> status = RunHotring({"control", "status", "--socket", socket});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->exit_code, 0) << status->err;
  EXPECT_NE(status->out.find("dropped_truncated 1"), std::string::npos) << status->out;
  absl::StatusOr<CommandResult> exit = RunHotring({"control", "exit", "--socket", socket});
  ASSERT_TRUE(exit.ok());
  absl::StatusOr<CommandResult> done = daemon->Wait(absl::Seconds(20));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->exit_code, 0) << done->err;
}

TEST(DaemonTest, BadArgumentsAreAClearError) {
  absl::StatusOr<CommandResult> r = RunHotring({"daemon", "--children-max", "zero"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_NE(r->err.find("--children-max"), std::string::npos) << r->err;
  r = RunHotring({"send", "--env", "ACTION=add"});  // no DEVPATH
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_NE(r->err.find("DEVPATH"), std::string::npos) << r->err;
  r = RunHotring({"daemon", "--exec", "relative/path", "--no-netlink", "--socket", "@x-bad"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 2);
}

}  // namespace
}  // namespace hotring::hotplug

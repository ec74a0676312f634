// End-to-end tests of the daemon's kernel uevent source, in a private network namespace: a
// test injects kernel-format uevents into group 1 (they arrive from a non-zero port, i.e. not
// from the kernel). The whole test process enters the namespace first, so the daemons it starts
// share it. Real host device events reach this namespace too: injected events use DEVPATHs under
// /devices/virtual/hotring_test and SEQNUMs far above the host's, and assertions look at those.
#include <signal.h>
#include <sys/socket.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "hotplug/event_parser.h"
#include "hotplug/wire.h"
#include "io/netlink.h"
#include "testing/daemon_assertions.h"
#include "testing/daemon_fixture.h"
#include "testing/fake_sysfs.h"
#include "testing/handler_recorder.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::BackgroundCommand;
using ::hotring::testing::CommandResult;
using ::hotring::testing::Counters;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::FakeSysfs;
using ::hotring::testing::HandlerRecorder;
using ::hotring::testing::HandlerRun;
using ::hotring::testing::MakeUevent;
using ::hotring::testing::UeventInjector;

constexpr uint64_t kBase = 1'000'000'000'000ULL;  // far above any host SEQNUM
constexpr char kPrefix[] = "/devices/virtual/hotring_test";

class DaemonNetlinkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const absl::Status entered = testing::EnterPrivateNetworkNamespace();
    ASSERT_TRUE(entered.ok()) << entered;
  }

  static DaemonProcess Start(std::vector<std::string> args) {
    args.insert(args.end(), {"--expect-seqnum", absl::StrCat(kBase)});
    absl::StatusOr<DaemonProcess> daemon =
        DaemonProcess::Start({.args = std::move(args), .netlink = true});
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return std::move(*daemon);
  }


  // The handler runs under kPrefix once `n` have run (or what ran by a generous deadline).
  static std::vector<HandlerRun> AwaitRuns(DaemonProcess& daemon, const HandlerRecorder& recorder,
                                           size_t n) {
    std::vector<HandlerRun> runs;
    testing::WaitUntil([&] {
      EXPECT_TRUE(daemon.Settle().ok());
      runs = recorder.RunsUnder(kPrefix);
      return runs.size() >= n;
    });
    return runs;
  }

  // Each device's SEQNUMs in the order its handlers ran; every SEQNUM into `seen`, a failure
  // for one that ran twice.
  static std::map<std::string, std::vector<uint64_t>> SeqnumsByDevice(
      const std::vector<HandlerRun>& runs, std::set<uint64_t>& seen) {
    std::map<std::string, std::vector<uint64_t>> by_device;
    for (const HandlerRun& r : runs) {
      uint64_t seqnum = 0;
      EXPECT_TRUE(absl::SimpleAtoi(r.seqnum, &seqnum)) << r.seqnum;
      EXPECT_TRUE(seen.insert(seqnum).second) << "SEQNUM " << seqnum << " ran twice";
      by_device[r.devpath].push_back(seqnum);
    }
    return by_device;
  }

  static Event TestUevent(uint64_t i, const std::string& device) {
    return *MakeUevent("add", absl::StrCat(kPrefix, "/", device), "hotring_test", kBase + i);
  }
};

TEST_F(DaemonNetlinkTest, ForgedUeventsNeverRunAHandler) {
  HandlerRecorder recorder;
  DaemonProcess daemon = Start({"--exec", recorder.handler()});
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok()) << injector.status();
  for (uint64_t i = 0; i < 50; ++i) {
    ASSERT_TRUE(injector->Send(TestUevent(i, absl::StrCat("forged", i))).ok());
  }
  // Make sure the daemon has read them all: a control round trip after the burst is not
  // enough (different sockets), so wait for the counter.
  absl::StatusOr<std::map<std::string, uint64_t>> dropped =
      daemon.WaitForCounters({{"dropped_not_kernel", 50}});
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ((*dropped)["dropped_not_kernel"], 50u);
  ASSERT_TRUE(daemon.Settle().ok());
  EXPECT_TRUE(recorder.RunsUnder(kPrefix).empty());
  EXPECT_NE(daemon.Log().find("dropped (not_kernel"), std::string::npos) << daemon.Log();
}

TEST_F(DaemonNetlinkTest, TrustedUserspaceEventsAreHandledInOrderPerDevice) {
  HandlerRecorder recorder;
  DaemonProcess daemon = Start({"--exec", recorder.handler(), "--netlink-trust-userspace"});
  EXPECT_NE(daemon.Log().find("--netlink-trust-userspace"), std::string::npos)
      << "the daemon must say loudly that it trusts userspace";
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  for (uint64_t i = 0; i < 60; ++i) {
    ASSERT_TRUE(injector->Send(TestUevent(i, absl::StrCat("dev", i % 4))).ok());
  }
  const std::vector<HandlerRun> runs = AwaitRuns(daemon, recorder, 60);
  ASSERT_EQ(runs.size(), 60u);
  std::set<uint64_t> seen;
  const std::map<std::string, std::vector<uint64_t>> by_device = SeqnumsByDevice(runs, seen);
  for (const HandlerRun& r : runs) EXPECT_EQ(r.subsystem, "hotring_test");
  for (const auto& [device, list] : by_device) {
    EXPECT_TRUE(std::is_sorted(list.begin(), list.end())) << device;
  }
}

// The boot's init opens the kernel socket, writes coldplug's uevent files, and only then
// has a daemon reading it (`--netlink-fd`): what the socket queued before the daemon existed
// is handled, in order per device, once each.
TEST_F(DaemonNetlinkTest, UeventsQueuedInAnInheritedSocketBeforeStartUpAreHandled) {
  absl::StatusOr<io::UeventListener> early = io::OpenUeventListener({});
  ASSERT_TRUE(early.ok()) << early.status();
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  for (uint64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(injector->Send(TestUevent(i, absl::StrCat("early", i % 3))).ok());
  }
  // Sent between the bind and init's read of uevent_seqnum: below the SEQNUM the daemon is
  // told to expect, never seen, so a straggler, handled at once.
  ASSERT_TRUE(
      injector
          ->Send(*MakeUevent("add", absl::StrCat(kPrefix, "/racing"), "hotring_test", kBase - 1))
          .ok());
  HandlerRecorder recorder;
  absl::StatusOr<DaemonProcess> daemon =
      DaemonProcess::Start({.args = {"--exec", recorder.handler(), "--netlink-trust-userspace",
                                     "--expect-seqnum", absl::StrCat(kBase)},
                            .netlink = true,
                            .netlink_fd = early->fd.get()});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  early->fd.Reset();  // the daemon's copy is the only reader now
  EXPECT_NE(daemon->Log().find("kernel uevents on (inherited socket)"), std::string::npos)
      << daemon->Log();
  for (uint64_t i = 20; i < 30; ++i) {
    ASSERT_TRUE(injector->Send(TestUevent(i, absl::StrCat("early", i % 3))).ok());
  }
  const std::vector<HandlerRun> runs = AwaitRuns(*daemon, recorder, 31);
  ASSERT_EQ(runs.size(), 31u);
  std::set<uint64_t> seen;
  const std::map<std::string, std::vector<uint64_t>> by_device = SeqnumsByDevice(runs, seen);
  EXPECT_EQ(seen.size(), 31u);
  EXPECT_EQ(*seen.begin(), kBase - 1);
  for (const auto& [device, list] : by_device) {
    EXPECT_TRUE(std::is_sorted(list.begin(), list.end())) << device;
  }
  std::map<std::string, uint64_t> counters = Counters(*daemon);
  EXPECT_EQ(counters["netlink_received"], 31u);
  EXPECT_EQ(counters["handled"], 31u);
  EXPECT_EQ(counters["dropped_duplicate"], 0u);
}

// A descriptor that is not a bound uevent listener is refused at start-up, with the reason.
TEST_F(DaemonNetlinkTest, AnInheritedDescriptorThatIsNotAUeventSocketIsRefused) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  absl::StatusOr<DaemonProcess> daemon =
      DaemonProcess::Start({.netlink = true, .netlink_fd = pair[0]});
  ::close(pair[0]);
  ::close(pair[1]);
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.status().message().find("not a NETLINK_KOBJECT_UEVENT socket"),
            std::string::npos)
      << daemon.status();
}

TEST_F(DaemonNetlinkTest, SameSeqnumFromNetlinkAndSendIsHandledOnce) {
  HandlerRecorder recorder;
  DaemonProcess daemon = Start({"--exec", recorder.handler(), "--netlink-trust-userspace"});
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  ASSERT_TRUE(injector->Send(TestUevent(0, "both")).ok());
  absl::StatusOr<CommandResult> sent = testing::RunHotring(
      {"send", "--socket", daemon.socket(), "--wait=10", "--env", "ACTION=add", "--env",
       absl::StrCat("DEVPATH=", kPrefix, "/both"), "--env", "SUBSYSTEM=hotring_test", "--env",
       absl::StrCat("SEQNUM=", kBase)});
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->exit_code, 0) << sent->err;
  ASSERT_TRUE(daemon.Settle().ok());
  EXPECT_EQ(recorder.RunsUnder(kPrefix).size(), 1u);
  EXPECT_EQ(Counters(daemon)["dropped_duplicate"], 1u);
}

TEST_F(DaemonNetlinkTest, BurstOfHundredThousandIsHandledExactlyOnceElseResynchronised) {
  // No handler: the daemon's own throughput decides whether the socket overruns.
  DaemonProcess daemon = Start({"--netlink-trust-userspace", "--children-max", "64"});
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  constexpr uint64_t kBurst = 100'000;
  absl::StatusOr<size_t> sent = injector->SendBurst(
      kBurst, [&](size_t i) { return TestUevent(i, absl::StrCat("burst", i)); });
  ASSERT_TRUE(sent.ok()) << sent.status();
  // Wait until everything that arrived is through (received stops growing and settle is ok).
  std::map<std::string, uint64_t> status;
  uint64_t last = 0;
  for (int i = 0; i < 600; ++i) {
    ASSERT_TRUE(daemon.Settle(absl::Seconds(60)).ok());
    status = Counters(daemon);
    if (status["netlink_received"] >= kBurst || (i > 0 && status["netlink_received"] == last)) {
      break;
    }
    last = status["netlink_received"];
    ::usleep(50000);
  }
  EXPECT_EQ(status["dropped_duplicate"], 0u);
  EXPECT_EQ(status["received"], status["handled"]);
  if (status["netlink_overruns"] == 0) {
    EXPECT_GE(status["netlink_received"], kBurst);  // every one (plus any host events)
  } else {
    EXPECT_GE(status["resyncs"], 1u) << "overrun without recovery";
  }
}

// Bytes waiting in the receive queues of this namespace's NETLINK_KOBJECT_UEVENT sockets
// (/proc/net/netlink: sk Eth Pid Groups Rmem ...). The test's own sockets are not subscribed.
uint64_t UnreadUeventBytes() {
  std::ifstream in("/proc/net/netlink");
  std::string line;
  std::getline(in, line);  // header
  uint64_t total = 0;
  while (std::getline(in, line)) {
    const std::vector<std::string> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t rmem = 0;
    if (cols.size() > 4 && cols[1] == "15" && cols[3] != "00000000" &&
        absl::SimpleAtoi(cols[4], &rmem)) {
      total += rmem;
    }
  }
  return total;
}

// `trigger --settle` writes to sysfs, then asks the daemon to settle: the uevents are already
// on the daemon's netlink socket, but not necessarily read. Settle must cover them.
TEST_F(DaemonNetlinkTest, SettleCoversUeventsStillUnreadOnTheSocket) {
  DaemonProcess daemon = Start({"--netlink-trust-userspace"});
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  constexpr uint64_t kCount = 30000;
  const uint64_t before = Counters(daemon)["netlink_received"];
  // Stopped, the daemon reads nothing: the settle request is queued behind all the uevents.
  ASSERT_EQ(::kill(daemon.pid(), SIGSTOP), 0);
  for (uint64_t i = 0; i < kCount; ++i) {
    ASSERT_TRUE(injector->Send(TestUevent(i, absl::StrCat("settle", i))).ok());
  }
  // The settle request is sent from here, not by a `hotring settle` started in the
  // background: once SendRequest has returned, the request is on the stopped daemon's control
  // socket, so the daemon finds it there with every uevent already queued on the other socket.
  testing::ControlSender requester(daemon.socket());
  ASSERT_TRUE(requester.SendRequest({.cookie = 77, .command = ControlCommand::kSettle}));
  ASSERT_EQ(::kill(daemon.pid(), SIGCONT), 0);
  absl::StatusOr<ControlReply> reply = requester.ReceiveReply(77, absl::Seconds(90));
  ASSERT_TRUE(reply.ok()) << reply.status() << "\n" << daemon.Log();
  EXPECT_TRUE(reply->ok) << reply->message;
  // Freeze the daemon right after it answered: nothing may be left unread.
  ASSERT_EQ(::kill(daemon.pid(), SIGSTOP), 0);
  const uint64_t unread = UnreadUeventBytes();
  ASSERT_EQ(::kill(daemon.pid(), SIGCONT), 0);
  EXPECT_EQ(unread, 0u) << "settle answered with uevents still on the netlink socket";
  const std::map<std::string, uint64_t> status = Counters(daemon);
  // Host uevents may add to the count, never take from it.
  EXPECT_GE(status.at("netlink_received") - before, kCount);
  EXPECT_EQ(status.at("received"), status.at("handled"));
}

TEST_F(DaemonNetlinkTest, OverrunResynchronisesFromSysfs) {
  absl::StatusOr<FakeSysfs> sysfs = FakeSysfs::Create();
  ASSERT_TRUE(sysfs.ok());
  const std::vector<std::string> devices = {"/devices/platform/serial8250/tty/ttyS0",
                                            "/devices/pci0000:00/0000:00:02.0",
                                            "/devices/pci0000:00/0000:00:02.0/drm/card0",
                                            "/devices/virtual/net/lo"};
  ASSERT_TRUE(sysfs->AddDevice({.devpath = devices[0], .subsystem = "tty",
                                .uevent = {{"MAJOR", "4"}, {"MINOR", "64"},
                                           {"DEVNAME", "ttyS0"}}}).ok());
  ASSERT_TRUE(sysfs->AddDevice({.devpath = devices[1], .subsystem = "pci",
                                .kind = FakeSysfs::Kind::kBus,
                                .uevent = {{"MODALIAS", "pci:v00008086d00001234"}}}).ok());
  ASSERT_TRUE(sysfs->AddDevice({.devpath = devices[2], .subsystem = "drm",
                                .uevent = {{"DEVNAME", "dri/card0"}}}).ok());
  ASSERT_TRUE(sysfs->AddDevice({.devpath = devices[3], .subsystem = "net",
                                .uevent = {{"INTERFACE", "lo"}}}).ok());
  HandlerRecorder recorder;
  // A tiny receive buffer: a burst must overrun it. The burst's datagrams are malformed (a
  // libudev header), so they cost nothing to drop; the overrun alone drives the resync.
  DaemonProcess daemon = Start({"--exec", recorder.handler(), "--netlink-rcvbuf", "4096",
                                "--sysfs-root", sysfs->root()});
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  const std::string junk = std::string("libudev\0", 8) + std::string(200, 'x');
  // Stopped, the daemon cannot drain the socket: the burst overruns it for certain.
  ASSERT_EQ(::kill(daemon.pid(), SIGSTOP), 0);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(injector->SendRaw(junk).ok());
  ASSERT_EQ(::kill(daemon.pid(), SIGCONT), 0);
  std::map<std::string, uint64_t> status;
  std::vector<HandlerRun> runs;
  testing::WaitUntil([&] {
    EXPECT_TRUE(daemon.Settle().ok());
    status = Counters(daemon);
    runs = recorder.RunsUnder("/devices/");
    return status["resyncs"] >= 1 && runs.size() >= devices.size();
  });
  EXPECT_GE(status["netlink_overruns"], 1u);
  EXPECT_GE(status["resyncs"], 1u);
  EXPECT_LE(status["resyncs"], 3u) << "one resync per storm, not one per ENOBUFS";
  std::map<std::string, HandlerRun> by_devpath;
  for (const HandlerRun& r : runs) by_devpath[r.devpath] = r;
  for (const std::string& devpath : devices) {
    ASSERT_TRUE(by_devpath.contains(devpath)) << devpath << " not resynchronised";
    EXPECT_EQ(by_devpath[devpath].action, "add");
    EXPECT_EQ(by_devpath[devpath].seqnum, "-");  // synthesized: no kernel SEQNUM
  }
  EXPECT_EQ(by_devpath[devices[0]].subsystem, "tty");
  EXPECT_EQ(by_devpath[devices[0]].env_keys,
            "ACTION,DEVNAME,DEVPATH,HOME,MAJOR,MINOR,PATH,SUBSYSTEM");
  EXPECT_NE(daemon.Log().find("re-synchronising"), std::string::npos) << daemon.Log();
}

TEST_F(DaemonNetlinkTest, RebroadcastComesAfterHandling) {
  HandlerRecorder recorder;
  DaemonProcess daemon =
      Start({"--exec", recorder.handler(), "--netlink-trust-userspace", "--rebroadcast", "5"});
  io::UeventListenerOptions listen;
  listen.group = 5;
  listen.receive_buffer = 1 << 20;
  absl::StatusOr<io::UeventListener> listener = io::OpenUeventListener(listen);
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  ASSERT_TRUE(injector->Send(TestUevent(0, "rebroadcast")).ok());
  // Receive on group 5 until our event comes back.
  timeval tv{10, 0};
  ::setsockopt(listener->fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  bool got = false;
  for (int i = 0; i < 100 && !got; ++i) {
    char buf[8192];
    const ssize_t n = ::recv(listener->fd.get(), buf, sizeof(buf), 0);
    ASSERT_GT(n, 0) << "nothing rebroadcast";
    absl::StatusOr<Event> event = ParseKernelUevent(absl::string_view(buf, n));
    if (event.ok() && event->devpath == absl::StrCat(kPrefix, "/rebroadcast")) {
      got = true;
      // Handled before it was re-sent.
      EXPECT_EQ(recorder.RunsUnder(kPrefix).size(), 1u);
      EXPECT_EQ(event->seqnum, kBase);
    }
  }
  EXPECT_TRUE(got);
}

TEST_F(DaemonNetlinkTest, MonitorKernelPrintsRawUevents) {
  absl::StatusOr<BackgroundCommand> monitor = BackgroundCommand::Start(
      {testing::HotringBinary(), "monitor", "--kernel", "--env", "--count", "3"});
  ASSERT_TRUE(monitor.ok());
  ASSERT_TRUE(monitor->WaitForErr("monitoring kernel uevents")) << monitor->ErrSoFar();
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok());
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(injector->Send(TestUevent(i, absl::StrCat("mon", i))).ok());
  }
  absl::StatusOr<CommandResult> out = monitor->Wait(absl::Seconds(20));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_code, 0) << out->err;
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_NE(out->out.find(absl::StrCat("add ", kPrefix, "/mon", i, " (hotring_test)")),
              std::string::npos)
        << out->out;
  }
  EXPECT_NE(out->out.find("[not from the kernel]"), std::string::npos);
  EXPECT_NE(out->out.find(absl::StrCat("SEQNUM=", kBase + 1)), std::string::npos);
}

}  // namespace
}  // namespace hotring::hotplug

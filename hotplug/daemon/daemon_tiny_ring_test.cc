// The daemon's completion queue overflowing under load: `hotring daemon --ring-entries 2` (a
// submission queue of 2 entries and a completion queue of 4) is stopped while a burst of
// kernel-format uevents fills its netlink socket, then resumed: one multishot receive alone
// posts far more completions than the CQ holds, and handlers add their own (pidfd waits, pipe
// reads). The kernel keeps the overflow (IORING_FEAT_NODROP) and the daemon must reap it:
// every event handled once, in SEQNUM order per DEVPATH, nothing dropped, counters adding up,
// and the overflow seen (ring_cq_overflows) with no completion lost (ring_cq_lost). The same
// burst against a --max-pending far below it: the netlink reader waits for room instead of
// dropping, the uevents wait in the socket, and again nothing is lost.
#include <signal.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/event.h"
#include "testing/daemon_assertions.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::Counters;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::HandlerRecorder;
using ::hotring::testing::HandlerRun;
using ::hotring::testing::MakeUevent;
using ::hotring::testing::UeventInjector;

constexpr uint64_t kBase = 1'000'000'000'000ULL;  // far above any host SEQNUM
constexpr char kPrefix[] = "/devices/virtual/hotring_test";

class DaemonTinyRingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const absl::Status entered = testing::EnterPrivateNetworkNamespace();
    ASSERT_TRUE(entered.ok()) << entered;
  }


  // Starts a tiny-ring daemon, stops it, injects `count` uevents (event i on device
  // i % devices), resumes it and settles.
  static DaemonProcess BurstIntoStoppedDaemon(std::vector<std::string> args, uint64_t count,
                                              uint64_t devices) {
    args.insert(args.end(), {"--ring-entries", "2", "--netlink-trust-userspace",
                             "--expect-seqnum", absl::StrCat(kBase), "--seqnum-file", ""});
    absl::StatusOr<DaemonProcess> daemon =
        DaemonProcess::Start({.args = std::move(args), .netlink = true});
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
    EXPECT_TRUE(injector.ok()) << injector.status();
    EXPECT_EQ(::kill(daemon->pid(), SIGSTOP), 0);
    for (uint64_t i = 0; i < count; ++i) {
      absl::StatusOr<Event> event = MakeUevent(
          "add", absl::StrCat(kPrefix, "/dev", i % devices), "hotring_test", kBase + i);
      EXPECT_TRUE(event.ok());
      const absl::Status sent = injector->Send(*event);
      EXPECT_TRUE(sent.ok()) << sent;
      if (!sent.ok()) break;
    }
    EXPECT_EQ(::kill(daemon->pid(), SIGCONT), 0);
    const absl::Status settled = daemon->SettleWhileProgressing();
    EXPECT_TRUE(settled.ok()) << settled << daemon->Log();
    return std::move(*daemon);
  }

  // What every burst must show: each injected event received and handled (host uevents, which
  // reach every network namespace, may add to both counts), nothing dropped, no netlink
  // overrun, the CQ overflowed and no completion lost.
  static void ExpectLossless(const DaemonProcess& daemon, uint64_t count) {
    const std::map<std::string, uint64_t> status = Counters(daemon);
    EXPECT_GE(status.at("received"), count);
    EXPECT_EQ(status.at("handled"), status.at("received")) << daemon.Log();
    EXPECT_EQ(status.at("failed"), 0u);
    EXPECT_EQ(status.at("timed_out"), 0u);
    EXPECT_EQ(status.at("held") + status.at("queued") + status.at("running"), 0u);
    EXPECT_EQ(status.at("netlink_overruns"), 0u);
    EXPECT_EQ(status.at("resyncs"), 0u);
    for (const auto& [key, value] : status) {
      if (key.rfind("dropped_", 0) == 0) {
        EXPECT_EQ(value, 0u) << key;
      }
    }
    EXPECT_GT(status.at("ring_cq_overflows"), 0u) << "the CQ never overflowed: no test";
    EXPECT_EQ(status.at("ring_cq_lost"), 0u);
  }
};

TEST_F(DaemonTinyRingTest, BurstWithoutHandlerLosesNothing) {
  constexpr uint64_t kCount = 20000;
  DaemonProcess daemon = BurstIntoStoppedDaemon({}, kCount, kCount);
  ExpectLossless(daemon, kCount);
  EXPECT_TRUE(daemon.Stop().ok()) << daemon.Log();
}

TEST_F(DaemonTinyRingTest, BurstWithHandlersRunsEachOnceInOrderPerDevice) {
  constexpr uint64_t kCount = 600;
  constexpr uint64_t kDevices = 40;
  HandlerRecorder recorder;
  DaemonProcess daemon =
      BurstIntoStoppedDaemon({"--exec", recorder.handler()}, kCount, kDevices);
  ExpectLossless(daemon, kCount);
  std::set<uint64_t> seen;
  std::map<std::string, uint64_t> last_per_device;
  for (const HandlerRun& run : recorder.Runs()) {
    if (run.devpath.rfind(kPrefix, 0) != 0) continue;  // a host uevent
    uint64_t seqnum = 0;
    ASSERT_TRUE(absl::SimpleAtoi(run.seqnum, &seqnum)) << run.seqnum;
    EXPECT_TRUE(seen.insert(seqnum).second) << "ran twice: " << seqnum;
    EXPECT_EQ(run.devpath, absl::StrCat(kPrefix, "/dev", (seqnum - kBase) % kDevices));
    uint64_t& last = last_per_device[run.devpath];
    EXPECT_LT(last, seqnum) << run.devpath << " out of order";
    last = seqnum;
  }
  EXPECT_EQ(seen.size(), kCount);
  if (!seen.empty()) {
    EXPECT_EQ(*seen.begin(), kBase);
    EXPECT_EQ(*seen.rbegin(), kBase + kCount - 1);
  }
  EXPECT_TRUE(daemon.Stop().ok()) << daemon.Log();
}

TEST_F(DaemonTinyRingTest, MaxPendingPausesNetlinkReadingInsteadOfDropping) {
  constexpr uint64_t kCount = 300;
  constexpr uint64_t kDevices = 30;
  HandlerRecorder recorder;
  DaemonProcess daemon = BurstIntoStoppedDaemon(
      {"--exec", recorder.handler(), "--max-pending", "8"}, kCount, kDevices);
  ExpectLossless(daemon, kCount);
  EXPECT_GT(Counters(daemon).at("netlink_paused"), 0u) << "the bound was never reached: no test";
  std::set<std::string> seen;
  for (const HandlerRun& run : recorder.Runs()) {
    if (run.devpath.rfind(kPrefix, 0) == 0) {
      EXPECT_TRUE(seen.insert(run.seqnum).second) << run.seqnum;
    }
  }
  EXPECT_EQ(seen.size(), kCount);
  EXPECT_TRUE(daemon.Stop().ok()) << daemon.Log();
}

}  // namespace
}  // namespace hotring::hotplug

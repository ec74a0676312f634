// Process creation failing with ENOMEM under a real `hotring daemon`: the daemon runs under a
// seccomp filter whose supervisor (testing::CloneGate, a thread of this test) makes each clone,
// clone3, fork and vfork that would create a process fail with ENOMEM while the fault is on,
// and lets them through otherwise. The events arriving meanwhile fail, each counted and logged
// with the cause; the daemon keeps answering; once processes can be made again, the next
// events' handlers run, without a restart.
#include <errno.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/clone_gate.h"
#include "testing/daemon_assertions.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::CloneGate;
using ::hotring::testing::ControlSender;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::HandlerRecorder;
using ::hotring::testing::HandlerRun;
using ::hotring::testing::TestEvent;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::hotring::testing::Counters;
using ::hotring::testing::SendAndSettle;
using ::hotring::testing::Seqnums;

TEST(DaemonEnomemTest, ProcessCreationFailingWithEnomemFailsTheEventAndHandlersRunAgain) {
  absl::StatusOr<std::unique_ptr<CloneGate>> gate = CloneGate::Create(ENOMEM);
  ASSERT_TRUE(gate.ok()) << gate.status();
  HandlerRecorder recorder;
  absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start(
      {.args = {"--exec", recorder.handler(), "--log-level", "info"},
       .command_prefix = (*gate)->CommandPrefix()});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  SendAndSettle(*daemon, TestEvent(1, "/devices/enomem/1"));
  ASSERT_THAT(Seqnums(recorder.Runs()), ElementsAre("1")) << daemon->Log();
  const uint64_t allowed_before = (*gate)->allowed();
  EXPECT_GE(allowed_before, 1u);  // the handler's own process went through the gate

  (*gate)->SetFailing(true);
  for (uint64_t seqnum = 2; seqnum <= 4; ++seqnum) {
    SendAndSettle(*daemon, TestEvent(seqnum, absl::StrCat("/devices/enomem/", seqnum)));
  }
  std::map<std::string, uint64_t> counters = Counters(*daemon);
  EXPECT_EQ(counters["received"], 4u);
  EXPECT_EQ(counters["handled"], 1u);
  EXPECT_EQ(counters["failed"], 3u) << daemon->Log();
  // Each failed event tried once: the spawner keeps its method and does not retry in a loop.
  EXPECT_EQ((*gate)->failed(), 3u);
  const std::string log = daemon->Log();
  EXPECT_THAT(log, HasSubstr("clone: Cannot allocate memory"));
  for (const char* seqnum : {"SEQNUM=2", "SEQNUM=3", "SEQNUM=4"}) {
    EXPECT_THAT(log, HasSubstr(seqnum)) << log;
  }
  EXPECT_THAT(Seqnums(recorder.Runs()), ElementsAre("1"));

  (*gate)->SetFailing(false);
  SendAndSettle(*daemon, TestEvent(5, "/devices/enomem/5"));
  SendAndSettle(*daemon, TestEvent(6, "/devices/enomem/2"));
  counters = Counters(*daemon);
  EXPECT_EQ(counters["received"], 6u);
  EXPECT_EQ(counters["handled"], 3u) << daemon->Log();
  EXPECT_EQ(counters["failed"], 3u);
  EXPECT_EQ(counters["pending"], 0u);
  EXPECT_THAT(Seqnums(recorder.Runs()), ElementsAre("1", "5", "6"));
  EXPECT_TRUE(daemon->Stop().ok()) << daemon->Log();
}

}  // namespace
}  // namespace hotring::hotplug

#include "io/process/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::io::process {
namespace {

std::unique_ptr<io::Reactor> MakeReactor() {
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  EXPECT_TRUE(reactor.ok()) << reactor.status();
  return reactor.ok() ? std::move(*reactor) : nullptr;
}

// True when we have no child processes at all (running or zombie).
bool HasNoChildren() {
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

class ChildProcessTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(HasNoChildren()); }
};

TEST_F(ChildProcessTest, ForkedBodyExitCodeComesBackThroughWait) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  ASSERT_NE(reactor, nullptr);
  absl::StatusOr<ChildProcess> child = ForkChild([] { return 7; });
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(child->group(), ProcessGroup::kShared);
  EXPECT_NE(child->pid(), ::getpid());
  const absl::StatusOr<io::ExitStatus> exit = reactor->BlockOn(child->Wait(*reactor));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 7);
  EXPECT_EQ(DescribeExit(*exit), "exit code 7");
  EXPECT_TRUE(child->reaped());
  // Reaped once, by its owner only.
  EXPECT_EQ(child->TryReap().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DescribeWaitStatusTest, SaysHowAChildEnded) {
  EXPECT_EQ(DescribeWaitStatus(0), "exit 0");
  EXPECT_EQ(DescribeWaitStatus(4 << 8), "exit 4");    // what waitpid reports for exit(4)
  EXPECT_EQ(DescribeWaitStatus(SIGKILL), "signal 9");  // and for a SIGKILL
  EXPECT_EQ(DescribeWaitStatus(0x137f), "wait status 4991");  // stopped by SIGSTOP
}

TEST_F(ChildProcessTest, SignalReachesTheChildAndWaitReportsIt) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  ASSERT_NE(reactor, nullptr);
  absl::StatusOr<ChildProcess> child = ForkChild([] {
    for (;;) ::pause();
    return 0;
  });
  ASSERT_TRUE(child.ok()) << child.status();
  const absl::StatusOr<std::optional<io::ExitStatus>> running = child->TryReap();
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_FALSE(running->has_value());
  // A forked child shares our group: it has none of its own to signal.
  EXPECT_EQ(child->SignalGroup(SIGTERM).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(child->Signal(SIGTERM).ok());
  const absl::StatusOr<io::ExitStatus> exit = reactor->BlockOn(child->Wait(*reactor));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->exited);
  EXPECT_EQ(exit->code, SIGTERM);
  EXPECT_EQ(DescribeExit(*exit), "killed by signal 15");
  EXPECT_EQ(child->Signal(SIGTERM).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ChildProcessTest, DroppingARunningChildKillsAndReapsIt) {
  pid_t pid = 0;
  {
    absl::StatusOr<ChildProcess> child = ForkChild([] {
      for (;;) ::pause();
      return 0;
    });
    ASSERT_TRUE(child.ok()) << child.status();
    pid = child->pid();
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  // Gone, not even a zombie (TearDown checks there is no child left at all).
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(ChildProcessTest, MovedChildIsOwnedOnceAndDroppingAWaitLeavesItToTheOwner) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  ASSERT_NE(reactor, nullptr);
  absl::StatusOr<ChildProcess> forked = ForkChild([] {
    for (;;) ::pause();
    return 0;
  });
  ASSERT_TRUE(forked.ok()) << forked.status();
  ChildProcess owner = std::move(*forked);
  EXPECT_EQ(forked->pidfd(), -1);
  {
    Task<absl::StatusOr<io::ExitStatus>> wait = owner.Wait(*reactor);
    wait.Start();  // parks on the pidfd
    EXPECT_FALSE(wait.done());
  }  // the wait is dropped (its poll cancelled); the child still runs, still ours
  EXPECT_EQ(::kill(owner.pid(), 0), 0);
  EXPECT_FALSE(owner.reaped());
  owner.KillAndReap();
  EXPECT_TRUE(owner.reaped());
  // The reactor settles the cancelled poll.
  ASSERT_TRUE(reactor->BlockOn([](io::Reactor& r) -> Task<void> {
    (void)co_await io::Nop(r);
  }(*reactor)).ok());
}

}  // namespace
}  // namespace hotring::io::process

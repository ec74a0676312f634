#include "hotplug/rules/mdev_seq.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::rules {
namespace {

TEST(DecideSeqTurnTest, SeedFileIsEmptyOrANewline) {
  EXPECT_EQ(DecideSeqTurn("", 7), SeqTurn::kSeed);
  EXPECT_EQ(DecideSeqTurn("\n", 7), SeqTurn::kSeed);
}

TEST(DecideSeqTurnTest, ComparesTheLeadingNumber) {
  EXPECT_EQ(DecideSeqTurn("7", 7), SeqTurn::kOurTurn);
  EXPECT_EQ(DecideSeqTurn("7\n", 7), SeqTurn::kOurTurn);  // atoll stops at the newline
  EXPECT_EQ(DecideSeqTurn("8", 7), SeqTurn::kPassed);
  EXPECT_EQ(DecideSeqTurn("100", 99), SeqTurn::kPassed);
  EXPECT_EQ(DecideSeqTurn("6", 7), SeqTurn::kWait);
  EXPECT_EQ(DecideSeqTurn("junk", 7), SeqTurn::kWait);  // reads as 0
}

class SeqFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mdev_seq_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    dir_fd_ = UniqueFd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY));
    ASSERT_TRUE(dir_fd_.valid());
  }
  void TearDown() override { (void)!std::system(("rm -rf " + dir_).c_str()); }

  void Write(const std::string& text) { std::ofstream(dir_ + "/mdev.seq") << text; }
  std::string Read() {
    std::ifstream in(dir_ + "/mdev.seq");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
  UniqueFd dir_fd_;
};

TEST_F(SeqFileTest, NoFileNoTicket) {
  SeqTicket ticket = WaitForSeqTurn(dir_fd_.get(), 5);
  EXPECT_FALSE(ticket.active());
  ticket.Finish();
  EXPECT_EQ(::access((dir_ + "/mdev.seq").c_str(), F_OK), -1);
}

TEST_F(SeqFileTest, SeedIsClaimedThenMovedOn) {
  Write("\n");
  SeqTicket ticket = WaitForSeqTurn(dir_fd_.get(), 41);
  ASSERT_TRUE(ticket.active());
  EXPECT_EQ(Read(), "41");  // claimed at once, before the event is handled
  ticket.Finish();
  EXPECT_EQ(Read(), "42");
}

TEST_F(SeqFileTest, OurTurnWritesTheNext) {
  Write("9");
  SeqTicket ticket = WaitForSeqTurn(dir_fd_.get(), 9);
  ASSERT_TRUE(ticket.active());
  ticket.Finish();
  EXPECT_EQ(Read(), "10");
}

TEST_F(SeqFileTest, AheadOfUsIsLeftAlone) {
  Write("100");
  SeqTicket ticket = WaitForSeqTurn(dir_fd_.get(), 50);
  EXPECT_FALSE(ticket.active());
  ticket.Finish();
  EXPECT_EQ(Read(), "100");
}

TEST_F(SeqFileTest, AnEarlierHelperThatNeverFinishesTimesOut) {
  Write("3");
  // A short budget: the outcome (run anyway, then move the file on) is what is checked.
  SeqTicket ticket = WaitForSeqTurn(dir_fd_.get(), 5, absl::Milliseconds(64));
  ASSERT_TRUE(ticket.active());
  ticket.Finish();
  EXPECT_EQ(Read(), "6");
}

// Whether `pid` is waiting in sigtimedwait now (/proc/PID/syscall starts with the number of
// the system call it is blocked in): WaitForSeqTurn's wait for a SIGCHLD.
bool InSigtimedwait(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
  long number = -1;
  if (!(in >> number)) return false;
#ifdef SYS_rt_sigtimedwait_time64
  if (number == SYS_rt_sigtimedwait_time64) return true;
#endif
  return number == SYS_rt_sigtimedwait;
}

TEST_F(SeqFileTest, WaitsForTheEarlierHelper) {
  Write("4");
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The earlier helper: finishes SEQNUM 4 once its parent waits for its turn (so the wait,
    // not a turn already come, is what is tested), then pokes it (SIGCHLD is sent by the kernel
    // when it exits, too). Bounded: a parent that never waits fails below instead.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (!InSigtimedwait(parent) && absl::Now() < deadline) ::usleep(1000);
    UniqueFd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY));
    SeqTicket ticket = WaitForSeqTurn(dir.get(), 4);
    ticket.Finish();
    ::_exit(ticket.active() ? 1 : 0);
  }
  SeqTicket ticket = WaitForSeqTurn(dir_fd_.get(), 5, absl::Seconds(30));
  ASSERT_TRUE(ticket.active());
  EXPECT_EQ(Read(), "5");  // the earlier helper's Finish, not our timeout
  ticket.Finish();
  EXPECT_EQ(Read(), "6");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SignalOtherMdevsTest, NoProcIsNoError) {
  SignalOtherMdevs(::getpid(), "/nonexistent/proc");  // must simply return
  SUCCEED();
}

}  // namespace
}  // namespace hotring::hotplug::rules

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

// A child that waits (up to a minute) for SIGUSR1 and then exits 10 if a SIGCHLD is pending
// for it, else 20. SIGCHLD and SIGUSR1 are blocked in the caller before the fork (so neither
// is lost before the child looks), and a signal sent before SIGUSR1 is pending by then.
pid_t StartSigchldWitness() {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  const struct timespec minute = {.tv_sec = 60, .tv_nsec = 0};
  if (::sigtimedwait(&usr1, nullptr, &minute) != SIGUSR1) ::_exit(30);
  sigset_t pending;
  sigpending(&pending);
  ::_exit(sigismember(&pending, SIGCHLD) ? 10 : 20);
}

// Asks the witness and reaps it: true if it got a SIGCHLD.
bool GotSigchld(pid_t witness) {
  ::kill(witness, SIGUSR1);
  int status = 0;
  if (::waitpid(witness, &status, 0) != witness) return false;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 30) << "witness status " << status;
  return WIFEXITED(status) && WEXITSTATUS(status) == 10;
}

class SignalOtherMdevsTest : public SeqFileTest {
 protected:
  void SetUp() override {
    SeqFileTest::SetUp();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGUSR1);
    ASSERT_EQ(sigprocmask(SIG_BLOCK, &set, &old_mask_), 0);
  }
  void TearDown() override {
    // The witnesses' exits left a SIGCHLD pending here: take it before unblocking.
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    const struct timespec now = {};
    while (::sigtimedwait(&chld, nullptr, &now) == SIGCHLD) {
    }
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    SeqFileTest::TearDown();
  }

  // A /proc-like entry for `pid` whose cmdline is `cmdline` (NUL-separated arguments).
  void FakeProcess(const std::string& pid, const std::string& cmdline) {
    ASSERT_EQ(::mkdir((dir_ + "/" + pid).c_str(), 0755), 0);
    std::ofstream(dir_ + "/" + pid + "/cmdline") << cmdline;
  }

  static bool SigchldPendingHere() {
    sigset_t pending;
    sigpending(&pending);
    return sigismember(&pending, SIGCHLD);
  }

  sigset_t old_mask_;
};

// The helpers that wait are the processes whose argv[0] is mdev, under any directory; nobody
// else is poked, and the caller never pokes itself.
TEST_F(SignalOtherMdevsTest, PokesEveryOtherMdevAndNobodyElse) {
  const pid_t by_path = StartSigchldWitness();
  const pid_t bare = StartSigchldWitness();
  const pid_t mdevd = StartSigchldWitness();
  const pid_t applet = StartSigchldWitness();
  ASSERT_GT(by_path, 0);
  ASSERT_GT(bare, 0);
  ASSERT_GT(mdevd, 0);
  ASSERT_GT(applet, 0);
  FakeProcess(std::to_string(by_path), std::string("/sbin/mdev\0", 11));
  FakeProcess(std::to_string(bare), std::string("mdev\0", 5));
  FakeProcess(std::to_string(mdevd), std::string("mdevd\0-O\0", 9));
  FakeProcess(std::to_string(applet), std::string("busybox\0mdev\0", 13));
  FakeProcess(std::to_string(::getpid()), std::string("mdev\0", 5));
  FakeProcess("self", std::string("mdev\0", 5));
  ASSERT_FALSE(SigchldPendingHere());
  SignalOtherMdevs(::getpid(), dir_);
  EXPECT_FALSE(SigchldPendingHere()) << "poked itself";
  EXPECT_TRUE(GotSigchld(by_path)) << "/sbin/mdev";
  EXPECT_TRUE(GotSigchld(bare)) << "mdev";
  EXPECT_FALSE(GotSigchld(mdevd)) << "mdevd";
  EXPECT_FALSE(GotSigchld(applet)) << "busybox mdev";
}

// No /proc (a bare chroot): nothing to look at, so nobody is poked, and no error.
TEST_F(SignalOtherMdevsTest, NoProcPokesNobody) {
  const pid_t witness = StartSigchldWitness();
  ASSERT_GT(witness, 0);
  FakeProcess(std::to_string(witness), std::string("mdev\0", 5));
  SignalOtherMdevs(::getpid(), dir_ + "/no-proc-here");
  EXPECT_FALSE(GotSigchld(witness));
}

}  // namespace
}  // namespace hotring::hotplug::rules

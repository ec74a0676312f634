#include "ipc/sysv_bench.h"

#include <sched.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/json.h"
#include "gtest/gtest.h"
#include "io/reactor.h"
#include "ipc/bench_cli.h"
#include "ipc/sysv_queue.h"

namespace hotring::ipc {
namespace {

// Every test runs in a private IPC namespace: queue counts are ours alone, and tests running in
// parallel (or a leak elsewhere on the machine) cannot disturb them.
class SysvBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::unshare(CLONE_NEWIPC), 0) << "unshare(CLONE_NEWIPC) needs root: " << errno;
    absl::StatusOr<int> queues = CountSysvQueues();
    ASSERT_TRUE(queues.ok()) << queues.status();
    ASSERT_EQ(*queues, 0);
    absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
    ASSERT_TRUE(reactor.ok()) << reactor.status();
    reactor_ = std::move(*reactor);
  }

  int Queues() {
    absl::StatusOr<int> queues = CountSysvQueues();
    EXPECT_TRUE(queues.ok()) << queues.status();
    return queues.value_or(-1);
  }

  absl::StatusOr<SysvBenchResult> Run(SysvBenchOptions options) {
    return reactor_->BlockOn(RunSysvBench(*reactor_, options, nullptr));
  }

  std::unique_ptr<io::Reactor> reactor_;
};

// Checks what every successful run must satisfy.
void ExpectConsistent(const SysvBenchResult& result, int queues) {
  ASSERT_EQ(result.queues, queues);
  ASSERT_EQ(result.workers.size(), static_cast<size_t>(2 * queues));
  uint64_t sum = 0;
  for (int i = 0; i < queues; ++i) {
    const SysvWorkerResult& sender = result.workers[i];
    const SysvWorkerResult& partner = result.workers[i + queues];
    EXPECT_EQ(sender.thread, i);
    EXPECT_TRUE(sender.sender);
    EXPECT_EQ(partner.thread, i + queues);
    EXPECT_FALSE(partner.sender);
    EXPECT_EQ(sender.queue, i);
    EXPECT_EQ(partner.queue, i);
    EXPECT_EQ(sender.msqid, partner.msqid);
    EXPECT_EQ(sender.cpu, partner.cpu) << "a pair shares one CPU";
    // Ping-pong: the partner answers every message the sender sent, so their counts differ by
    // at most the one message in flight when the run stopped.
    const int64_t diff = static_cast<int64_t>(partner.rounds) - static_cast<int64_t>(sender.rounds);
    EXPECT_GE(diff, 0) << "pair " << i;
    EXPECT_LE(diff, 1) << "pair " << i;
    EXPECT_GT(sender.rounds, 0u) << "pair " << i << " never ran";
    sum += sender.rounds + partner.rounds;
  }
  EXPECT_EQ(result.total, sum);
  EXPECT_EQ(result.interrupted_by, 0);
}

TEST_F(SysvBenchTest, ShortRunCountsAddUpAndStopsOnTime) {
  SysvBenchOptions options;
  options.queues = 2;
  options.duration = absl::Milliseconds(300);
  const MonoTime before = MonoNow();
  absl::StatusOr<SysvBenchResult> result = Run(options);
  const double wall = absl::ToDoubleSeconds(Since(before, MonoNow()));
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectConsistent(*result, 2);
  EXPECT_GE(result->elapsed_seconds, 0.3);
  // Stopping means: the measured window ends at the deadline, and every worker is joined soon
  // after (generous bounds: the machine may be loaded).
  EXPECT_LT(result->elapsed_seconds, 0.3 + 2.0);
  EXPECT_LT(wall, 0.3 + 5.0);
  EXPECT_GT(result->per_second(), 0);
  EXPECT_EQ(Queues(), 0) << "a queue was left behind";
}

TEST_F(SysvBenchTest, PairsArePinnedRoundRobinOverAllowedCpus) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  SysvBenchOptions options;
  options.queues = 5;
  options.duration = absl::Milliseconds(100);
  absl::StatusOr<SysvBenchResult> result = Run(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectConsistent(*result, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(result->workers[i].cpu, cpus[i % cpus.size()]);
  EXPECT_EQ(Queues(), 0);
}

TEST_F(SysvBenchTest, UnpinnedRunWorks) {
  SysvBenchOptions options;
  options.queues = 3;
  options.duration = absl::Milliseconds(100);
  options.pin = false;
  absl::StatusOr<SysvBenchResult> result = Run(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectConsistent(*result, 3);
  for (const SysvWorkerResult& w : result->workers) EXPECT_EQ(w.cpu, -1);
  EXPECT_EQ(Queues(), 0);
}

TEST_F(SysvBenchTest, QueueRemovedDuringTheRunIsAnErrorAndNothingLeaks) {
  SysvBenchOptions options;
  options.queues = 2;
  options.duration = absl::Seconds(30);
  std::atomic<bool> removed{false};
  std::thread saboteur([&] {
    // Wait for the queues, then remove one behind the benchmark's back.
    for (int i = 0; i < 500 && !removed; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
      msqid_ds ds{};
      const int max_index = ::msgctl(0, MSG_INFO, &ds);
      for (int index = 0; index <= max_index; ++index) {
        const int id = ::msgctl(index, MSG_STAT, &ds);
        if (id >= 0 && ::msgctl(id, IPC_RMID, nullptr) == 0) {
          removed = true;
          break;
        }
      }
    }
  });
  const MonoTime before = MonoNow();
  absl::StatusOr<SysvBenchResult> result = Run(options);
  saboteur.join();
  ASSERT_TRUE(removed);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsAborted(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("was removed"), absl::string_view::npos);
  // The failure ended the run at once, not after the 30 seconds asked for.
  EXPECT_LT(absl::ToDoubleSeconds(Since(before, MonoNow())), 20);
  EXPECT_EQ(Queues(), 0);
}

TEST_F(SysvBenchTest, BadOptionsAreRejectedBeforeAnyQueueExists) {
  SysvBenchOptions zero;
  zero.queues = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(Run(zero).status()));
  SysvBenchOptions negative;
  negative.duration = absl::Seconds(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(Run(negative).status()));
  SysvBenchOptions too_many;
  too_many.queues = kSysvMaxQueues + 1;
  EXPECT_TRUE(absl::IsInvalidArgument(Run(too_many).status()));
  EXPECT_EQ(Queues(), 0);

  EXPECT_EQ(BenchSysvCommand({"--queues", "0"}), 2);
  EXPECT_EQ(BenchSysvCommand({"--seconds", "-1"}), 2);
  EXPECT_EQ(BenchSysvCommand({"--seconds", "0"}), 2);
  EXPECT_EQ(BenchSysvCommand({"--queues"}), 2);
  EXPECT_EQ(BenchSysvCommand({"--bogus"}), 2);
  EXPECT_EQ(Queues(), 0);
}

TEST_F(SysvBenchTest, JsonReportCarriesTheTotals) {
  SysvBenchOptions options;
  options.queues = 1;
  options.duration = absl::Milliseconds(100);
  absl::StatusOr<SysvBenchResult> result = Run(options);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string json = FormatSysvResult(*result, /*json=*/true);
  absl::StatusOr<double> total = JsonNumberField(json, "total");
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(*total, static_cast<double>(result->total));
  const std::string text = FormatSysvResult(*result, /*json=*/false);
  EXPECT_NE(text.find("Result matrix:"), std::string::npos);
  EXPECT_NE(text.find(absl::StrCat("Total: ", result->total)), std::string::npos);
}

// Runs `hotring bench sysv` in a forked child, signals it once its queues exist, and returns its
// wait status; the queues must be gone afterwards.
int SignalMidRun(int signo) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(BenchSysvCommand({"--queues", "3", "--seconds", "60"}));
  }
  EXPECT_GT(child, 0);
  bool started = false;
  for (int i = 0; i < 1000 && !started; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    absl::StatusOr<int> queues = CountSysvQueues();
    started = queues.ok() && *queues == 3;
  }
  EXPECT_TRUE(started) << "the benchmark never created its queues";
  absl::SleepFor(absl::Milliseconds(100));  // let it run a little
  EXPECT_EQ(::kill(child, signo), 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1000 && done == 0; ++i) {
    done = ::waitpid(child, &status, WNOHANG);
    if (done == 0) absl::SleepFor(absl::Milliseconds(10));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    ADD_FAILURE() << "the benchmark did not stop within 10 s of signal " << signo;
  }
  return status;
}

TEST_F(SysvBenchTest, SigintStopsTheRunAndRemovesTheQueues) {
  const int status = SignalMidRun(SIGINT);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of handling it";
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  EXPECT_EQ(Queues(), 0);
}

TEST_F(SysvBenchTest, SigtermStopsTheRunAndRemovesTheQueues) {
  const int status = SignalMidRun(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_EQ(Queues(), 0);
}

}  // namespace
}  // namespace hotring::ipc

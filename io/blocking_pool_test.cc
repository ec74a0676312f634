#include "io/blocking_pool.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "gtest/gtest.h"
#include "io/ops.h"
#include "io/reactor.h"
#include "io/remote_inbox.h"

namespace hotring::io {
namespace {

std::unique_ptr<Reactor> MakeReactor() {
  absl::StatusOr<std::unique_ptr<Reactor>> r = Reactor::Create();
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(*r);
}

// Jobs block in Enter() until the test opens the gate; the test can wait until N are inside.
class Gate {
 public:
  void Enter() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++inside_;
    ++entered_;
    peak_ = std::max(peak_, inside_);
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
    --inside_;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Functional bound only: a failure here means the jobs never got there.
  bool WaitInside(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return inside_ >= n; });
  }
  int peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }
  int entered() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entered_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int inside_ = 0;
  int entered_ = 0;
  int peak_ = 0;
};

// Counts destructions of what a job captured or returned.
struct Tracked {
  explicit Tracked(std::shared_ptr<std::atomic<int>> d) : destroyed(std::move(d)) {}
  Tracked(Tracked&& o) noexcept : destroyed(std::move(o.destroyed)) {}
  Tracked& operator=(Tracked&&) = delete;
  ~Tracked() {
    if (destroyed) destroyed->fetch_add(1);
  }
  std::shared_ptr<std::atomic<int>> destroyed;
};

// Drives the reactor until a task that was already started (Start()) has finished, and returns
// its value. (BlockOn would resume it a second time.)
template <typename T>
T Finish(Reactor& reactor, Task<T>& task) {
  for (int i = 0; i < 100000 && !task.done(); ++i) {
    const absl::StatusOr<size_t> ran = reactor.RunOnce(true);
    if (!ran.ok()) break;
  }
  EXPECT_TRUE(task.done()) << "the task never finished";
  if (!task.done()) return T();
  return task.TakeResult();
}

// Drives the reactor until no operation is in flight (cancelled reads have come back).
void Drain(Reactor& reactor) {
  for (int i = 0; i < 1000 && reactor.in_flight() > 0; ++i) {
    ASSERT_TRUE(reactor.RunOnce(true).ok());
  }
  EXPECT_EQ(reactor.in_flight(), 0u);
}

TEST(BlockingPoolTest, ReturnsTheFunctionsResultOfEveryShape) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 2});
  const std::thread::id reactor_thread = std::this_thread::get_id();

  absl::StatusOr<std::thread::id> where =
      reactor->BlockOn(pool.Run(*reactor, [] { return std::this_thread::get_id(); }));
  ASSERT_TRUE(where.ok()) << where.status();
  EXPECT_NE(*where, reactor_thread) << "the job ran on the reactor's thread";

  absl::StatusOr<int> value = reactor->BlockOn(pool.Run(*reactor, [] { return 42; }));
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, 42);

  const absl::Status failed = reactor->BlockOn(
      pool.Run(*reactor, [] { return absl::NotFoundError("no such module"); }));
  EXPECT_EQ(failed.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(failed.message(), "no such module");

  absl::StatusOr<std::string> text = reactor->BlockOn(
      pool.Run(*reactor, []() -> absl::StatusOr<std::string> { return std::string("ok"); }));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "ok");

  std::atomic<bool> ran{false};
  const absl::Status void_job = reactor->BlockOn(pool.Run(*reactor, [&ran] { ran = true; }));
  EXPECT_TRUE(void_job.ok()) << void_job;
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST(BlockingPoolTest, WorkersBlockEverySignal) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 1});
  absl::StatusOr<bool> blocked = reactor->BlockOn(pool.Run(*reactor, [] {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    return sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1 &&
           sigismember(&mask, SIGCHLD) == 1;
  }));
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  EXPECT_TRUE(*blocked) << "a worker would take the daemon's SIGTERM";
}

TEST(BlockingPoolTest, ManyConcurrentJobsAllCompleteOnBoundedThreads) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  constexpr size_t kThreads = 4;
  constexpr int kJobs = 500;
  BlockingPool pool({.max_threads = kThreads});
  std::vector<int> results(kJobs, -1);
  std::mutex threads_mutex;
  std::set<std::thread::id> threads_used;
  TaskScope scope;
  for (int i = 0; i < kJobs; ++i) {
    scope.Spawn([](Reactor& reactor, BlockingPool& pool, int i, int& out, std::mutex& m,
                   std::set<std::thread::id>& used) -> Task<void> {
      absl::StatusOr<int> r = co_await pool.Run(reactor, [i, &m, &used] {
        std::lock_guard<std::mutex> lock(m);
        used.insert(std::this_thread::get_id());
        return i * 3;
      });
      out = r.ok() ? *r : -2;
    }(*reactor, pool, i, results[i], threads_mutex, threads_used));
  }
  const absl::Status joined = reactor->BlockOn([](TaskScope& s) -> Task<void> {
    co_await s.Join();
  }(scope));
  ASSERT_TRUE(joined.ok()) << joined;
  for (int i = 0; i < kJobs; ++i) ASSERT_EQ(results[i], i * 3) << "job " << i;
  const BlockingPool::Stats stats = pool.stats();
  EXPECT_EQ(stats.completed, static_cast<uint64_t>(kJobs));
  EXPECT_LE(stats.threads, kThreads);
  EXPECT_LE(stats.peak_running, kThreads);
  EXPECT_LE(threads_used.size(), kThreads);
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST(BlockingPoolTest, JobsRunInParallelUpToTheBound) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 3});
  Gate gate;
  TaskScope scope;
  int finished = 0;
  for (int i = 0; i < 5; ++i) {
    scope.Spawn([](Reactor& reactor, BlockingPool& pool, Gate& gate, int& finished) -> Task<void> {
      const absl::Status s = co_await pool.Run(reactor, [&gate] { gate.Enter(); });
      if (s.ok()) ++finished;
    }(*reactor, pool, gate, finished));
  }
  // Three jobs are inside the gate at once: they run in parallel, and no fourth thread starts.
  ASSERT_TRUE(gate.WaitInside(3));
  EXPECT_EQ(pool.stats().threads, 3u);
  EXPECT_EQ(pool.stats().queued, 2u);
  // The reactor is free meanwhile: a timer completes while every worker is blocked.
  const absl::Status slept = reactor->BlockOn(
      [](Reactor& r) -> Task<absl::Status> { co_return co_await Sleep(r, absl::Milliseconds(1)); }(
          *reactor));
  EXPECT_TRUE(slept.ok()) << slept;
  EXPECT_EQ(finished, 0);
  gate.Open();
  ASSERT_TRUE(reactor->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope)).ok());
  EXPECT_EQ(finished, 5);
  EXPECT_EQ(gate.peak(), 3);
}

// Opens the gates when a test leaves early (a failed ASSERT), so that the pool's threads can be
// joined. Declared after the pool, it opens them before the pool is destroyed.
class OpenOnExit {
 public:
  explicit OpenOnExit(std::vector<Gate*> gates) : gates_(std::move(gates)) {}
  ~OpenOnExit() {
    for (Gate* g : gates_) g->Open();
  }

 private:
  std::vector<Gate*> gates_;
};

// Runs `fn` on `pool` from a task spawned in `scope`, and counts it in `finished` when it ends.
template <typename Fn>
void SpawnJob(TaskScope& scope, Reactor& reactor, BlockingPool& pool, Fn fn, std::atomic<int>& finished) {
  scope.Spawn([](Reactor& reactor, BlockingPool& pool, Fn fn, std::atomic<int>& finished) -> Task<void> {
    Task<absl::Status> task = pool.Run(reactor, std::move(fn));
    const absl::Status s = co_await std::move(task);
    EXPECT_TRUE(s.ok()) << s;
    ++finished;
  }(reactor, pool, std::move(fn), finished));
}

// Drives the reactor until `finished` reaches `n` (a functional bound, not a timing one).
bool DriveUntil(Reactor& reactor, const std::atomic<int>& finished, int n) {
  for (int i = 0; i < 200000 && finished.load() < n; ++i) {
    if (!reactor.RunOnce(false).ok()) return false;
    if (finished.load() < n) std::this_thread::yield();
  }
  return finished.load() >= n;
}

TEST(BlockingPoolTest, PastMaxBusyABusyThreadTakesTheNextJobsItself) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  Gate gate;
  BlockingPool pool({.max_threads = 4, .max_busy = 1, .stall = absl::Hours(1)});
  const OpenOnExit open({&gate});
  std::mutex mutex;
  std::vector<std::thread::id> threads;
  auto record = [&mutex, &threads] {
    std::lock_guard<std::mutex> lock(mutex);
    threads.push_back(std::this_thread::get_id());
  };
  std::atomic<int> finished{0};
  TaskScope scope;
  SpawnJob(scope, *reactor, pool, [&gate, record] { record(); gate.Enter(); }, finished);
  ASSERT_TRUE(gate.WaitInside(1));
  for (int i = 0; i < 3; ++i) SpawnJob(scope, *reactor, pool, record, finished);
  // No idle thread was woken nor started for them: the busy one will take them.
  BlockingPool::Stats stats = pool.stats();
  EXPECT_EQ(stats.threads, 1u);
  EXPECT_EQ(stats.queued, 3u);
  EXPECT_EQ(stats.left_to_busy, 3u);
  gate.Open();
  ASSERT_TRUE(reactor->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope)).ok());
  EXPECT_EQ(finished.load(), 4);
  ASSERT_EQ(threads.size(), 4u);
  for (const std::thread::id& t : threads) EXPECT_EQ(t, threads[0]);
  EXPECT_EQ(pool.stats().peak_running, 1u);
}

TEST(BlockingPoolTest, AJobWaitingElsewhereLetsAQueuedJobRunMeanwhile) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  Gate busy;
  Gate elsewhere;
  BlockingPool pool({.max_threads = 4, .max_busy = 1, .stall = absl::Hours(1)});
  const OpenOnExit open({&busy, &elsewhere});
  std::atomic<int> finished{0};
  TaskScope scope;
  SpawnJob(scope, *reactor, pool, [&busy, &elsewhere] {
    busy.Enter();
    const BlockingPool::WaitingElsewhere waiting;
    elsewhere.Enter();
  }, finished);
  ASSERT_TRUE(busy.WaitInside(1));
  std::atomic<bool> second_ran{false};
  SpawnJob(scope, *reactor, pool, [&second_ran] { second_ran = true; }, finished);
  EXPECT_EQ(pool.stats().left_to_busy, 1u);  // the first job's thread would take it
  busy.Open();
  ASSERT_TRUE(elsewhere.WaitInside(1));
  EXPECT_EQ(pool.stats().waiting_elsewhere, 1u);
  // The first job waits elsewhere now: the second one ran meanwhile, on another thread.
  ASSERT_TRUE(DriveUntil(*reactor, finished, 1));
  EXPECT_TRUE(second_ran.load());
  EXPECT_EQ(pool.stats().threads, 2u);
  elsewhere.Open();
  ASSERT_TRUE(reactor->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope)).ok());
  EXPECT_EQ(finished.load(), 2);
  EXPECT_EQ(pool.stats().waiting_elsewhere, 0u);
  // Outside a worker thread, marking changes nothing.
  const BlockingPool::WaitingElsewhere nowhere;
  EXPECT_EQ(pool.stats().waiting_elsewhere, 0u);
}

TEST(BlockingPoolTest, ABusyThreadThatStallsGetsHelpAfterTheStall) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  Gate gate;
  BlockingPool pool({.max_threads = 4, .max_busy = 1, .stall = absl::Milliseconds(1)});
  const OpenOnExit open({&gate});
  std::atomic<int> finished{0};
  TaskScope scope;
  // Blocked without saying so.
  SpawnJob(scope, *reactor, pool, [&gate] { gate.Enter(); }, finished);
  ASSERT_TRUE(gate.WaitInside(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  SpawnJob(scope, *reactor, pool, [] {}, finished);
  ASSERT_TRUE(DriveUntil(*reactor, finished, 1));
  EXPECT_EQ(gate.entered(), 1);
  EXPECT_EQ(pool.stats().left_to_busy, 0u);
  gate.Open();
  ASSERT_TRUE(reactor->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope)).ok());
  EXPECT_EQ(finished.load(), 2);
}

TEST(BlockingPoolTest, ChainsOfShortJobsPastMaxBusyAllComplete) {
  // Each chain queues its next job when the last one is back, so the queue is often one job
  // long: a thread told to take it may find that a busy one took it first, and must not be
  // counted as coming any longer (or a later job waits for nobody).
  for (const auto& [max_busy, kChains] : {std::pair<size_t, int>{1, 3}, {2, 2}, {2, 3}, {3, 2}, {3, 5}}) {
    std::unique_ptr<Reactor> reactor = MakeReactor();
    BlockingPool pool({.max_threads = 4, .max_busy = max_busy, .stall = absl::Hours(1)});
    constexpr int kJobsPerChain = 1000;
    std::atomic<int> finished{0};
    TaskScope scope;
    for (int c = 0; c < kChains; ++c) {
      scope.Spawn([](Reactor& reactor, BlockingPool& pool, int c, int chains, std::atomic<int>& finished) -> Task<void> {
        for (int i = 0; i < kJobsPerChain; ++i) {
          auto job = [n = i * chains + c] {
            // Some microseconds of work, as an event's rules take.
            const MonoTime until = MonoNow() + absl::Microseconds(n % 7 * 5);
            while (MonoNow() < until) {
            }
          };
          Task<absl::Status> task = pool.Run(reactor, std::move(job));
          const absl::Status s = co_await std::move(task);
          EXPECT_TRUE(s.ok()) << s;
          ++finished;
        }
      }(*reactor, pool, c, kChains, finished));
    }
    // A functional bound only: a job left to no thread never finishes. The reactor sleeps
    // between completions, as the daemon's does.
    const MonoTime give_up = MonoNow() + absl::Seconds(30);
    TaskScope watchdog;
    watchdog.Spawn([](Reactor& r) -> Task<void> { (void)co_await Sleep(r, absl::Seconds(31)); }(*reactor));
    while (finished.load() < kChains * kJobsPerChain && MonoNow() < give_up) {
      ASSERT_TRUE(reactor->RunOnce(true).ok());
    }
    EXPECT_EQ(finished.load(), kChains * kJobsPerChain)
        << "max_busy " << max_busy << ": " << pool.stats().queued << " jobs queued, left to no thread";
    EXPECT_LE(pool.stats().peak_running, 4u);
    // Every thread goes idle again: none stays counted as told to come (one told last may be
    // waking up still; a functional bound).
    const MonoTime settle_by = MonoNow() + absl::Seconds(5);
    while (pool.stats().told != 0 && MonoNow() < settle_by) std::this_thread::yield();
    EXPECT_EQ(pool.stats().told, 0u) << "max_busy " << max_busy << ", " << kChains << " chains";
  }
}

TEST(BlockingPoolTest, FirstJobsGoAheadOfTheJobsWaitingForAThread) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 1});
  Gate gate;
  std::mutex mutex;
  std::vector<std::string> ran;
  TaskScope scope;
  auto run = [](Reactor& reactor, BlockingPool& pool, Gate& gate, std::mutex& mutex,
                std::vector<std::string>& ran, std::string name, JobOrder order) -> Task<void> {
    // The job and its task are named: GCC 12 destroys a lambda temporary in a co_await
    // expression twice.
    auto job = [&gate, &mutex, &ran, name] {
      if (name == "busy") gate.Enter();
      std::lock_guard<std::mutex> lock(mutex);
      ran.push_back(name);
    };
    Task<absl::Status> task = pool.Run(reactor, std::move(job), order);
    const absl::Status s = co_await std::move(task);
    EXPECT_TRUE(s.ok()) << s;
  };
  // The one thread is busy; then, in this order: two jobs last, two first, one last.
  scope.Spawn(run(*reactor, pool, gate, mutex, ran, "busy", JobOrder::kLast));
  ASSERT_TRUE(gate.WaitInside(1));
  scope.Spawn(run(*reactor, pool, gate, mutex, ran, "last1", JobOrder::kLast));
  scope.Spawn(run(*reactor, pool, gate, mutex, ran, "last2", JobOrder::kLast));
  scope.Spawn(run(*reactor, pool, gate, mutex, ran, "first1", JobOrder::kFirst));
  scope.Spawn(run(*reactor, pool, gate, mutex, ran, "first2", JobOrder::kFirst));
  scope.Spawn(run(*reactor, pool, gate, mutex, ran, "last3", JobOrder::kLast));
  EXPECT_EQ(pool.stats().queued, 5u);
  gate.Open();
  ASSERT_TRUE(reactor->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope)).ok());
  // The first jobs keep their own order and pass the waiting last ones, not the running job.
  EXPECT_EQ(ran, (std::vector<std::string>{"busy", "first1", "first2", "last1", "last2", "last3"}));
  // A first job queued after those ran goes ahead of nothing: the queue is empty again.
  scope.Spawn(run(*reactor, pool, gate, mutex, ran, "first3", JobOrder::kFirst));
  ASSERT_TRUE(reactor->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope)).ok());
  EXPECT_EQ(ran.back(), "first3");
}

TEST(BlockingPoolTest, DroppingTheTaskOfARunningJobLetsItFinishAndDiscardsTheResult) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 1});
  Gate gate;
  auto captured_gone = std::make_shared<std::atomic<int>>(0);
  auto result_gone = std::make_shared<std::atomic<int>>(0);
  std::atomic<bool> finished{false};
  {
    Task<absl::StatusOr<Tracked>> task = pool.Run(
        *reactor, [&gate, &finished, keep = Tracked(captured_gone), result_gone] {
          gate.Enter();
          finished = true;
          return Tracked(result_gone);
        });
    task.Start();
    ASSERT_TRUE(gate.WaitInside(1));
    ASSERT_TRUE(reactor->RunOnce(false).ok());
    EXPECT_FALSE(task.done());
  }  // dropped while the job runs
  // Nothing waits for the job any more: like a cancelled operation, it holds no loop.
  EXPECT_EQ(reactor->remote_expected(), 0u);
  Drain(*reactor);
  EXPECT_FALSE(finished.load());
  gate.Open();
  pool.Shutdown();  // joins: the job has finished
  EXPECT_TRUE(finished.load()) << "the job must finish on its thread";
  EXPECT_EQ(pool.stats().completed, 1u);
  // What it captured went on its thread; its result goes when the reactor takes the job back
  // from the inbox. Each exactly once (moves leave empty husks).
  EXPECT_EQ(captured_gone->load(), 1);
  for (int i = 0; i < 2000 && result_gone->load() == 0; ++i) {
    ASSERT_TRUE(reactor->RunOnce(false).ok());
    if (result_gone->load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(result_gone->load(), 1);
}

TEST(BlockingPoolTest, DroppingTheTaskOfAQueuedJobSkipsIt) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 1});
  Gate gate;
  std::atomic<bool> second_ran{false};
  auto captured_gone = std::make_shared<std::atomic<int>>(0);
  Task<absl::Status> first = pool.Run(*reactor, [&gate] { gate.Enter(); });
  first.Start();
  ASSERT_TRUE(gate.WaitInside(1));
  {
    Task<absl::Status> second =
        pool.Run(*reactor, [&second_ran, keep = Tracked(captured_gone)] { second_ran = true; });
    second.Start();
    EXPECT_EQ(pool.stats().queued, 1u);
  }
  gate.Open();
  ASSERT_TRUE(Finish(*reactor, first).ok());
  // The worker takes the dropped job next, and skips it.
  for (int i = 0; i < 2000 && pool.stats().skipped == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pool.Shutdown();
  EXPECT_FALSE(second_ran.load()) << "a job nobody waits for must not start";
  EXPECT_EQ(pool.stats().skipped, 1u);
  EXPECT_EQ(pool.stats().completed, 1u);
  EXPECT_EQ(captured_gone->load(), 1);
  Drain(*reactor);
}

TEST(BlockingPoolTest, ShutdownWithJobsInFlight) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 1});
  Gate gate;
  Task<absl::StatusOr<int>> running = pool.Run(*reactor, [&gate] {
    gate.Enter();
    return 7;
  });
  running.Start();
  ASSERT_TRUE(gate.WaitInside(1));
  std::atomic<bool> queued_ran{false};
  Task<absl::Status> queued = pool.Run(*reactor, [&queued_ran] { queued_ran = true; });
  queued.Start();

  // Shutdown blocks until the running job ends; run it on another thread.
  std::thread stopper([&pool] { pool.Shutdown(); });
  // The queued job is failed at once, while the running one still blocks.
  const absl::Status queued_result = Finish(*reactor, queued);
  EXPECT_EQ(queued_result.code(), absl::StatusCode::kCancelled) << queued_result;
  EXPECT_FALSE(queued_ran.load());
  // New work is refused.
  const absl::Status refused = reactor->BlockOn(pool.Run(*reactor, [] {}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;

  gate.Open();
  absl::StatusOr<int> value = Finish(*reactor, running);
  stopper.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, 7);
  EXPECT_EQ(pool.stats().threads, 0u);
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST(BlockingPoolTest, ATaskThatOutlivesItsPoolIsWokenWithCancelled) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  Gate gate;
  Task<absl::Status> queued;
  {
    BlockingPool pool({.max_threads = 1});
    Task<absl::Status> running = pool.Run(*reactor, [&gate] { gate.Enter(); });
    running.Start();
    ASSERT_TRUE(gate.WaitInside(1));
    queued = pool.Run(*reactor, [] {});
    queued.Start();
    std::thread stopper([&pool] { pool.Shutdown(); });
    // The worker is held in the gate, so only Shutdown can empty the queue.
    for (int i = 0; i < 2000 && pool.stats().queued > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    running.Reset();
    gate.Open();
    stopper.join();
  }  // ~BlockingPool
  // The task outlives the pool and completes without touching it.
  const absl::Status result = Finish(*reactor, queued);
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled) << result;
}

// Waits (20 s at most) until `n` finished jobs wait in the reactor's inbox.
bool WaitPosted(Reactor& reactor, size_t n) {
  absl::StatusOr<std::shared_ptr<RemoteInbox>> inbox = reactor.remote_inbox();
  if (!inbox.ok()) return false;
  for (int i = 0; i < 2000 && (*inbox)->waiting() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return (*inbox)->waiting() >= n;
}

TEST(BlockingPoolTest, JobsFinishedWhileTheReactorLooksElsewhereWakeItOnce) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 4});
  Gate gate;
  std::vector<Task<absl::StatusOr<int>>> tasks;
  for (int i = 0; i < 4; ++i) {
    tasks.push_back(pool.Run(*reactor, [i, &gate] {
      gate.Enter();
      return i * 10;
    }));
    tasks.back().Start();
  }
  // Every task waits (the jobs are held in the gate); the reactor does not look until all four
  // are done: one eventfd write between them.
  ASSERT_TRUE(gate.WaitInside(4));
  gate.Open();
  ASSERT_TRUE(WaitPosted(*reactor, 4));
  const std::shared_ptr<RemoteInbox> inbox = *reactor->remote_inbox();
  EXPECT_EQ(inbox->wakes(), 1u);
  EXPECT_EQ(reactor->remote_expected(), 4u);
  ASSERT_TRUE(reactor->RunOnce(true).ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(tasks[i].done()) << "job " << i << " was taken in the same round";
    const absl::StatusOr<int> value = tasks[i].TakeResult();
    ASSERT_TRUE(value.ok()) << value.status();
    EXPECT_EQ(*value, i * 10);
  }
  EXPECT_EQ(reactor->remote_expected(), 0u);
  // Once the reactor has looked, the next job wakes it again.
  const absl::StatusOr<int> next = reactor->BlockOn(pool.Run(*reactor, [] { return 7; }));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 7);
  EXPECT_EQ(inbox->wakes(), 2u);
}

TEST(BlockingPoolTest, ATaskDroppedAfterItsJobFinishedIsNotResumed) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 2});
  auto result_gone = std::make_shared<std::atomic<int>>(0);
  Task<absl::Status> kept = pool.Run(*reactor, [] {});
  kept.Start();
  Gate gate;
  {
    // The job waits until its task waits for it (Start returns once the task is suspended).
    Task<absl::StatusOr<Tracked>> dropped = pool.Run(*reactor, [&gate, result_gone] {
      gate.Enter();
      return Tracked(result_gone);
    });
    dropped.Start();
    ASSERT_TRUE(gate.WaitInside(1));
    EXPECT_FALSE(dropped.done());
    gate.Open();
    ASSERT_TRUE(WaitPosted(*reactor, 2));
  }  // dropped with its finished job still in the inbox
  EXPECT_EQ(result_gone->load(), 0) << "the inbox still holds the job and its result";
  // The rounds take both (one, where the ring defers its completions to our waits).
  for (int i = 0; i < 2000 && (!kept.done() || result_gone->load() == 0); ++i) {
    ASSERT_TRUE(reactor->RunOnce(false).ok());
    if (!kept.done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(reactor->remote_expected(), 0u);
  ASSERT_TRUE(kept.done());
  EXPECT_TRUE(kept.TakeResult().ok());
  EXPECT_EQ(result_gone->load(), 1) << "taken from the inbox and freed, never resumed";
}

TEST(BlockingPoolTest, AJobThatFinishesAfterItsReactorIsGoneIsDropped) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 1});
  Gate gate;
  auto captured_gone = std::make_shared<std::atomic<int>>(0);
  {
    Task<absl::Status> task =
        pool.Run(*reactor, [&gate, keep = Tracked(captured_gone)] { gate.Enter(); });
    task.Start();
    ASSERT_TRUE(gate.WaitInside(1));
  }
  reactor.reset();  // the inbox is closed; the job still holds it
  gate.Open();
  pool.Shutdown();  // the job posts to the closed inbox, which drops it
  EXPECT_EQ(pool.stats().completed, 1u);
  EXPECT_EQ(captured_gone->load(), 1);
}

TEST(BlockingPoolTest, AFullQueueRefusesWork) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  BlockingPool pool({.max_threads = 1, .max_queued = 2});
  Gate gate;
  std::vector<Task<absl::Status>> tasks;
  for (int i = 0; i < 3; ++i) {
    tasks.push_back(pool.Run(*reactor, [&gate] { gate.Enter(); }));
    tasks.back().Start();
    if (i == 0) {
      ASSERT_TRUE(gate.WaitInside(1));
    }
  }
  const absl::Status refused = reactor->BlockOn(pool.Run(*reactor, [] {}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_EQ(pool.stats().refused, 1u);
  gate.Open();
  for (Task<absl::Status>& t : tasks) EXPECT_TRUE(Finish(*reactor, t).ok());
  EXPECT_EQ(gate.entered(), 3);
}

}  // namespace
}  // namespace hotring::io

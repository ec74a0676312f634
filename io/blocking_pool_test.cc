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

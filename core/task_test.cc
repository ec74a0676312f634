#include "core/task.h"

#include <memory>

#include "absl/status/statusor.h"
#include "core/notifier.h"
#include "core/task_scope.h"
#include "gtest/gtest.h"

namespace hotring {
namespace {

// Runs a task that never suspends on anything external to completion, without a reactor.
template <typename T>
T RunSync(Task<T> task) {
  task.Start();
  EXPECT_TRUE(task.done());
  return task.TakeResult();
}

Task<int> Ready(int v) { co_return v; }

Task<int> Chain(int depth) {
  if (depth == 0) co_return 0;
  const int below = co_await Chain(depth - 1);
  co_return below + 1;
}

Task<long> LoopOfReadyAwaits(int count) {
  long sum = 0;
  for (int i = 0; i < count; ++i) sum += co_await Ready(1);
  co_return sum;
}

TEST(TaskTest, IsLazy) {
  bool started = false;
  auto body = [&]() -> Task<int> {
    started = true;
    co_return 7;
  };
  Task<int> task = body();
  EXPECT_FALSE(started);
  EXPECT_EQ(RunSync(std::move(task)), 7);
  EXPECT_TRUE(started);
}

TEST(TaskTest, MillionReadyAwaitsInALoopDoNotGrowTheStack) {
  EXPECT_EQ(RunSync(LoopOfReadyAwaits(1'000'000)), 1'000'000);
}

TEST(TaskTest, MillionDeepChainOfReadyTasks) {
  // Each level awaits the next: a million nested frames resumed by symmetric transfer.
  EXPECT_EQ(RunSync(Chain(1'000'000)), 1'000'000);
}

TEST(TaskTest, StatusOrAndVoid) {
  auto ok = []() -> Task<absl::StatusOr<int>> { co_return 5; };
  auto bad = []() -> Task<absl::StatusOr<int>> { co_return absl::NotFoundError("x"); };
  EXPECT_EQ(*RunSync(ok()), 5);
  EXPECT_EQ(RunSync(bad()).status().code(), absl::StatusCode::kNotFound);
  int n = 0;
  auto v = [&]() -> Task<void> {
    ++n;
    co_return;
  };
  Task<void> t = v();
  t.Start();
  EXPECT_TRUE(t.done());
  EXPECT_EQ(n, 1);
}

struct Tracker {
  explicit Tracker(int* destroyed) : destroyed(destroyed) {}
  ~Tracker() { ++*destroyed; }
  int* destroyed;
};

TEST(TaskTest, DestroyingAnUnstartedTaskDestroysItsFrame) {
  int destroyed = 0;
  auto body = [](std::unique_ptr<Tracker> t) -> Task<void> { co_return; };
  {
    Task<void> task = body(std::make_unique<Tracker>(&destroyed));
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
}

TEST(TaskTest, DestroyingASuspendedTaskDestroysNestedFrames) {
  int destroyed = 0;
  Notifier never;
  bool resumed_past_wait = false;
  auto inner = [&](std::unique_ptr<Tracker> t) -> Task<void> {
    co_await never.Wait();
    resumed_past_wait = true;
  };
  auto outer = [&](std::unique_ptr<Tracker> t) -> Task<void> {
    co_await inner(std::make_unique<Tracker>(&destroyed));
    resumed_past_wait = true;
  };
  {
    Task<void> task = outer(std::make_unique<Tracker>(&destroyed));
    task.Start();
    EXPECT_FALSE(task.done());
    EXPECT_EQ(never.waiters(), 1u);
  }
  EXPECT_EQ(destroyed, 2);
  EXPECT_EQ(never.waiters(), 0u);  // the destroyed waiter unregistered itself
  never.NotifyAll();               // and nothing dangling is resumed
  EXPECT_FALSE(RunReadyNotifications());
  EXPECT_FALSE(resumed_past_wait);
}

TEST(TaskScopeTest, JoinWaitsForEveryTask) {
  Notifier go;
  std::vector<int> finished;
  TaskScope scope;
  auto worker = [&](int id) -> Task<void> {
    co_await go.Wait();
    finished.push_back(id);
  };
  for (int i = 0; i < 3; ++i) scope.Spawn(worker(i));
  EXPECT_EQ(scope.size(), 3u);
  bool joined = false;
  auto joiner = [&]() -> Task<void> {
    co_await scope.Join();
    joined = true;
  };
  Task<void> j = joiner();
  j.Start();
  EXPECT_FALSE(joined);
  go.NotifyAll();
  EXPECT_FALSE(joined);  // never inline: the loop runs notified tasks
  EXPECT_TRUE(RunReadyNotifications());
  EXPECT_TRUE(joined);
  EXPECT_EQ(finished, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(scope.empty());
}

TEST(TaskScopeTest, CancelAllDestroysRunningTasksAndWakesJoiner) {
  int destroyed = 0;
  Notifier never;
  bool ran_on = false;
  TaskScope scope;
  auto worker = [&](std::unique_ptr<Tracker> t) -> Task<void> {
    co_await never.Wait();
    ran_on = true;
  };
  for (int i = 0; i < 5; ++i) scope.Spawn(worker(std::make_unique<Tracker>(&destroyed)));
  bool joined = false;
  auto joiner = [&]() -> Task<void> {
    co_await scope.Join();
    joined = true;
  };
  Task<void> j = joiner();
  j.Start();
  scope.CancelAll();
  EXPECT_EQ(destroyed, 5);
  EXPECT_TRUE(joined);
  EXPECT_FALSE(ran_on);
  EXPECT_EQ(never.waiters(), 0u);
}

TEST(TaskScopeTest, DestructorCancels) {
  int destroyed = 0;
  Notifier never;
  {
    TaskScope scope;
    auto worker = [&](std::unique_ptr<Tracker> t) -> Task<void> { co_await never.Wait(); };
    scope.Spawn(worker(std::make_unique<Tracker>(&destroyed)));
    scope.Spawn(worker(std::make_unique<Tracker>(&destroyed)));
  }
  EXPECT_EQ(destroyed, 2);
}

TEST(TaskScopeTest, TasksThatFinishImmediatelyAreFreed) {
  TaskScope scope;
  int ran = 0;
  auto quick = [&]() -> Task<void> {
    ++ran;
    co_return;
  };
  for (int i = 0; i < 1000; ++i) scope.Spawn(quick());
  EXPECT_EQ(ran, 1000);
  EXPECT_TRUE(scope.empty());
}

TEST(NotifierTest, NotifyOneIsFifoAndRewaitGoesToTheBack) {
  Notifier n;
  std::vector<int> order;
  auto waiter = [&](int id, int rounds) -> Task<void> {
    for (int r = 0; r < rounds; ++r) {
      co_await n.Wait();
      order.push_back(id);
    }
  };
  Task<void> a = waiter(1, 2);
  Task<void> b = waiter(2, 1);
  a.Start();
  b.Start();
  n.NotifyOne();  // 1, which waits again behind 2
  RunReadyNotifications();
  n.NotifyOne();  // 2
  RunReadyNotifications();
  n.NotifyOne();  // 1
  RunReadyNotifications();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 1}));
  EXPECT_TRUE(a.done());
  EXPECT_TRUE(b.done());
}

TEST(NotifierTest, NotifyAllDoesNotLoopOnRewaiters) {
  Notifier n;
  int wakeups = 0;
  auto forever = [&]() -> Task<void> {
    for (;;) {
      co_await n.Wait();
      ++wakeups;
    }
  };
  Task<void> a = forever();
  Task<void> b = forever();
  a.Start();
  b.Start();
  n.NotifyAll();
  RunReadyNotifications();
  EXPECT_EQ(wakeups, 2);
  n.NotifyAll();
  RunReadyNotifications();
  EXPECT_EQ(wakeups, 4);
}

// The hazard inline resumption had: a woken task destroys the task that woke it.
TEST(NotifierTest, AWokenTaskMayDestroyTheNotifier) {
  Notifier stop;
  Task<void> notifier_task;
  bool after_notify = false;
  auto stopper = [&]() -> Task<void> {
    co_await stop.Wait();
    notifier_task.Reset();  // destroys the task below, which called NotifyAll
  };
  auto notifying = [&]() -> Task<void> {
    stop.NotifyAll();
    after_notify = true;  // still running in a live frame
    Notifier never;
    co_await never.Wait();
  };
  Task<void> s = stopper();
  s.Start();
  notifier_task = notifying();
  notifier_task.Start();
  EXPECT_TRUE(after_notify);
  EXPECT_TRUE(RunReadyNotifications());
  EXPECT_TRUE(s.done());
  EXPECT_FALSE(notifier_task.valid());
}

}  // namespace
}  // namespace hotring

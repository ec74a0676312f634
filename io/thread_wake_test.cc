#include "io/thread_wake.h"

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "io/reactor.h"

namespace hotring::io {
namespace {

std::unique_ptr<Reactor> MakeReactor() {
  absl::StatusOr<std::unique_ptr<Reactor>> r = Reactor::Create();
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(*r);
}

TEST(ThreadWakeTest, NotifyBeforeWaitIsNotLost) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  absl::StatusOr<ThreadWake> wake = ThreadWake::Create();
  ASSERT_TRUE(wake.ok()) << wake.status();
  wake->Notify();
  wake->Notify();
  absl::StatusOr<uint64_t> count = reactor->BlockOn(wake->Wait(*reactor));
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 2u);
}

TEST(ThreadWakeTest, AnotherThreadWakesTheReactor) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  absl::StatusOr<ThreadWake> wake = ThreadWake::Create();
  ASSERT_TRUE(wake.ok()) << wake.status();
  std::atomic<bool> notified{false};
  std::thread other([&] {
    absl::SleepFor(absl::Milliseconds(50));
    notified.store(true);
    wake->Notify();
  });
  absl::StatusOr<uint64_t> count = reactor->BlockOn(wake->Wait(*reactor));
  other.join();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 1u);
  // The wait cannot have completed before the other thread notified.
  EXPECT_TRUE(notified.load());
}

TEST(ThreadWakeTest, ManyNotifiesFromManyThreadsAddUp) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  absl::StatusOr<ThreadWake> wake = ThreadWake::Create();
  ASSERT_TRUE(wake.ok()) << wake.status();
  constexpr int kThreads = 4;
  constexpr int kEach = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) wake->Notify();
    });
  }
  uint64_t seen = 0;
  while (seen < kThreads * kEach) {
    absl::StatusOr<uint64_t> count = reactor->BlockOn(wake->Wait(*reactor));
    ASSERT_TRUE(count.ok()) << count.status();
    ASSERT_GT(*count, 0u);
    seen += *count;
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(seen, static_cast<uint64_t>(kThreads * kEach));
}

TEST(ThreadWakeTest, DroppedWaitIsCancelled) {
  std::unique_ptr<Reactor> reactor = MakeReactor();
  absl::StatusOr<ThreadWake> wake = ThreadWake::Create();
  ASSERT_TRUE(wake.ok()) << wake.status();
  {
    Task<absl::StatusOr<uint64_t>> waiting = wake->Wait(*reactor);
    waiting.Start();
    ASSERT_TRUE(reactor->RunOnce(false).ok());
    EXPECT_FALSE(waiting.done());
  }
  for (int i = 0; i < 100 && reactor->in_flight() > 0; ++i) ASSERT_TRUE(reactor->RunOnce(true).ok());
  EXPECT_EQ(reactor->in_flight(), 0u);
  // The cancelled read consumed nothing: a later notify is still seen.
  wake->Notify();
  absl::StatusOr<uint64_t> count = reactor->BlockOn(wake->Wait(*reactor));
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 1u);
}

}  // namespace
}  // namespace hotring::io

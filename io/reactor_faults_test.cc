// The reactor under the io_uring faults a daemon meets in the field: a ring far too small for
// its load (the submission queue fills, the completion queue overflows and io_uring_enter
// answers EBUSY) while signals keep interrupting its waits (EINTR). Nothing may be lost or
// completed twice, and every operation's result must be its own.
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "gtest/gtest.h"
#include "io/ops.h"
#include "io/reactor.h"
#include "io/socket.h"

namespace hotring::io {
namespace {

std::atomic<uint64_t> g_signals{0};

void CountSignal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

// Interrupts `target` with SIGUSR2 (a handler without SA_RESTART, so a blocked io_uring_enter
// returns EINTR) every ~50 us until destroyed. Owns the sending thread.
class SignalStorm {
 public:
  explicit SignalStorm(pthread_t target) : target_(target) {
    struct sigaction action {};
    action.sa_handler = CountSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    sigaction(SIGUSR2, &action, &old_);
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        pthread_kill(target_, SIGUSR2);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  ~SignalStorm() {
    stop_.store(true);
    thread_.join();
    sigaction(SIGUSR2, &old_, nullptr);
  }

 private:
  pthread_t target_;
  struct sigaction old_ {};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(ReactorFaultsTest, TinyRingUnderLoadAndSignalsLosesNothing) {
  Reactor::Options options;
  options.sq_entries = 2;
  options.cq_entries = 4;
  absl::StatusOr<std::unique_ptr<Reactor>> created = Reactor::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  Reactor& reactor = **created;
  absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok()) << pair.status();

  constexpr int kSleepers = 2000;
  constexpr int kNops = 5000;
  constexpr uint64_t kMessages = 20'000;
  int slept = 0;
  int nops = 0;
  int errors = 0;
  uint64_t received = 0;
  uint64_t out_of_order = 0;
  auto sleeper = [&](int i) -> Task<void> {
    if ((co_await Sleep(reactor, absl::Microseconds(200 + 37 * (i % 50)))).ok()) {
      ++slept;
    } else {
      ++errors;
    }
  };
  auto nop = [&]() -> Task<void> {
    if ((co_await Nop(reactor)).ok()) {
      ++nops;
    } else {
      ++errors;
    }
  };
  // One side sends numbered messages, the other checks each arrives once, in order.
  auto sender = [&]() -> Task<void> {
    for (uint64_t i = 0; i < kMessages; ++i) {
      Buffer buffer(sizeof(i));
      std::memcpy(buffer.data(), &i, sizeof(i));
      BufferResult sent = co_await Send(reactor, pair->first.get(), std::move(buffer));
      if (!sent.bytes.ok()) ++errors;
    }
  };
  auto receiver = [&]() -> Task<void> {
    Buffer buffer(sizeof(uint64_t));
    for (uint64_t i = 0; i < kMessages; ++i) {
      BufferResult got = co_await Recv(reactor, pair->second.get(), std::move(buffer));
      if (!got.bytes.ok() || *got.bytes != sizeof(uint64_t)) {
        ++errors;
        co_return;
      }
      uint64_t value;
      std::memcpy(&value, got.buffer.data(), sizeof(value));
      if (value != i) ++out_of_order;
      ++received;
      buffer = std::move(got.buffer);
    }
  };
  auto all = [&]() -> Task<void> {
    TaskScope scope;
    scope.Spawn(receiver());
    scope.Spawn(sender());
    for (int i = 0; i < kSleepers; ++i) scope.Spawn(sleeper(i));
    for (int i = 0; i < kNops; ++i) scope.Spawn(nop());
    co_await scope.Join();
  };
  g_signals.store(0);
  {
    const SignalStorm storm(pthread_self());
    ASSERT_TRUE(reactor.BlockOn(all()).ok());
  }
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(slept, kSleepers);
  EXPECT_EQ(nops, kNops);
  EXPECT_EQ(received, kMessages);
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(reactor.in_flight(), 0u);
  // The storm did interrupt the run (each signal lands in a wait or between them).
  EXPECT_GT(g_signals.load(), 0u);
}

}  // namespace
}  // namespace hotring::io

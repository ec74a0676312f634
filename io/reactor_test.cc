#include "io/reactor.h"

#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/clock.h"
#include "core/notifier.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "gtest/gtest.h"
#include "io/buffer_ring.h"
#include "io/multishot.h"
#include "io/ops.h"
#include "io/signals.h"
#include "io/socket.h"

namespace hotring::io {
namespace {

std::unique_ptr<Reactor> MakeReactor(Reactor::Options options = {}) {
  absl::StatusOr<std::unique_ptr<Reactor>> r = Reactor::Create(options);
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(*r);
}

// Drives the loop until nothing is in flight (abandoned operations reaped).
void Drain(Reactor& reactor) {
  for (int i = 0; i < 1000 && reactor.in_flight() > 0; ++i) {
    ASSERT_TRUE(reactor.RunOnce(true).ok());
  }
  EXPECT_EQ(reactor.in_flight(), 0u);
}

TEST(ReactorTest, ProbesFeatures) {
  auto reactor = MakeReactor();
  // Kernel 6.18 here: every feature is present. On older kernels this documents the fallback.
  EXPECT_TRUE(reactor->features().recv_multishot) << reactor->features().Describe();
}

TEST(ReactorTest, HundredThousandConcurrentTimeoutsCompleteAndFreeEverything) {
  auto reactor = MakeReactor();
  constexpr int kTasks = 100'000;
  int fired = 0;
  int errors = 0;
  auto sleeper = [&](int i) -> Task<void> {
    const absl::Status s = co_await Sleep(*reactor, absl::Milliseconds(1 + i % 50));
    if (s.ok()) {
      ++fired;
    } else {
      ++errors;
    }
  };
  auto all = [&]() -> Task<void> {
    TaskScope scope;
    for (int i = 0; i < kTasks; ++i) scope.Spawn(sleeper(i));
    co_await scope.Join();
  };
  ASSERT_TRUE(reactor->BlockOn(all()).ok());
  EXPECT_EQ(fired, kTasks);
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST(ReactorTest, TimeoutsFireNoEarlierThanAsked) {
  auto reactor = MakeReactor();
  for (const absl::Duration d : {absl::Milliseconds(1), absl::Milliseconds(20),
                                 absl::Milliseconds(75)}) {
    const MonoTime start = MonoNow();
    ASSERT_TRUE(reactor->BlockOn(
                    [&]() -> Task<absl::Status> { co_return co_await Sleep(*reactor, d); }())
                    .ok());
    EXPECT_GE(Since(start, MonoNow()), d);
  }
  const MonoTime deadline = MonoNow() + absl::Milliseconds(30);
  ASSERT_TRUE(reactor->BlockOn([&]() -> Task<absl::Status> {
    co_return co_await SleepUntil(*reactor, deadline);
  }()).ok());
  EXPECT_GE(MonoNow(), deadline);
}

// Two tasks exchange `messages` messages over a socketpair; every payload carries its index.
TEST(ReactorTest, SocketpairPingPongOfAMillionMessages) {
  auto reactor = MakeReactor();
  auto pair = UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok());
  constexpr uint64_t kMessages = 1'000'000;  // both directions together
  uint64_t bad = 0;
  uint64_t received = 0;
  auto side = [&](int fd, bool starts) -> Task<void> {
    Buffer buffer(sizeof(uint64_t));
    uint64_t next = starts ? 0 : 1;  // the index this side sends next
    if (starts) {
      std::memcpy(buffer.data(), &next, sizeof(next));
      BufferResult s = co_await Send(*reactor, fd, std::move(buffer));
      if (!s.bytes.ok()) ++bad;
      buffer = std::move(s.buffer);
      next += 2;
    }
    while (next < kMessages + 1) {
      BufferResult r = co_await Recv(*reactor, fd, std::move(buffer));
      if (!r.bytes.ok() || *r.bytes != sizeof(uint64_t)) {
        ++bad;
        co_return;
      }
      uint64_t got;
      std::memcpy(&got, r.buffer.data(), sizeof(got));
      if (got != next - 1) ++bad;  // the peer's message precedes ours
      ++received;
      if (next >= kMessages) co_return;
      std::memcpy(r.buffer.data(), &next, sizeof(next));
      BufferResult s = co_await Send(*reactor, fd, std::move(r.buffer));
      if (!s.bytes.ok()) ++bad;
      buffer = std::move(s.buffer);
      next += 2;
    }
  };
  auto both = [&]() -> Task<void> {
    TaskScope scope;
    scope.Spawn(side(pair->first.get(), true));
    scope.Spawn(side(pair->second.get(), false));
    co_await scope.Join();
  };
  ASSERT_TRUE(reactor->BlockOn(both()).ok());
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(received, kMessages);
}

TEST(ReactorTest, DestroyingATaskCancelsItsPendingRecvAndLeavesTheDataUnread) {
  auto reactor = MakeReactor();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  bool completed = false;
  auto reader = [&]() -> Task<void> {
    BufferResult r = co_await Recv(*reactor, pair->first.get(), Buffer(64));
    completed = true;
  };
  {
    Task<void> task = reader();
    task.Start();
    ASSERT_TRUE(reactor->RunOnce(false).ok());
    EXPECT_EQ(reactor->in_flight(), 1u);
  }  // destroyed mid-await
  Drain(*reactor);
  EXPECT_FALSE(completed);
  ASSERT_EQ(::send(pair->second.get(), "late", 4, 0), 4);
  char buf[8];
  // The cancelled recv did not consume the datagram.
  EXPECT_EQ(::recv(pair->first.get(), buf, sizeof(buf), MSG_DONTWAIT), 4);
}

TEST(ReactorTest, DestroyingATaskCancelsItsPendingTimeout) {
  auto reactor = MakeReactor();
  bool fired = false;
  auto sleeper = [&]() -> Task<void> {
    (void)co_await Sleep(*reactor, absl::Hours(1));
    fired = true;
  };
  {
    Task<void> task = sleeper();
    task.Start();
    ASSERT_TRUE(reactor->RunOnce(false).ok());
  }
  const MonoTime start = MonoNow();
  Drain(*reactor);
  EXPECT_LT(Since(start, MonoNow()), absl::Seconds(5));
  EXPECT_FALSE(fired);
}

TEST(ReactorTest, LinkTimeoutTurnsIntoDeadlineExceeded) {
  auto reactor = MakeReactor();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  auto reader = [&]() -> Task<absl::Status> {
    ReceivedMessage m = co_await RecvMsg(*reactor, pair->first.get(), Buffer(64))
                            .WithTimeout(absl::Milliseconds(20));
    co_return m.bytes.status();
  };
  const absl::Status s = reactor->BlockOn(reader());
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  Drain(*reactor);
}

TEST(ReactorTest, RecvMsgCarriesCredentialsAndPeer) {
  auto reactor = MakeReactor();
  const std::string name = absl::StrCat("@hotring-reactor-test-", ::getpid());
  auto server = BindUnix(SOCK_DGRAM, name);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(EnablePassCred(server->get()).ok());
  auto client = ConnectUnix(SOCK_DGRAM, name);
  ASSERT_TRUE(client.ok());
  ASSERT_EQ(::send(client->get(), "hello", 5, 0), 5);
  auto reader = [&]() -> Task<ReceivedMessage> {
    co_return co_await RecvMsg(*reactor, server->get(), Buffer(64));
  };
  absl::StatusOr<ReceivedMessage> m = reactor->BlockOn(reader());
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->bytes.ok());
  EXPECT_EQ(std::string(m->buffer.data(), *m->bytes), "hello");
  ASSERT_TRUE(m->credentials.has_value());
  EXPECT_EQ(m->credentials->pid, ::getpid());
  EXPECT_EQ(m->credentials->uid, ::getuid());
  EXPECT_FALSE(m->truncated());
}

// The multishot tests run with both ways of providing buffers: a registered ring (where the
// kernel allows it safely) and IORING_OP_PROVIDE_BUFFERS (what 32-bit kernels with high
// memory get, io/high_memory.h).
class BufferModeTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    Reactor::Options options;
    options.use_buf_ring = GetParam();
    reactor_ = MakeReactor(options);
    ASSERT_NE(reactor_, nullptr);
  }
  // Every PROVIDE_BUFFERS / REMOVE_BUFFERS the rings queued succeeded.
  void TearDown() override { EXPECT_EQ(reactor_->untracked_failures(), 0u); }
  // The ring uses the mode the reactor chose, and the reactor the one the test asked for.
  void ExpectMode(const BufferRing& ring) {
    EXPECT_EQ(ring.registered(), reactor_->features().buf_ring);
    if (!GetParam()) {
      EXPECT_FALSE(ring.registered());
    }
  }
  // Destroyed after the test body's rings and receivers, as a Reactor must be.
  std::unique_ptr<Reactor> reactor_;
};

INSTANTIATE_TEST_SUITE_P(, BufferModeTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "RegisteredRing" : "ProvideBuffers";
                         });

TEST_P(BufferModeTest, MultishotReceiveDeliversEveryDatagramAndRearmsWhenTheRingRunsDry) {
  Reactor* const reactor = reactor_.get();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  ASSERT_TRUE(EnablePassCred(pair->first.get()).ok());
  auto ring = BufferRing::Create(*reactor, /*group_id=*/7, /*count=*/4, /*size=*/512);
  ASSERT_TRUE(ring.ok()) << ring.status();
  ExpectMode(**ring);
  constexpr int kDatagrams = 50;  // many more than ring buffers
  for (int i = 0; i < kDatagrams; ++i) {
    const std::string msg = absl::StrCat("dgram-", i);
    ASSERT_EQ(::send(pair->second.get(), msg.data(), msg.size(), 0),
              static_cast<ssize_t>(msg.size()));
  }
  std::vector<std::string> got;
  MultishotReceiver receiver(*reactor, pair->first.get(), *ring);
  auto reader = [&]() -> Task<absl::Status> {
    for (int i = 0; i < kDatagrams; ++i) {
      absl::StatusOr<Datagram> d = co_await receiver.Next();
      if (!d.ok()) co_return d.status();
      if (!d->credentials.has_value()) co_return absl::InternalError("no credentials");
      got.emplace_back(d->payload);
    }
    co_return absl::OkStatus();
  };
  ASSERT_TRUE(reactor->BlockOn(reader()).ok());
  ASSERT_EQ(got.size(), static_cast<size_t>(kDatagrams));
  for (int i = 0; i < kDatagrams; ++i) EXPECT_EQ(got[i], absl::StrCat("dgram-", i));
  EXPECT_EQ((*ring)->available(), 4u);  // every lease returned
}

// An idle receiver gives its buffer pages back, but never while a buffer or a completion that
// names one is unconsumed; receiving goes on after it as before.
TEST_P(BufferModeTest, MultishotReceiverReleasesIdleBuffersOnlyWhenNothingIsUnread) {
  Reactor* const reactor = reactor_.get();
  if (!reactor->features().defer_taskrun) GTEST_SKIP() << "needs IORING_SETUP_DEFER_TASKRUN";
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  auto ring = BufferRing::Create(*reactor, /*group_id=*/9, /*count=*/4, /*size=*/512);
  ASSERT_TRUE(ring.ok()) << ring.status();
  ExpectMode(**ring);
  MultishotReceiver receiver(*reactor, pair->first.get(), *ring);
  auto send = [&](const std::string& msg) {
    ASSERT_EQ(::send(pair->second.get(), msg.data(), msg.size(), 0),
              static_cast<ssize_t>(msg.size()));
  };
  auto receive = [&](int n, std::vector<std::string>& got) -> Task<absl::Status> {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<Datagram> d = co_await receiver.Next();
      if (!d.ok()) co_return d.status();
      got.emplace_back(d->payload);
    }
    co_return absl::OkStatus();
  };
  std::vector<std::string> got;
  send("one");
  send("two");
  ASSERT_TRUE(reactor->BlockOn(receive(1, got)).ok());
  // "two" has been received into a buffer: its completion is reaped or waiting in the CQ.
  ASSERT_TRUE(reactor->RunOnce(false).ok());
  EXPECT_FALSE(receiver.ReleaseIdleMemory());
  ASSERT_TRUE(reactor->BlockOn(receive(1, got)).ok());
  // A datagram held by the consumer keeps the pages too.
  send("held");
  std::optional<Datagram> held;
  auto hold = [&]() -> Task<absl::Status> {
    absl::StatusOr<Datagram> d = co_await receiver.Next();
    if (!d.ok()) co_return d.status();
    held.emplace(std::move(*d));
    co_return absl::OkStatus();
  };
  ASSERT_TRUE(reactor->BlockOn(hold()).ok());
  EXPECT_FALSE(receiver.ReleaseIdleMemory());
  EXPECT_EQ(held->payload, "held");
  held.reset();
  // Nothing unread: the pages go, and read as zeros.
  EXPECT_TRUE(receiver.ReleaseIdleMemory());
  for (uint16_t id = 0; id < 4; ++id) {
    for (const char c : (*ring)->Data(id)) ASSERT_EQ(c, 0) << "buffer " << id;
  }
  for (int i = 0; i < 10; ++i) send(absl::StrCat("after-", i));
  ASSERT_TRUE(reactor->BlockOn(receive(10, got)).ok());
  ASSERT_EQ(got.size(), 12u);
  EXPECT_EQ(got[0], "one");
  EXPECT_EQ(got[1], "two");
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got[2 + i], absl::StrCat("after-", i));
  EXPECT_EQ((*ring)->available(), 4u);
}

// The frame-free path: queued completions are taken without suspending, waiting runs Next().
TEST_P(BufferModeTest, MultishotReceiveAwaiterDeliversEveryDatagramAndRearmsWhenTheRingRunsDry) {
  Reactor* const reactor = reactor_.get();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  ASSERT_TRUE(EnablePassCred(pair->first.get()).ok());
  auto ring = BufferRing::Create(*reactor, /*group_id=*/7, /*count=*/4, /*size=*/512);
  ASSERT_TRUE(ring.ok()) << ring.status();
  ExpectMode(**ring);
  constexpr int kBurst = 50;  // many more than ring buffers, queued before the first receive
  for (int i = 0; i < kBurst; ++i) {
    const std::string msg = absl::StrCat("dgram-", i);
    ASSERT_EQ(::send(pair->second.get(), msg.data(), msg.size(), 0),
              static_cast<ssize_t>(msg.size()));
  }
  std::vector<std::string> got;
  MultishotReceiver receiver(*reactor, pair->first.get(), *ring);
  auto reader = [&]() -> Task<absl::Status> {
    for (int i = 0; i < kBurst + 1; ++i) {
      if (i == kBurst) {
        // The queue is empty now: this one waits for the kernel.
        if (::send(pair->second.get(), "late", 4, 0) != 4) co_return absl::InternalError("send");
      }
      absl::StatusOr<Datagram> d = co_await receiver.Receive();
      if (!d.ok()) co_return d.status();
      if (!d->credentials.has_value()) co_return absl::InternalError("no credentials");
      got.emplace_back(d->payload);
    }
    co_return absl::OkStatus();
  };
  ASSERT_TRUE(reactor->BlockOn(reader()).ok());
  ASSERT_EQ(got.size(), static_cast<size_t>(kBurst + 1));
  for (int i = 0; i < kBurst; ++i) EXPECT_EQ(got[i], absl::StrCat("dgram-", i));
  EXPECT_EQ(got[kBurst], "late");
  EXPECT_GT(receiver.ring_exhausted(), 0u);  // the ring ran dry and was re-armed
  EXPECT_EQ((*ring)->available(), 4u);       // every lease returned
}

TEST_P(BufferModeTest, DroppingATaskWaitingInReceiveCancelsTheWait) {
  Reactor* const reactor = reactor_.get();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  auto ring = BufferRing::Create(*reactor, 5, 4, 512);
  ASSERT_TRUE(ring.ok());
  ExpectMode(**ring);
  MultishotReceiver receiver(*reactor, pair->first.get(), *ring);
  bool received = false;
  auto waiter = [&]() -> Task<void> {
    absl::StatusOr<Datagram> d = co_await receiver.Receive();
    received = true;
  };
  Task<void> task = waiter();
  task.Start();  // nothing queued: suspends inside Next()
  ASSERT_TRUE(reactor->RunOnce(false).ok());
  EXPECT_FALSE(task.done());
  task.Reset();  // destroys the awaiter and the Next() frame it owns
  ASSERT_EQ(::send(pair->second.get(), "x", 1, 0), 1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(reactor->RunOnce(false).ok());
  EXPECT_FALSE(received);
  // The receiver still works: the datagram is there for the next call.
  auto again = [&]() -> Task<absl::StatusOr<std::string>> {
    absl::StatusOr<Datagram> d = co_await receiver.Receive();
    if (!d.ok()) co_return d.status();
    co_return std::string(d->payload);
  };
  absl::StatusOr<std::string> got = reactor->BlockOn(again());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "x");
}

TEST_P(BufferModeTest, DroppingAMultishotReceiverWithDataInFlightRecyclesEverything) {
  Reactor* const reactor = reactor_.get();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  auto ring = BufferRing::Create(*reactor, 9, 8, 512);
  ASSERT_TRUE(ring.ok());
  ExpectMode(**ring);
  std::weak_ptr<BufferRing> weak = *ring;
  {
    auto receiver = std::make_unique<MultishotReceiver>(*reactor, pair->first.get(), *ring);
    for (int i = 0; i < 6; ++i) ASSERT_EQ(::send(pair->second.get(), "x", 1, 0), 1);
    auto one = [&]() -> Task<absl::Status> {
      absl::StatusOr<Datagram> d = co_await receiver->Next();
      co_return d.status();
    };
    ASSERT_TRUE(reactor->BlockOn(one()).ok());
    // Five more completions are queued or arriving; a task is waiting on none of them.
    ASSERT_TRUE(reactor->RunOnce(false).ok());
    receiver.reset();
  }
  Drain(*reactor);
  EXPECT_EQ((*ring)->available(), 8u);
  ring->reset();
  EXPECT_TRUE(weak.expired());
}

TEST_P(BufferModeTest, MultishotRingTooSmallForHeadersIsAClearError) {
  Reactor* const reactor = reactor_.get();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  auto ring = BufferRing::Create(*reactor, 3, 4, 64);
  ASSERT_TRUE(ring.ok());
  ExpectMode(**ring);
  MultishotReceiver receiver(*reactor, pair->first.get(), *ring);
  absl::StatusOr<Datagram> d = reactor->BlockOn(receiver.Next());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
}

// A group given up and created again receives into the new buffers only: the kernel forgot the
// old ones (unregistered, or taken back with REMOVE_BUFFERS) before their memory was unmapped.
TEST_P(BufferModeTest, AGroupCreatedAgainReceivesOnlyIntoItsNewBuffers) {
  Reactor* const reactor = reactor_.get();
  auto pair = UnixSocketPair(SOCK_DGRAM);
  ASSERT_TRUE(pair.ok());
  {
    // Twice the pages of the new group's buffers: they cannot all land where the new ones do.
    auto old_ring = BufferRing::Create(*reactor, 11, 4, 8192);
    ASSERT_TRUE(old_ring.ok()) << old_ring.status();
    ExpectMode(**old_ring);
    ASSERT_TRUE(reactor->RunOnce(false).ok());  // its buffers reach the kernel
  }
  auto ring = BufferRing::Create(*reactor, 11, 4, 512);
  ASSERT_TRUE(ring.ok()) << ring.status();
  ExpectMode(**ring);
  MultishotReceiver receiver(*reactor, pair->first.get(), *ring);
  constexpr int kDatagrams = 8;
  for (int i = 0; i < kDatagrams; ++i) ASSERT_EQ(::send(pair->second.get(), "abc", 3, 0), 3);
  int inside = 0;
  auto reader = [&]() -> Task<absl::Status> {
    for (int i = 0; i < kDatagrams; ++i) {
      absl::StatusOr<Datagram> d = co_await receiver.Next();
      if (!d.ok()) co_return d.status();
      if (d->payload != "abc") co_return absl::InternalError(std::string(d->payload));
      for (uint16_t id = 0; id < 4; ++id) {
        const absl::Span<char> buffer = (*ring)->Data(id);
        if (d->payload.data() >= buffer.data() &&
            d->payload.data() < buffer.data() + buffer.size()) {
          ++inside;
        }
      }
    }
    co_return absl::OkStatus();
  };
  const absl::Status status = reactor->BlockOn(reader());
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(inside, kDatagrams);
  EXPECT_EQ((*ring)->available(), 4u);
}

TEST(ReactorTest, CompletionOfADestroyedTaskInTheSameBatchIsNotResumed) {
  auto reactor = MakeReactor();
  bool b_ran_on = false;
  Task<void> b;
  auto b_body = [&]() -> Task<void> {
    (void)co_await Nop(*reactor);
    b_ran_on = true;
  };
  auto a_body = [&]() -> Task<void> {
    (void)co_await Nop(*reactor);
    b.Reset();  // B's NOP completed in the same batch; it must not be resumed afterwards
  };
  Task<void> a = a_body();
  a.Start();
  b = b_body();
  b.Start();
  while (!a.done()) ASSERT_TRUE(reactor->RunOnce(true).ok());
  EXPECT_FALSE(b_ran_on);
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST(ReactorTest, FullSubmissionQueueAndSmallCompletionQueueLoseNothing) {
  Reactor::Options options;
  options.sq_entries = 8;
  options.cq_entries = 16;
  auto reactor = MakeReactor(options);
  constexpr int kOps = 20'000;
  int done = 0;
  auto nop = [&]() -> Task<void> {
    if ((co_await Nop(*reactor)).ok()) ++done;
  };
  auto all = [&]() -> Task<void> {
    TaskScope scope;
    for (int i = 0; i < kOps; ++i) scope.Spawn(nop());
    co_await scope.Join();
  };
  ASSERT_TRUE(reactor->BlockOn(all()).ok());
  EXPECT_EQ(done, kOps);
}

TEST(ReactorTest, BlockOnATaskThatNothingCanWakeIsAnError) {
  auto reactor = MakeReactor();
  Notifier never;
  auto stuck = [&]() -> Task<void> { co_await never.Wait(); };
  EXPECT_EQ(reactor->BlockOn(stuck()).code(), absl::StatusCode::kFailedPrecondition);
}

void CheckWaitForExit(bool use_waitid) {
  Reactor::Options options;
  options.use_waitid = use_waitid;
  auto reactor = MakeReactor(options);
  EXPECT_EQ(reactor->features().waitid, use_waitid);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(3);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  ASSERT_GE(pidfd, 0);
  absl::StatusOr<ExitStatus> status = reactor->BlockOn(WaitForExit(*reactor, pidfd));
  ::close(pidfd);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->exited);
  EXPECT_EQ(status->code, 3);
  // Reaped: no zombie left for this pid.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// The kernel's release, as major * 1000 + minor (0 when it cannot be read).
int KernelVersion() {
  struct utsname u;
  if (::uname(&u) != 0) return 0;
  int major = 0;
  int minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return 0;
  return major * 1000 + minor;
}

// IORING_OP_WAITID came with 6.7: on an older kernel (Debian 12's 6.1, e.g. in the ARM guest)
// only the fallback can be checked. On a newer one the reactor must find and use it.
TEST(ReactorTest, WaitForExitWithWaitId) {
  if (KernelVersion() < 6007) GTEST_SKIP() << "IORING_OP_WAITID needs kernel 6.7";
  CheckWaitForExit(true);
}
TEST(ReactorTest, WaitForExitWithPollFallback) { CheckWaitForExit(false); }

TEST(ReactorTest, WaitForExitReportsSignals) {
  auto reactor = MakeReactor();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  ASSERT_GE(pidfd, 0);
  ASSERT_EQ(::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0), 0);
  absl::StatusOr<ExitStatus> status = reactor->BlockOn(WaitForExit(*reactor, pidfd));
  ::close(pidfd);
  ASSERT_TRUE(status.ok());
  EXPECT_FALSE(status->exited);
  EXPECT_EQ(status->code, SIGKILL);
}

// A connected pair of datagram sockets: `first` receives, `second` sends to it.
struct DatagramPair {
  UniqueFd first;
  UniqueFd second;
};

// Two NETLINK_KOBJECT_UEVENT sockets bound to no group (only unicasts from `second` reach
// `first`, never the host's uevents). A receive on netlink is batchable.
absl::StatusOr<DatagramPair> NetlinkPair() {
  DatagramPair pair;
  for (UniqueFd* fd : {&pair.first, &pair.second}) {
    *fd = UniqueFd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT));
    if (!fd->valid()) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
    sockaddr_nl self{};
    self.nl_family = AF_NETLINK;
    if (::bind(fd->get(), reinterpret_cast<sockaddr*>(&self), sizeof(self)) != 0) {
      return absl::InternalError(absl::StrCat("bind: ", strerror(errno)));
    }
  }
  const int buffer = 4 << 20;  // the burst must fit: unicasts to a full socket would block
  (void)::setsockopt(pair.first.get(), SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof(buffer));
  sockaddr_nl peer{};
  socklen_t length = sizeof(peer);
  if (::getsockname(pair.first.get(), reinterpret_cast<sockaddr*>(&peer), &length) != 0 ||
      ::connect(pair.second.get(), reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) != 0) {
    return absl::InternalError(absl::StrCat("getsockname/connect: ", strerror(errno)));
  }
  return pair;
}

absl::StatusOr<DatagramPair> UnixPair() {
  auto pair = UnixSocketPair(SOCK_DGRAM);
  if (!pair.ok()) return pair.status();
  return DatagramPair{std::move(pair->first), std::move(pair->second)};
}

// After a burst (on a batchable socket the loop then waits for a batch with a deadline),
// completions that come one at a time, from a timer, an inline NOP and another thread's
// datagram, are still delivered and nothing hangs. Returns the reactor's batching waits.
uint64_t CheckLoneCompletionsAfterABurst(Reactor::Options options, bool netlink) {
  auto reactor = MakeReactor(options);
  absl::StatusOr<DatagramPair> pair = netlink ? NetlinkPair() : UnixPair();
  EXPECT_TRUE(pair.ok()) << pair.status();
  if (!pair.ok()) return 0;
  auto ring = BufferRing::Create(*reactor, /*group_id=*/9, /*count=*/64, /*size=*/256);
  EXPECT_TRUE(ring.ok()) << ring.status();
  if (!ring.ok()) return 0;
  constexpr int kBurst = 100;
  for (int i = 0; i < kBurst; ++i) {
    const std::string msg = absl::StrCat("burst-", i);
    EXPECT_EQ(::send(pair->second.get(), msg.data(), msg.size(), 0),
              static_cast<ssize_t>(msg.size()))
        << strerror(errno);
  }
  std::vector<std::string> got;
  int timers = 0;
  int nops = 0;
  MultishotReceiver receiver(*reactor, pair->first.get(), *ring);
  std::thread late_sender;
  auto reader = [&]() -> Task<absl::Status> {
    for (int i = 0; i < kBurst; ++i) {
      absl::StatusOr<Datagram> d = co_await receiver.Receive();
      if (!d.ok()) co_return d.status();
      got.emplace_back(d->payload);
    }
    // One completion at a time from here on.
    for (int i = 0; i < 3; ++i) {
      const absl::Status slept = co_await Sleep(*reactor, absl::Milliseconds(2));
      if (slept.ok()) ++timers;
      if ((co_await Nop(*reactor)).ok()) ++nops;
    }
    const int fd = pair->second.get();
    late_sender = std::thread([fd] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      (void)::send(fd, "late", 4, 0);
    });
    absl::StatusOr<Datagram> late = co_await receiver.Receive();
    if (!late.ok()) co_return late.status();
    got.emplace_back(late->payload);
    co_return absl::OkStatus();
  };
  const absl::Status status = reactor->BlockOn(reader());
  if (late_sender.joinable()) late_sender.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(got.size(), static_cast<size_t>(kBurst + 1));
  for (int i = 0; i < kBurst && i < static_cast<int>(got.size()); ++i) {
    EXPECT_EQ(got[i], absl::StrCat("burst-", i));
  }
  if (!got.empty()) {
    EXPECT_EQ(got.back(), "late");
  }
  EXPECT_EQ(timers, 3);
  EXPECT_EQ(nops, 3);
  return reactor->batch_waits();
}

// A netlink burst makes the next wait batch with either way of providing buffers. With
// IORING_OP_PROVIDE_BUFFERS the buffers the reader gave back are re-provided by SQEs that go in
// with that wait: they complete at once, and if they posted completions the wait would find the
// CQ non-empty, return without waiting, and the round (our bookkeeping only) would end the
// batching (what the armhf guest showed: batch_waits 0). They post none on success
// (IOSQE_CQE_SKIP_SUCCESS).
class NetlinkBurstTest : public ::testing::TestWithParam<bool> {
 protected:
  Reactor::Options OptionsForMode() const {
    Reactor::Options options;
    options.use_buf_ring = GetParam();
    return options;
  }
};

INSTANTIATE_TEST_SUITE_P(, NetlinkBurstTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "RegisteredRing" : "ProvideBuffers";
                         });

TEST_P(NetlinkBurstTest, LoneCompletionsAfterANetlinkBurstAreDeliveredAndTheBurstIsBatched) {
  EXPECT_GT(CheckLoneCompletionsAfterABurst(OptionsForMode(), /*netlink=*/true), 0u);
}

TEST_P(NetlinkBurstTest, LoneCompletionsAfterANetlinkBurstAreDeliveredWithALongWindow) {
  Reactor::Options options = OptionsForMode();
  options.batch_window = absl::Milliseconds(5);  // longer than the timers above
  EXPECT_GT(CheckLoneCompletionsAfterABurst(options, /*netlink=*/true), 0u);
}

// A kernel without IOSQE_CQE_SKIP_SUCCESS (before 5.17) posts every PROVIDE_BUFFERS: the
// rounds that reap only those leave the batching as it was.
TEST(ReactorTest, NetlinkBurstIsBatchedWithProvidedBuffersPostingCompletions) {
  Reactor::Options options;
  options.use_buf_ring = false;
  options.use_cqe_skip = false;
  EXPECT_GT(CheckLoneCompletionsAfterABurst(options, /*netlink=*/true), 0u);
}

TEST(ReactorTest, NetlinkBurstWithoutBatchingNeverBatches) {
  Reactor::Options options;
  options.batch_window = absl::ZeroDuration();
  EXPECT_EQ(CheckLoneCompletionsAfterABurst(options, /*netlink=*/true), 0u);
}

// A unix datagram sender blocks when our queue is full: its burst must not make us batch.
TEST(ReactorTest, UnixDatagramBurstIsNeverBatched) {
  EXPECT_EQ(CheckLoneCompletionsAfterABurst(Reactor::Options(), /*netlink=*/false), 0u);
}

// Nor the completions of the PROVIDE_BUFFERS that give its buffers back (32-bit kernels with high
// memory): they are our bookkeeping, not a producer's burst.
TEST(ReactorTest, UnixDatagramBurstIsNeverBatchedWithProvidedBuffers) {
  Reactor::Options options;
  options.use_buf_ring = false;
  EXPECT_EQ(CheckLoneCompletionsAfterABurst(options, /*netlink=*/false), 0u);
}

// Bookkeeping SQEs post nothing when they succeed (where the kernel can skip it), and a
// failure still arrives and is counted.
TEST(ReactorTest, UntrackedSqesPostOnlyTheirFailures) {
  auto reactor = MakeReactor();
  if (!reactor->features().cqe_skip) GTEST_SKIP() << "no IOSQE_CQE_SKIP_SUCCESS (kernel 5.17)";
  std::vector<char> storage(64);
  reactor->QueueUntracked([&](io_uring_sqe* sqe) {
    io_uring_prep_provide_buffers(sqe, storage.data(), 64, 1, /*bgid=*/41, /*bid=*/0);
  });
  // Group 4242 was never given a buffer: ENOENT. (Not a group below 64: 6.1 keeps those in an
  // array once any group exists, and removing from an empty one there succeeds with 0.)
  reactor->QueueUntracked(
      [](io_uring_sqe* sqe) { io_uring_prep_remove_buffers(sqe, 1, /*bgid=*/4242); });
  reactor->QueueUntracked(
      [](io_uring_sqe* sqe) { io_uring_prep_remove_buffers(sqe, 1, /*bgid=*/41); });
  auto nop = [&]() -> Task<absl::Status> { co_return co_await Nop(*reactor); };
  ASSERT_TRUE(reactor->BlockOn(nop()).ok());
  // Submitted in order with the NOP and completed inline: the NOP and the one failure.
  EXPECT_EQ(reactor->completions_seen(), 2u);
  EXPECT_EQ(reactor->untracked_failures(), 1u);
}

// A queued madvise runs once submitted, and posts nothing when it succeeds: an anonymous
// page written before it reads as zero after (MADV_DONTNEED), and no completion arrives.
TEST(ReactorTest, QueuedMadviseRunsWithoutACompletion) {
  auto reactor = MakeReactor();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* const mem =
      ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  volatile char* const byte = static_cast<volatile char*>(mem);
  *byte = 'x';
  if (!reactor->features().cqe_skip) {
    EXPECT_FALSE(reactor->QueueMadvise(mem, page, MADV_DONTNEED));  // nothing queued
    ::munmap(mem, page);
    GTEST_SKIP() << "no IOSQE_CQE_SKIP_SUCCESS (kernel 5.17)";
  }
  ASSERT_TRUE(reactor->QueueMadvise(mem, page, MADV_DONTNEED));
  EXPECT_EQ(*byte, 'x');  // queued, not submitted
  ASSERT_TRUE(reactor->Flush().ok());
  // The kernel may run it on a worker of its own, after the submission returned.
  const MonoTime deadline = MonoNow() + absl::Seconds(30);
  while (*byte != 0 && MonoNow() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(*byte, 0);
  auto nop = [&]() -> Task<absl::Status> { co_return co_await Nop(*reactor); };
  ASSERT_TRUE(reactor->BlockOn(nop()).ok());
  EXPECT_EQ(reactor->completions_seen(), 1u);  // the NOP's alone
  EXPECT_EQ(reactor->untracked_failures(), 0u);
  ::munmap(mem, page);
}

TEST(ReactorTest, SignalsArriveThroughTheRing) {
  auto reactor = MakeReactor();
  auto signals = SignalFd::Create({SIGUSR1});
  ASSERT_TRUE(signals.ok()) << signals.status();
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  absl::StatusOr<int> sig = reactor->BlockOn(signals->Next(*reactor));
  ASSERT_TRUE(sig.ok()) << sig.status();
  EXPECT_EQ(*sig, SIGUSR1);
}

// A child whose seccomp filter makes io_uring_setup fail gets one clear error, not a crash.
TEST(ReactorTest, DisabledIoUringIsOneClearError) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(10);
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) ::_exit(11);
    absl::StatusOr<std::unique_ptr<Reactor>> r = Reactor::Create();
    const std::string text = r.ok() ? "ok" : r.status().ToString();
    (void)!::write(pipefd[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string text;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof(buf))) > 0) text.append(buf, n);
  ::close(pipefd[0]);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  EXPECT_NE(text.find("io_uring is disabled"), std::string::npos) << text;
}

TEST(SocketTest, SecondBindOnALiveSocketIsRefusedAndAStaleOneIsReplaced) {
  char dir[] = "/tmp/hotring_sock_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = absl::StrCat(dir, "/control");
  {
    auto first = BindUnix(SOCK_DGRAM, path);
    ASSERT_TRUE(first.ok()) << first.status();
    auto second = BindUnix(SOCK_DGRAM, path);
    EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists) << second.status();
  }
  // The first socket is closed; its file is stale and may be replaced.
  auto third = BindUnix(SOCK_DGRAM, path);
  EXPECT_TRUE(third.ok()) << third.status();
  ::unlink(path.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace hotring::io

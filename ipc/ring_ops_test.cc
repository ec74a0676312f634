#include "ipc/ring_ops.h"

#include <sys/socket.h>

#include <cstring>

#include "core/task.h"
#include "core/task_scope.h"
#include "gtest/gtest.h"
#include "io/ops.h"
#include "io/reactor.h"
#include "io/socket.h"

namespace hotring::ipc {
namespace {

std::unique_ptr<io::Reactor> MakeReactor() {
  absl::StatusOr<std::unique_ptr<io::Reactor>> r = io::Reactor::Create();
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(*r);
}

io::Buffer Bytes(absl::string_view text) { return io::Buffer(text.begin(), text.end()); }

// Echoes `count` messages, upper-casing the first byte so the reply differs from the request.
Task<void> Echo(io::Reactor& reactor, int fd, int count) {
  for (int i = 0; i < count; ++i) {
    io::BufferResult got = co_await io::Recv(reactor, fd, io::Buffer(64));
    if (!got.bytes.ok() || *got.bytes == 0) co_return;
    got.buffer.resize(*got.bytes);
    got.buffer[0] = static_cast<char>(got.buffer[0] - 'a' + 'A');
    io::BufferResult sent = co_await io::Send(reactor, fd, std::move(got.buffer));
    if (!sent.bytes.ok()) co_return;
  }
}

Task<void> CallOnce(io::Reactor& reactor, int fd, std::string request, Transfer* out) {
  const size_t length = request.size();
  *out = co_await SendThenRecv(reactor, fd, Bytes(request), length, MSG_NOSIGNAL, fd,
                               io::Buffer(64), 0, /*poll_first=*/true);
}

TEST(SendThenRecvTest, OneSubmissionCarriesTheRequestAndBringsTheReply) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = io::UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok());
  TaskScope echo;
  echo.Spawn(Echo(*reactor, pair->second.get(), 3));
  for (const std::string request : {"ping", "hello", "x"}) {
    Transfer t;
    const uint64_t before = reactor->completions_seen();
    ASSERT_TRUE(reactor->BlockOn(CallOnce(*reactor, pair->first.get(), request, &t)).ok());
    ASSERT_TRUE(t.received.ok()) << t.received.status();
    ASSERT_EQ(*t.received, request.size());
    std::string expected = request;
    expected[0] = static_cast<char>(expected[0] - 'a' + 'A');
    EXPECT_EQ(std::string(t.receive_buffer.data(), *t.received), expected);
    // The send buffer comes back whole.
    EXPECT_EQ(std::string(t.send_buffer.begin(), t.send_buffer.end()), request);
    // Our side produced one completion for send + receive (the echo's recv and send add two).
    EXPECT_EQ(reactor->completions_seen() - before, 3u);
  }
  EXPECT_TRUE(echo.empty()) << "the echo answered all three";
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST(SendThenRecvTest, AFailedSendIsTheOneCompletionAndNothingIsLeftInFlight) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = io::UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok());
  pair->second.Reset();  // nobody to send to
  Transfer t;
  ASSERT_TRUE(reactor->BlockOn(CallOnce(*reactor, pair->first.get(), "ping", &t)).ok());
  ASSERT_FALSE(t.received.ok());
  EXPECT_NE(t.received.status().message().find("send/recv"), absl::string_view::npos)
      << t.received.status();
  EXPECT_EQ(std::string(t.send_buffer.begin(), t.send_buffer.end()), "ping");
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST(SendThenRecvTest, DroppingAPendingCallCancelsIt) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = io::UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok());
  {
    Transfer t;
    Task<void> call = CallOnce(*reactor, pair->first.get(), "ping", &t);
    call.Start();
    ASSERT_TRUE(reactor->RunOnce(false).ok());
    ASSERT_FALSE(call.done()) << "no reply can have come";
  }
  for (int i = 0; i < 100 && reactor->in_flight() > 0; ++i) {
    ASSERT_TRUE(reactor->RunOnce(true).ok());
  }
  EXPECT_EQ(reactor->in_flight(), 0u);
  // The request did go out before the receive was cancelled.
  char buffer[16];
  EXPECT_EQ(::recv(pair->second.get(), buffer, sizeof(buffer), MSG_DONTWAIT), 4);
}

TEST(SendThenRecvTest, PlainReceiveWorks) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = io::UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok());
  ASSERT_EQ(::send(pair->second.get(), "abc", 3, 0), 3);
  Transfer t;
  auto receive = [](io::Reactor& r, int fd, Transfer* out) -> Task<void> {
    *out = co_await RecvInto(r, fd, io::Buffer(8), MSG_TRUNC, /*poll_first=*/false);
  };
  ASSERT_TRUE(reactor->BlockOn(receive(*reactor, pair->first.get(), &t)).ok());
  ASSERT_TRUE(t.received.ok());
  EXPECT_EQ(*t.received, 3u);
  EXPECT_TRUE(t.send_buffer.empty());
}

}  // namespace
}  // namespace hotring::ipc

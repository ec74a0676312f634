// Tests of the SEQPACKET benchmark: in-process runs of the server and client coroutines, and
// runs of the real processes. The test binary doubles as the benchmark executable: started as
// `<test> bench <name> ...` it runs the bench subcommand (see main below), which is how the
// all-in-one `uds` bench starts its server and clients from here.
#include "ipc/uds_bench.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/command_table.h"
#include "core/status.h"
#include "core/task_scope.h"
#include "gtest/gtest.h"
#include "io/ops.h"
#include "io/process/child_process.h"
#include "io/process/spawner.h"
#include "io/reactor.h"
#include "io/socket.h"
#include "ipc/bench_cli.h"
#include "ipc/uds_launcher.h"

namespace hotring::ipc {
namespace {

std::unique_ptr<io::Reactor> MakeReactor() {
  absl::StatusOr<std::unique_ptr<io::Reactor>> r = io::Reactor::Create();
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(*r);
}

// A socket path in /tmp: Bazel's TEST_TMPDIR under the default output base is longer than
// sun_path's 108 bytes allow.
std::string TempPath(absl::string_view name) {
  return absl::StrCat("/tmp/hotring-", name, "-", ::getpid());
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// ---- message framing ----

TEST(UdsMessageTest, StampedMessagesCheckAndCorruptionIsFound) {
  for (const size_t size : {1u, 2u, 7u, 8u, 9u, 100u, 4096u}) {
    std::vector<char> data(size);
    StampMessage(data.data(), size, 12345, /*full=*/true);
    EXPECT_TRUE(CheckMessage(data.data(), size, 12345, true).ok()) << size;
    // A different sequence number is out of order (for one byte, 12345 and 12346 differ too).
    EXPECT_TRUE(absl::IsDataLoss(CheckMessage(data.data(), size, 12346, false))) << size;
    if (size > 8) {
      data[size - 1] ^= 0x40;
      EXPECT_TRUE(CheckMessage(data.data(), size, 12345, false).ok()) << "header still right";
      EXPECT_TRUE(absl::IsDataLoss(CheckMessage(data.data(), size, 12345, true))) << size;
    }
  }
}

TEST(UdsOptionsTest, SizeAboveTheSocketLimitIsRejected) {
  absl::StatusOr<size_t> limit = SeqpacketMessageLimit();
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(SeqpacketLimitForSndbuf(212992), 212960u);
  UdsClientOptions options;
  options.size = *limit;
  EXPECT_TRUE(ValidateUdsClientOptions(options, *limit).ok());
  options.size = *limit + 1;
  const absl::Status too_big = ValidateUdsClientOptions(options, *limit);
  EXPECT_TRUE(absl::IsInvalidArgument(too_big));
  EXPECT_NE(too_big.message().find("SOCK_SEQPACKET limit"), absl::string_view::npos);
  options.size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateUdsClientOptions(options, *limit)));
  options.size = 64;
  options.loops = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateUdsClientOptions(options, *limit)));
}

TEST(UdsOptionsTest, TheKernelAgreesWithTheLimit) {
  absl::StatusOr<size_t> limit = SeqpacketMessageLimit();
  ASSERT_TRUE(limit.ok()) << limit.status();
  absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = io::UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok()) << pair.status();
  std::vector<char> big(*limit + 1, 'x');
  EXPECT_EQ(::send(pair->first.get(), big.data(), *limit, MSG_DONTWAIT), static_cast<ssize_t>(*limit));
  EXPECT_EQ(::send(pair->first.get(), big.data(), *limit + 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EMSGSIZE);
}

TEST(UdsCliTest, BadArgumentsExitWithTwo) {
  absl::StatusOr<size_t> limit = SeqpacketMessageLimit();
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(BenchUdsCommand({"--size", absl::StrCat(*limit + 1)}), 2);
  EXPECT_EQ(BenchUdsCommand({"--size", "0"}), 2);
  EXPECT_EQ(BenchUdsCommand({"--size", "-5"}), 2);
  EXPECT_EQ(BenchUdsCommand({"--loops", "0"}), 2);
  EXPECT_EQ(BenchUdsCommand({"--mode", "broadcast"}), 2);
  EXPECT_EQ(BenchUdsCommand({"--server-cpu", "100000"}), 2);
  EXPECT_EQ(BenchUdsCommand({"--server-cpu", "1023"}), 2) << "not an allowed CPU here";
  EXPECT_EQ(BenchUdsCommand({"--timeout", "-1"}), 2);
  EXPECT_EQ(BenchUdsClientCommand({"--size", absl::StrCat(*limit + 1)}), 2);
  EXPECT_EQ(BenchUdsServerCommand({"--socket", "@x", "--listen-fd", "3"}), 2);
  EXPECT_EQ(BenchUdsServerCommand({"--mode"}), 2);
}

// ---- in-process: server and client coroutines on one reactor ----

struct InProcess {
  absl::StatusOr<UdsServerResult> server = absl::UnknownError("not run");
  std::vector<absl::StatusOr<UdsClientResult>> clients;
};

Task<void> ServeInto(io::Reactor& reactor, int listen_fd, UdsMode mode,
                     absl::StatusOr<UdsServerResult>* out) {
  *out = co_await RunUdsServer(reactor, listen_fd, mode);
}

Task<void> CallInto(io::Reactor& reactor, int fd, UdsClientOptions options,
                    absl::StatusOr<UdsClientResult>* out) {
  *out = co_await RunUdsClient(reactor, fd, options);
}

// Like a client process: the connection closes when the client is done, which is how the
// server learns the run is over.
Task<void> CallAndHangUp(io::Reactor& reactor, UniqueFd fd, UdsClientOptions options,
                         absl::StatusOr<UdsClientResult>* out) {
  *out = co_await RunUdsClient(reactor, fd.get(), options);
}

// Connects the clients first (so the caller is the first in the backlog), then runs server and
// clients together.
Task<absl::Status> RunTogether(io::Reactor& reactor, UdsMode mode, UdsClientOptions options,
                               InProcess* out) {
  const std::string name = absl::StrCat("@hotring-uds-test-", ::getpid(), "-", rand());
  HOTRING_CO_ASSIGN_OR_RETURN(UniqueFd listener, io::BindUnix(SOCK_SEQPACKET, name));
  if (::listen(listener.get(), 4) != 0) co_return absl::InternalError("listen");
  const int clients = mode == UdsMode::kRelay ? 2 : 1;
  std::vector<UniqueFd> fds;
  for (int i = 0; i < clients; ++i) {
    HOTRING_CO_ASSIGN_OR_RETURN(UniqueFd fd, io::ConnectUnix(SOCK_SEQPACKET, name));
    fds.push_back(std::move(fd));
  }
  out->clients.resize(clients, absl::UnknownError("not run"));
  TaskScope scope;
  scope.Spawn(ServeInto(reactor, listener.get(), mode, &out->server));
  for (int i = 0; i < clients; ++i) {
    scope.Spawn(CallAndHangUp(reactor, std::move(fds[i]), options, &out->clients[i]));
  }
  co_await scope.Join();
  co_return absl::OkStatus();
}

struct Case {
  UdsMode mode;
  UdsCalls calls;
  size_t size;
};

class UdsInProcessTest : public ::testing::TestWithParam<Case> {};

TEST_P(UdsInProcessTest, EveryCallComesBackIntactAndCountsAddUp) {
  const Case c = GetParam();
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  UdsClientOptions options;
  options.calls = c.calls;
  options.size = c.size;
  options.loops = 2000;
  options.verify = true;
  InProcess out;
  const absl::Status status = reactor->BlockOn(RunTogether(*reactor, c.mode, options, &out));
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(out.server.ok()) << out.server.status();
  ASSERT_TRUE(out.clients[0].ok()) << out.clients[0].status();
  EXPECT_EQ(out.clients[0]->role, 1);
  EXPECT_EQ(out.clients[0]->messages, options.loops);
  EXPECT_GT(out.clients[0]->seconds, 0);
  if (c.mode == UdsMode::kRelay) {
    ASSERT_TRUE(out.clients[1].ok()) << out.clients[1].status();
    EXPECT_EQ(out.clients[1]->role, 2);
    EXPECT_EQ(out.clients[1]->messages, options.loops);
    EXPECT_EQ(out.server->messages, 2 * options.loops);
  } else {
    EXPECT_EQ(out.server->messages, options.loops);
  }
  EXPECT_EQ(reactor->in_flight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, UdsInProcessTest,
    ::testing::Values(Case{UdsMode::kSingle, UdsCalls::kSync, 4096},
                      Case{UdsMode::kSingle, UdsCalls::kAsync, 4096},
                      Case{UdsMode::kRelay, UdsCalls::kSync, 4096},
                      Case{UdsMode::kRelay, UdsCalls::kAsync, 4096},
                      Case{UdsMode::kSingle, UdsCalls::kAsync, 1},
                      Case{UdsMode::kSingle, UdsCalls::kSync, 100000},
                      Case{UdsMode::kRelay, UdsCalls::kAsync, 3}));

// A server that answers with the wrong message: the caller must notice.
Task<void> CorruptingEcho(io::Reactor& reactor, int fd) {
  const char role = 0;
  if (::send(fd, &role, 1, 0) != 1) co_return;
  for (int i = 0; i < 3; ++i) {
    io::BufferResult got = co_await io::Recv(reactor, fd, io::Buffer(64));
    if (!got.bytes.ok() || *got.bytes == 0) co_return;
    got.buffer.resize(*got.bytes);
    if (i == 2) got.buffer[0] ^= 1;  // the third reply carries the wrong sequence number
    io::BufferResult sent = co_await io::Send(reactor, fd, std::move(got.buffer));
    if (!sent.bytes.ok()) co_return;
  }
}

TEST(UdsClientTest, OutOfOrderReplyIsDataLoss) {
  for (const UdsCalls calls : {UdsCalls::kSync, UdsCalls::kAsync}) {
    std::unique_ptr<io::Reactor> reactor = MakeReactor();
    absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = io::UnixSocketPair(SOCK_SEQPACKET);
    ASSERT_TRUE(pair.ok());
    UdsClientOptions options;
    options.calls = calls;
    options.size = 64;
    options.loops = 10;
    absl::StatusOr<UdsClientResult> result = absl::UnknownError("not run");
    {
      TaskScope scope;
      scope.Spawn(CorruptingEcho(*reactor, pair->second.get()));
      ASSERT_TRUE(reactor->BlockOn(CallInto(*reactor, pair->first.get(), options, &result)).ok());
    }
    ASSERT_FALSE(result.ok());
    EXPECT_TRUE(absl::IsDataLoss(result.status())) << result.status();
    EXPECT_NE(result.status().message().find("expected message 2"), absl::string_view::npos)
        << result.status();
  }
}

TEST(UdsClientTest, ServerHangingUpEarlyIsAnError) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  absl::StatusOr<std::pair<UniqueFd, UniqueFd>> pair = io::UnixSocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok());
  const char role = 0;
  ASSERT_EQ(::send(pair->second.get(), &role, 1, 0), 1);
  pair->second.Reset();
  UdsClientOptions options;
  options.size = 64;
  options.loops = 10;
  absl::StatusOr<UdsClientResult> result = absl::UnknownError("not run");
  ASSERT_TRUE(reactor->BlockOn(CallInto(*reactor, pair->first.get(), options, &result)).ok());
  EXPECT_FALSE(result.ok());
}

// ---- separate processes ----

std::string SelfExe() { return "/proc/self/exe"; }

absl::StatusOr<UdsLaunchResult> Launch(UdsLaunchOptions options) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  options.self_exe = SelfExe();
  options.self_argv = {"uds_bench_test", "bench"};
  options.timeout = absl::Seconds(60);
  int signo = 0;
  return reactor->BlockOn(RunUdsLaunch(*reactor, options, nullptr, &signo));
}

TEST(UdsLaunchTest, SingleSyncAcrossProcessesOnAFilesystemSocket) {
  UdsLaunchOptions options;
  options.mode = UdsMode::kSingle;
  options.client.calls = UdsCalls::kSync;
  options.client.size = 512;
  options.client.loops = 3000;
  options.client.verify = true;
  options.server_cpu = 0;
  options.client_cpu = 0;
  options.socket = TempPath("uds-single.sock");
  absl::StatusOr<UdsLaunchResult> result = Launch(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->caller.messages, 3000u);
  EXPECT_EQ(result->server.messages, 3000u);
  EXPECT_FALSE(result->echo.has_value());
  EXPECT_FALSE(PathExists(options.socket)) << "socket file left behind";
  const std::string text = FormatUdsLaunchResult(*result, false);
  EXPECT_NE(text.find(" s, "), std::string::npos);
  EXPECT_NE(text.find(" msg/s, "), std::string::npos);
  EXPECT_NE(text.find(" us/msg, "), std::string::npos);
  EXPECT_NE(text.find(" MB/s"), std::string::npos);
}

TEST(UdsLaunchTest, RelayAsyncAcrossProcesses) {
  UdsLaunchOptions options;
  options.mode = UdsMode::kRelay;
  options.client.calls = UdsCalls::kAsync;
  options.client.size = 1000;
  options.client.loops = 3000;
  options.client.verify = true;
  options.client_cpu = 0;
  options.client2_cpu = 0;
  absl::StatusOr<UdsLaunchResult> result = Launch(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->caller.role, 1);
  EXPECT_EQ(result->caller.messages, 3000u);
  ASSERT_TRUE(result->echo.has_value());
  EXPECT_EQ(result->echo->messages, 3000u);
  EXPECT_EQ(result->server.messages, 6000u);
  const std::string json = FormatUdsLaunchResult(*result, true);
  EXPECT_NE(json.find("\"server_messages\": 6000"), std::string::npos) << json;
}

TEST(UdsLaunchTest, RelaySyncAcrossProcessesWithTheDefaultAbstractSocket) {
  UdsLaunchOptions options;
  options.mode = UdsMode::kRelay;
  options.client.calls = UdsCalls::kSync;
  options.client.size = 64;
  options.client.loops = 1000;
  options.client.verify = true;
  absl::StatusOr<UdsLaunchResult> result = Launch(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->server.messages, 2000u);
}

TEST(UdsLaunchTest, SizeAboveTheLimitStartsNothing) {
  absl::StatusOr<size_t> limit = SeqpacketMessageLimit();
  ASSERT_TRUE(limit.ok());
  UdsLaunchOptions options;
  options.client.size = *limit + 1;
  options.socket = TempPath("uds-too-big.sock");
  absl::StatusOr<UdsLaunchResult> result = Launch(options);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_FALSE(PathExists(options.socket));
}

TEST(UdsLaunchTest, FailingChildrenEndTheRunWithTheirStatus) {
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  UdsLaunchOptions options;
  options.self_exe = "/bin/false";
  options.socket = TempPath("uds-false.sock");
  options.timeout = absl::Seconds(60);
  int signo = 0;
  const absl::Time start = absl::Now();
  absl::StatusOr<UdsLaunchResult> result =
      reactor->BlockOn(RunUdsLaunch(*reactor, options, nullptr, &signo));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("failed (exit code 1)"), absl::string_view::npos)
      << result.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30)) << "waited for the timeout";
  EXPECT_FALSE(PathExists(options.socket));
}

using io::process::ChildProcess;
using io::process::DescribeExit;

// Starts this test binary as a bench process, as the launcher does.
absl::StatusOr<ChildProcess> StartBench(std::vector<std::string> argv) {
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<io::process::Spawner> spawner,
                           io::process::Spawner::Create());
  return spawner->Start(BenchProcessRequest(SelfExe(), std::move(argv)));
}

TEST(UdsServerProcessTest, SigtermRemovesTheSocketFile) {
  const std::string path = TempPath("uds-server-term.sock");
  absl::StatusOr<ChildProcess> server =
      StartBench({"uds_bench_test", "bench", "uds-server", "--socket", path});
  ASSERT_TRUE(server.ok()) << server.status();
  for (int i = 0; i < 500 && !PathExists(path); ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(PathExists(path)) << "the server never bound " << path;
  ASSERT_TRUE(server->Signal(SIGTERM).ok());
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  absl::StatusOr<io::ExitStatus> exit = reactor->BlockOn(server->Wait(*reactor));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->exited) << DescribeExit(*exit);
  EXPECT_EQ(exit->code, 128 + SIGTERM);
  EXPECT_FALSE(PathExists(path)) << "socket file left behind";
}

TEST(UdsServerProcessTest, StandaloneServerAndClientTalk) {
  const std::string path = TempPath("uds-standalone.sock");
  absl::StatusOr<ChildProcess> server =
      StartBench({"uds_bench_test", "bench", "uds-server", "--socket", path, "--json"});
  ASSERT_TRUE(server.ok()) << server.status();
  for (int i = 0; i < 500 && !PathExists(path); ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(PathExists(path));
  absl::StatusOr<ChildProcess> client =
      StartBench({"uds_bench_test", "bench", "uds-client", "--socket", path, "--async", "--size",
                  "300", "--loops", "500", "--verify", "--json"});
  ASSERT_TRUE(client.ok()) << client.status();
  std::unique_ptr<io::Reactor> reactor = MakeReactor();
  absl::StatusOr<std::string> client_out = reactor->BlockOn(client->ReadStdout(*reactor));
  absl::StatusOr<std::string> server_out = reactor->BlockOn(server->ReadStdout(*reactor));
  absl::StatusOr<io::ExitStatus> client_exit = reactor->BlockOn(client->Wait(*reactor));
  absl::StatusOr<io::ExitStatus> server_exit = reactor->BlockOn(server->Wait(*reactor));
  ASSERT_TRUE(client_out.ok() && server_out.ok() && client_exit.ok() && server_exit.ok());
  EXPECT_TRUE(client_exit->success()) << DescribeExit(*client_exit);
  EXPECT_TRUE(server_exit->success()) << DescribeExit(*server_exit);
  absl::StatusOr<UdsClientResult> c = ParseUdsClientJson(*client_out);
  absl::StatusOr<UdsServerResult> s = ParseUdsServerJson(*server_out);
  ASSERT_TRUE(c.ok()) << c.status() << " in " << *client_out;
  ASSERT_TRUE(s.ok()) << s.status() << " in " << *server_out;
  EXPECT_EQ(c->messages, 500u);
  EXPECT_EQ(c->calls, UdsCalls::kAsync);
  EXPECT_EQ(s->messages, 500u);
  EXPECT_FALSE(PathExists(path));
}

}  // namespace
}  // namespace hotring::ipc

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "bench") == 0) {
    const hotring::Command* bench =
        hotring::FindCommand(hotring::ipc::IpcBenches(), "bench", argv[2]);
    if (bench == nullptr) return 2;
    return bench->run(std::vector<std::string>(argv + 3, argv + argc));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

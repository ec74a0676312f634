#include "ipc/uds_bench.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/task_scope.h"
#include "io/ops.h"
#include "io/socket.h"
#include "core/json.h"
#include "ipc/ring_ops.h"

namespace hotring::ipc {
namespace {

constexpr char kRoleCaller = '\0';
constexpr char kRoleEcho = '\1';
// Forwarders receive into buffers at least this large even where the socket limit is lower,
// so a peer with a bigger send buffer (the seed client, say) is still relayed whole.
constexpr size_t kMinForwardBuffer = 65536;

// The peer went away: for a relay or an echo that is the end of the stream, not a failure.
bool PeerGone(const absl::Status& status) {
  const int err = StatusErrno(status);
  return err == ECONNRESET || err == EPIPE || err == ENOTCONN;
}

uint64_t SeqMask(size_t size) {
  return size >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * size)) - 1;
}

char PayloadByte(uint64_t seq, size_t i) { return static_cast<char>((seq * 131 + i * 7) & 0xff); }

// Receives on `from` and passes each message to `to` (the same socket for an echo) until end
// of stream or until `to` is gone. Passing one message on and waiting for the next is one
// submission (a linked send and receive). Returns how many messages were passed on.
Task<absl::StatusOr<uint64_t>> Forward(io::Reactor& reactor, int from, int to,
                                       size_t buffer_size) {
  io::Buffer spare(buffer_size);
  Transfer t = co_await RecvInto(reactor, from, io::Buffer(buffer_size), MSG_TRUNC,
                                 /*poll_first=*/false);
  uint64_t passed = 0;
  for (;;) {
    // An error here is the receive's or, after the first round, the linked send's: either way
    // the stream is over, and the last message is not counted as passed on.
    if (!t.received.ok()) {
      if (PeerGone(t.received.status())) co_return passed;
      co_return t.received.status();
    }
    const size_t length = *t.received;
    if (length == 0) co_return passed;
    if (length > t.receive_buffer.size()) {
      co_return absl::DataLossError(absl::StrFormat(
          "relay: a %d-byte message does not fit the %d-byte buffer", length,
          t.receive_buffer.size()));
    }
    // No IORING_RECVSEND_POLL_FIRST here: a pipelining caller usually has the next message
    // queued already (and Unix sockets do not set IORING_CQE_F_SOCK_NONEMPTY to tell).
    t = co_await SendThenRecv(reactor, to, std::move(t.receive_buffer), length, MSG_NOSIGNAL,
                              from, std::move(spare), MSG_TRUNC, /*poll_first=*/false);
    spare = std::move(t.send_buffer);
    // The receive only runs once the send linked before it succeeded.
    if (t.received.ok()) ++passed;
  }
}

// One relay direction of the server, reporting into `*out`. When it ends (or fails) it shuts
// both sockets down, which ends the other direction and tells both clients.
Task<void> RelayDirection(io::Reactor& reactor, int from, int to, size_t buffer_size,
                          absl::StatusOr<uint64_t>* out) {
  *out = co_await Forward(reactor, from, to, buffer_size);
  ::shutdown(from, SHUT_RDWR);
  ::shutdown(to, SHUT_RDWR);
}

absl::Status SendRole(int fd, char role) {
  // A one-byte send on a fresh connection cannot block; doing it directly keeps the order
  // (echo peer told first, then the caller, as the seed server does) explicit.
  if (::send(fd, &role, 1, MSG_NOSIGNAL) != 1) return ErrnoStatus("send(role)");
  return absl::OkStatus();
}

absl::Status CheckSent(const io::BufferResult& sent, size_t size, uint64_t seq) {
  if (!sent.bytes.ok()) return sent.bytes.status();
  if (*sent.bytes != size) {
    return absl::DataLossError(absl::StrFormat("call %d: sent %d of %d bytes", seq, *sent.bytes,
                                               size));
  }
  return absl::OkStatus();
}

absl::Status CheckReply(const absl::StatusOr<size_t>& received, const io::Buffer& buffer,
                        size_t size, uint64_t seq, uint64_t loops, bool full) {
  if (!received.ok()) return received.status();
  if (*received == 0) {
    return absl::UnavailableError(absl::StrFormat(
        "the server closed the connection after %d of %d replies", seq, loops));
  }
  if (*received != size) {
    return absl::DataLossError(
        absl::StrFormat("reply %d has %d bytes, expected %d", seq, *received, size));
  }
  return CheckMessage(buffer.data(), size, seq, full);
}

// One call in flight: each request and the wait for its reply are one submission.
Task<absl::Status> SyncCalls(io::Reactor& reactor, int fd, const UdsClientOptions& options) {
  const size_t size = options.size;
  io::Buffer out(size);
  io::Buffer in(size);
  if (!options.verify) std::fill(out.begin(), out.end(), 'x');
  for (uint64_t seq = 0; seq < options.loops; ++seq) {
    StampMessage(out.data(), size, seq, options.verify);
    Transfer t = co_await SendThenRecv(reactor, fd, std::move(out), size, MSG_NOSIGNAL, fd,
                                       std::move(in), MSG_TRUNC, /*poll_first=*/true);
    HOTRING_CO_RETURN_IF_ERROR(
        CheckReply(t.received, t.receive_buffer, size, seq, options.loops, options.verify));
    out = std::move(t.send_buffer);
    in = std::move(t.receive_buffer);
  }
  co_return absl::OkStatus();
}

// The two halves of a pipelined caller. The first failure is kept and both directions of the
// socket are shut down, so the other half stops waiting too.
struct AsyncState {
  int fd = -1;
  absl::Status status;
  void Fail(absl::Status failure) {
    if (status.ok()) status = std::move(failure);
    ::shutdown(fd, SHUT_RDWR);
  }
};

Task<void> AsyncWriter(io::Reactor& reactor, const UdsClientOptions* options, AsyncState* state) {
  const size_t size = options->size;
  io::Buffer out(size);
  if (!options->verify) std::fill(out.begin(), out.end(), 'x');
  for (uint64_t seq = 0; seq < options->loops; ++seq) {
    StampMessage(out.data(), size, seq, options->verify);
    io::BufferResult sent =
        co_await SendPrefix(reactor, state->fd, std::move(out), size, MSG_NOSIGNAL);
    if (const absl::Status s = CheckSent(sent, size, seq); !s.ok()) {
      state->Fail(s);
      co_return;
    }
    out = std::move(sent.buffer);
  }
}

Task<void> AsyncReader(io::Reactor& reactor, const UdsClientOptions* options, AsyncState* state) {
  const size_t size = options->size;
  io::Buffer in(size);
  for (uint64_t seq = 0; seq < options->loops; ++seq) {
    Transfer got = co_await RecvInto(reactor, state->fd, std::move(in), MSG_TRUNC,
                                     /*poll_first=*/false);
    if (const absl::Status s = CheckReply(got.received, got.receive_buffer, size, seq,
                                          options->loops, options->verify);
        !s.ok()) {
      state->Fail(s);
      co_return;
    }
    in = std::move(got.receive_buffer);
  }
}

Task<absl::Status> AsyncCalls(io::Reactor& reactor, int fd, const UdsClientOptions& options) {
  AsyncState state;
  state.fd = fd;
  TaskScope scope;
  scope.Spawn(AsyncReader(reactor, &options, &state));
  scope.Spawn(AsyncWriter(reactor, &options, &state));
  co_await scope.Join();
  co_return state.status;
}

}  // namespace

absl::string_view UdsModeName(UdsMode mode) {
  switch (mode) {
    case UdsMode::kSingle:
      return "single";
    case UdsMode::kRelay:
      return "relay";
  }
  return "?";
}

absl::string_view UdsCallsName(UdsCalls calls) {
  switch (calls) {
    case UdsCalls::kSync:
      return "sync";
    case UdsCalls::kAsync:
      return "async";
  }
  return "?";
}

absl::StatusOr<UdsMode> ParseUdsMode(absl::string_view text) {
  if (text == "single") return UdsMode::kSingle;
  // "dbus" is the seed server's name for the relay.
  if (text == "relay" || text == "dbus") return UdsMode::kRelay;
  return absl::InvalidArgumentError(
      absl::StrCat("--mode must be single or relay, got '", text, "'"));
}

size_t SeqpacketLimitForSndbuf(int sndbuf) {
  return sndbuf > 32 ? static_cast<size_t>(sndbuf) - 32 : 0;
}

absl::StatusOr<size_t> SeqpacketMessageLimit() {
  HOTRING_ASSIGN_OR_RETURN(const UniqueFd fd, io::UnixSocket(SOCK_SEQPACKET));
  int sndbuf = 0;
  socklen_t len = sizeof(sndbuf);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) != 0) {
    return ErrnoStatus("getsockopt(SO_SNDBUF)");
  }
  return SeqpacketLimitForSndbuf(sndbuf);
}

absl::Status ValidateUdsClientOptions(const UdsClientOptions& options, size_t limit) {
  if (options.size == 0 || options.size > limit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--size must be 1..%d (the SOCK_SEQPACKET limit here: net.core.wmem_default minus 32), "
        "got %d",
        limit, options.size));
  }
  if (options.loops == 0) return absl::InvalidArgumentError("--loops must be at least 1");
  return absl::OkStatus();
}

void StampMessage(char* data, size_t size, uint64_t seq, bool full) {
  std::memcpy(data, &seq, std::min<size_t>(size, 8));
  if (!full) return;
  for (size_t i = 8; i < size; ++i) data[i] = PayloadByte(seq, i);
}

absl::Status CheckMessage(const char* data, size_t size, uint64_t seq, bool full) {
  uint64_t got = 0;
  std::memcpy(&got, data, std::min<size_t>(size, 8));
  if (got != (seq & SeqMask(size))) {
    return absl::DataLossError(absl::StrFormat(
        "reply out of order: expected message %d, got %d", seq & SeqMask(size), got));
  }
  if (!full) return absl::OkStatus();
  for (size_t i = 8; i < size; ++i) {
    if (data[i] != PayloadByte(seq, i)) {
      return absl::DataLossError(
          absl::StrFormat("reply %d corrupted at byte %d of %d", seq, i, size));
    }
  }
  return absl::OkStatus();
}

Task<absl::StatusOr<UdsServerResult>> RunUdsServer(io::Reactor& reactor, int listen_fd,
                                                   UdsMode mode) {
  HOTRING_CO_ASSIGN_OR_RETURN(const size_t limit, SeqpacketMessageLimit());
  const size_t buffer_size = std::max(limit, kMinForwardBuffer);
  HOTRING_CO_ASSIGN_OR_RETURN(UniqueFd caller, co_await Accept(reactor, listen_fd));
  UdsServerResult result;
  result.mode = mode;
  switch (mode) {
    case UdsMode::kSingle: {
      HOTRING_CO_RETURN_IF_ERROR(SendRole(caller.get(), kRoleCaller));
      HOTRING_CO_ASSIGN_OR_RETURN(result.messages,
                                  co_await Forward(reactor, caller.get(), caller.get(),
                                                   buffer_size));
      break;
    }
    case UdsMode::kRelay: {
      HOTRING_CO_ASSIGN_OR_RETURN(UniqueFd echo, co_await Accept(reactor, listen_fd));
      HOTRING_CO_RETURN_IF_ERROR(SendRole(echo.get(), kRoleEcho));
      HOTRING_CO_RETURN_IF_ERROR(SendRole(caller.get(), kRoleCaller));
      absl::StatusOr<uint64_t> there = uint64_t{0};
      absl::StatusOr<uint64_t> back = uint64_t{0};
      TaskScope scope;
      scope.Spawn(RelayDirection(reactor, caller.get(), echo.get(), buffer_size, &there));
      scope.Spawn(RelayDirection(reactor, echo.get(), caller.get(), buffer_size, &back));
      co_await scope.Join();
      HOTRING_CO_RETURN_IF_ERROR(there.status());
      HOTRING_CO_RETURN_IF_ERROR(back.status());
      result.messages = *there + *back;
      break;
    }
  }
  co_return result;
}

Task<absl::StatusOr<UdsClientResult>> RunUdsClient(io::Reactor& reactor, int fd,
                                                   UdsClientOptions options) {
  HOTRING_CO_ASSIGN_OR_RETURN(const size_t limit, SeqpacketMessageLimit());
  HOTRING_CO_RETURN_IF_ERROR(ValidateUdsClientOptions(options, limit));
  io::BufferResult role = co_await io::Recv(reactor, fd, io::Buffer(16), MSG_TRUNC);
  HOTRING_CO_RETURN_IF_ERROR(role.bytes.status());
  if (*role.bytes != 1 || (role.buffer[0] != kRoleCaller && role.buffer[0] != kRoleEcho)) {
    co_return absl::DataLossError(absl::StrFormat(
        "expected a one-byte role from the server, got %d bytes", *role.bytes));
  }
  UdsClientResult result;
  result.calls = options.calls;
  result.size = options.size;
  const MonoTime start = MonoNow();
  if (role.buffer[0] == kRoleEcho) {
    result.role = 2;
    HOTRING_CO_ASSIGN_OR_RETURN(result.messages,
                                co_await Forward(reactor, fd, fd, std::max(limit, kMinForwardBuffer)));
  } else {
    result.role = 1;
    switch (options.calls) {
      case UdsCalls::kSync:
        HOTRING_CO_RETURN_IF_ERROR(co_await SyncCalls(reactor, fd, options));
        break;
      case UdsCalls::kAsync:
        HOTRING_CO_RETURN_IF_ERROR(co_await AsyncCalls(reactor, fd, options));
        break;
    }
    result.messages = options.loops;
  }
  result.seconds = absl::ToDoubleSeconds(Since(start, MonoNow()));
  co_return result;
}

std::string FormatUdsClientResult(const UdsClientResult& r, bool json) {
  if (json) {
    return JsonObject()
               .String("bench", "uds-client")
               .Int("role", r.role)
               .String("calls", UdsCallsName(r.calls))
               .Uint("size", r.size)
               .Uint("messages", r.messages)
               .Double("seconds", r.seconds)
               .Double("msg_per_s", r.msg_per_s())
               .Double("us_per_msg", r.us_per_msg())
               .Double("mb_per_s", r.mb_per_s())
               .Build() +
           "\n";
  }
  if (r.role == 2) {
    return absl::StrFormat("echoed %d messages in %f s\n", r.messages, r.seconds);
  }
  return absl::StrFormat("%f s, %.0f msg/s, %.1f us/msg, %.3f MB/s\n", r.seconds, r.msg_per_s(),
                         r.us_per_msg(), r.mb_per_s());
}

std::string FormatUdsServerResult(const UdsServerResult& r, bool json) {
  if (json) {
    return JsonObject()
               .String("bench", "uds-server")
               .String("mode", UdsModeName(r.mode))
               .Uint("messages", r.messages)
               .Build() +
           "\n";
  }
  return absl::StrFormat("passed %d messages\n", r.messages);
}

absl::StatusOr<UdsClientResult> ParseUdsClientJson(absl::string_view json) {
  UdsClientResult r;
  HOTRING_ASSIGN_OR_RETURN(const double role, JsonNumberField(json, "role"));
  HOTRING_ASSIGN_OR_RETURN(const double size, JsonNumberField(json, "size"));
  HOTRING_ASSIGN_OR_RETURN(const double messages, JsonNumberField(json, "messages"));
  HOTRING_ASSIGN_OR_RETURN(r.seconds, JsonNumberField(json, "seconds"));
  r.role = static_cast<int>(role);
  r.size = static_cast<size_t>(size);
  r.messages = static_cast<uint64_t>(messages);
  r.calls = json.find("\"calls\": \"async\"") != absl::string_view::npos ? UdsCalls::kAsync
                                                                         : UdsCalls::kSync;
  return r;
}

absl::StatusOr<UdsServerResult> ParseUdsServerJson(absl::string_view json) {
  UdsServerResult r;
  HOTRING_ASSIGN_OR_RETURN(const double messages, JsonNumberField(json, "messages"));
  r.messages = static_cast<uint64_t>(messages);
  r.mode = json.find("\"mode\": \"relay\"") != absl::string_view::npos ? UdsMode::kRelay
                                                                      : UdsMode::kSingle;
  return r;
}

}  // namespace hotring::ipc

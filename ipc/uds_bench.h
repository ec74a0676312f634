// The Unix SOCK_SEQPACKET ping-pong of the kdbus debate, on the reactor. A server accepts one
// client (`single`: it echoes) or two (`relay`: it forwards between them, the message-broker
// shape: 4 sends and 4 receives per call). The first client to connect is the caller and
// measures; in relay mode the second echoes. `sync` keeps one call in flight, `async`
// pipelines. The wire protocol is the seed programs': after accepting, the server sends each
// client one role byte (0: caller, 1: echo), then relays raw messages; end of stream ends it.
#ifndef HOTRING_IPC_UDS_BENCH_H_
#define HOTRING_IPC_UDS_BENCH_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/task.h"
#include "io/reactor.h"

namespace hotring::ipc {

enum class UdsMode { kSingle, kRelay };
enum class UdsCalls { kSync, kAsync };

absl::string_view UdsModeName(UdsMode mode);
absl::string_view UdsCallsName(UdsCalls calls);
absl::StatusOr<UdsMode> ParseUdsMode(absl::string_view text);

// The socket name the standalone server and client use when none is given (abstract).
inline constexpr absl::string_view kDefaultUdsSocket = "@hotring-udsbench";

struct UdsClientOptions {
  UdsCalls calls = UdsCalls::kSync;
  size_t size = 4096;
  uint64_t loops = 100000;
  // Check every byte of every reply (the sequence number in the first 8 bytes is always checked).
  bool verify = false;
};

// The largest message a SOCK_SEQPACKET socket with send buffer `sndbuf` accepts (the kernel
// refuses len > sk_sndbuf - 32 with EMSGSIZE).
[[nodiscard]] size_t SeqpacketLimitForSndbuf(int sndbuf);
// The same for a fresh socket on this machine (net.core.wmem_default).
absl::StatusOr<size_t> SeqpacketMessageLimit();

// InvalidArgument for a size of 0 or above `limit`, and for 0 loops.
absl::Status ValidateUdsClientOptions(const UdsClientOptions& options, size_t limit);

struct UdsClientResult {
  int role = 1;           // 1: the caller, which measures; 2: the echo peer (relay mode)
  UdsCalls calls = UdsCalls::kSync;
  size_t size = 0;
  uint64_t messages = 0;  // calls completed (role 1) or messages echoed (role 2)
  double seconds = 0;     // from the role byte to the last reply (role 1) or to end of stream
  [[nodiscard]] double msg_per_s() const { return seconds > 0 ? messages / seconds : 0; }
  [[nodiscard]] double us_per_msg() const { return messages > 0 ? seconds * 1e6 / messages : 0; }
  [[nodiscard]] double mb_per_s() const {
    return seconds > 0 ? static_cast<double>(messages) * size / (1 << 20) / seconds : 0;
  }
};

struct UdsServerResult {
  UdsMode mode = UdsMode::kSingle;
  uint64_t messages = 0;  // messages passed on, both directions
};

// Serves on `listen_fd` (listening, borrowed): accepts one client or two, then relays until
// the caller hangs up.
Task<absl::StatusOr<UdsServerResult>> RunUdsServer(io::Reactor& reactor, int listen_fd,
                                                   UdsMode mode);

// Runs one client on the connected socket `fd` (borrowed): waits for the role byte, then
// calls (role 1) or echoes until end of stream (role 2).
Task<absl::StatusOr<UdsClientResult>> RunUdsClient(io::Reactor& reactor, int fd,
                                                   UdsClientOptions options);

// The seed client's line ("%f s, %.0f msg/s, %.1f us/msg, %.3f MB/s") or one JSON object.
std::string FormatUdsClientResult(const UdsClientResult& result, bool json);
std::string FormatUdsServerResult(const UdsServerResult& result, bool json);
// Reads back what FormatUdsClientResult/FormatUdsServerResult wrote with json = true.
absl::StatusOr<UdsClientResult> ParseUdsClientJson(absl::string_view json);
absl::StatusOr<UdsServerResult> ParseUdsServerJson(absl::string_view json);

// Message framing shared by the caller's checks and the tests: the first min(size, 8) bytes
// carry the sequence number; with `full`, every later byte is a function of it.
void StampMessage(char* data, size_t size, uint64_t seq, bool full);
// OK if `data` is message `seq` (only the sequence number unless `full`).
absl::Status CheckMessage(const char* data, size_t size, uint64_t seq, bool full);

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_UDS_BENCH_H_

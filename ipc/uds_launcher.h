// `hotring bench uds`: the all-in-one form of the SEQPACKET benchmark. It binds the socket,
// starts `bench uds-server` and one or two `bench uds-client` processes (this same executable),
// each pinned where asked and each on its own reactor, collects their JSON reports and checks
// that the counts add up.
#ifndef HOTRING_IPC_UDS_LAUNCHER_H_
#define HOTRING_IPC_UDS_LAUNCHER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/task.h"
#include "io/process/spawner.h"
#include "io/reactor.h"
#include "io/signals.h"
#include "ipc/uds_bench.h"

namespace hotring::ipc {

struct UdsLaunchOptions {
  UdsMode mode = UdsMode::kSingle;
  UdsClientOptions client;
  std::optional<int> server_cpu;
  std::optional<int> client_cpu;   // the caller, and the echo peer unless client2_cpu is set
  std::optional<int> client2_cpu;  // the echo peer (relay mode)
  // Socket name: a path (removed afterwards) or "@abstract". Empty: an abstract name unique to
  // this process.
  std::string socket;
  // The children are killed if the run takes longer.
  absl::Duration timeout = absl::Hours(1);
  // How to start this program again: the executable and the arguments before "<bench name>".
  std::string self_exe = "/proc/self/exe";
  std::vector<std::string> self_argv = {"hotring", "bench"};
};

// Checks what can be checked before starting anything (size against the socket limit, CPUs).
absl::Status ValidateUdsLaunchOptions(const UdsLaunchOptions& options);

struct UdsLaunchResult {
  UdsMode mode = UdsMode::kSingle;
  UdsClientResult caller;
  std::optional<UdsClientResult> echo;
  UdsServerResult server;
  std::optional<int> server_cpu;
  std::optional<int> client_cpu;
  std::optional<int> client2_cpu;
  uint64_t loops = 0;
};

// Runs the three (or two) processes. A signal from `signals` (optional) stops the children
// and the result is Cancelled; `*signal_number` says which.
Task<absl::StatusOr<UdsLaunchResult>> RunUdsLaunch(io::Reactor& reactor, UdsLaunchOptions options,
                                                   io::SignalFd* signals, int* signal_number);

std::string FormatUdsLaunchResult(const UdsLaunchResult& result, bool json);

// How a bench process is started: `exe` with `argv` (argv[0] included), this process's
// environment, stdin and stderr, its stdout piped back (its report), `passed_fds` besides, and
// in this process's group (a terminal's ^C reaches it along with us).
io::process::SpawnRequest BenchProcessRequest(std::string exe, std::vector<std::string> argv,
                                              std::vector<io::process::PassedFd> passed_fds = {});

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_UDS_LAUNCHER_H_

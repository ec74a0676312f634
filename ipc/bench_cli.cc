#include "ipc/bench_cli.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/cpu.h"
#include "core/flags.h"
#include "core/status.h"
#include "io/reactor.h"
#include "io/signals.h"
#include "io/socket.h"
#include "ipc/dgram_fanin.h"
#include "ipc/interrupt.h"
#include "ipc/sysv_bench.h"
#include "ipc/uds_bench.h"
#include "ipc/uds_launcher.h"

namespace hotring::ipc {
namespace {

// Exit codes: 0 done, 1 failed, 2 bad arguments, 128+N stopped by signal N.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// A bad argument is followed by the usage.
int Report(const absl::Status& status, const FlagSet& flags) {
  std::fprintf(stderr, "hotring: %s\n", std::string(status.message()).c_str());
  if (absl::IsInvalidArgument(status)) {
    std::fputs(flags.Usage().c_str(), stderr);
    return kExitUsage;
  }
  return kExitFailure;
}

int Interrupted(int signo) {
  std::fprintf(stderr, "hotring: interrupted by signal %d\n", signo);
  return ExitCodeForSignal(signo);
}

// Every bench's flags print their usage once --help is given and say why an argument is bad.
// nullopt: go on; else the exit code.
std::optional<int> ParseBenchFlags(const FlagSet& flags, const std::vector<std::string>& args) {
  const absl::StatusOr<FlagsParsed> parsed = flags.Parse(args);
  if (!parsed.ok()) return Report(parsed.status(), flags);
  if (*parsed == FlagsParsed::kHelpShown) return 0;
  return std::nullopt;
}

constexpr int64_t kLastCpu = CPU_SETSIZE - 1;

absl::Status ParseMode(absl::string_view text, UdsMode* mode) {
  HOTRING_ASSIGN_OR_RETURN(*mode, ParseUdsMode(text));
  return absl::OkStatus();
}

// The reactor and the signal handling every bench command starts with. Signals are blocked
// (for the signalfd) before any worker thread or child exists.
struct Runtime {
  std::optional<io::SignalFd> signals;
  std::unique_ptr<io::Reactor> reactor;
};

absl::StatusOr<Runtime> MakeRuntime() {
  Runtime runtime;
  HOTRING_ASSIGN_OR_RETURN(io::SignalFd signals, io::SignalFd::Create({SIGINT, SIGTERM, SIGHUP}));
  runtime.signals.emplace(std::move(signals));
  HOTRING_ASSIGN_OR_RETURN(runtime.reactor, io::Reactor::Create());
  return runtime;
}

// ---- sysv ----

}  // namespace

int BenchSysvCommand(const std::vector<std::string>& args) {
  SysvBenchOptions options;
  bool json = false;
  FlagSet flags("bench sysv",
                "usage: hotring bench sysv [--queues N] [--seconds T] [--no-pin] [--json]\n"
                "  N SysV message queues, two threads per queue bouncing an 8-byte message, pair i\n"
                "  pinned to CPU i mod nproc, for T seconds (default 1 queue, 5 s). Prints pmsg's\n"
                "  result matrix, the total and the rate.");
  flags.Int("--queues", "N", &options.queues, 1, kSysvMaxQueues, "message queues (default 1)")
      .Value("--seconds", "T", "how long (default 5)",
             [&options](absl::string_view v) -> absl::Status {
               double s;
               if (!absl::SimpleAtod(v, &s) || !(s > 0) || s > 86400) {
                 return absl::InvalidArgumentError(
                     absl::StrCat("must be above 0 and at most 86400, got '", v, "'"));
               }
               options.duration = absl::Seconds(s);
               return absl::OkStatus();
             })
      .Store("--no-pin", &options.pin, false, "leave the threads unpinned")
      .Bool("--json", &json, "the result as JSON");
  if (std::optional<int> exit = ParseBenchFlags(flags, args)) return *exit;
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), flags);
  absl::StatusOr<SysvBenchResult> result = runtime->reactor->BlockOn(
      RunSysvBench(*runtime->reactor, options, &*runtime->signals));
  if (!result.ok()) return Report(result.status(), flags);
  std::fputs(FormatSysvResult(*result, json).c_str(), stdout);
  std::fflush(stdout);
  if (result->interrupted_by != 0) return Interrupted(result->interrupted_by);
  return 0;
}

// ---- uds (all-in-one) ----

int BenchUdsCommand(const std::vector<std::string>& args) {
  UdsLaunchOptions options;
  bool json = false;
  FlagSet flags(
      "bench uds",
      "usage: hotring bench uds [--mode single|relay] [--sync|--async] [--size B] [--loops N]\n"
      "                         [--server-cpu N] [--client-cpu M] [--client2-cpu K]\n"
      "                         [--socket NAME] [--verify] [--timeout S] [--json]\n"
      "  SOCK_SEQPACKET ping-pong: starts `bench uds-server` and `bench uds-client` processes\n"
      "  (two clients in relay mode) and reports the caller's seconds, msg/s, us/msg, MB/s.\n"
      "  Defaults: single, sync, 4096 bytes, 100000 loops, unpinned, an abstract socket.\n"
      "  Pin with --server-cpu/--client-cpu: cross-CPU wake-ups dominate sync figures.");
  flags
      .Value("--mode", "single|relay", "one client (echo) or two (relay between them)",
             [&options](absl::string_view v) { return ParseMode(v, &options.mode); })
      .Store("--sync", &options.client.calls, UdsCalls::kSync, "each call waits for its reply")
      .Store("--async", &options.client.calls, UdsCalls::kAsync, "calls are pipelined")
      .Int("--size", "B", &options.client.size, 1, INT64_MAX, "message size")
      .Int("--loops", "N", &options.client.loops, 1, INT64_MAX, "round trips")
      .Int("--server-cpu", "N", &options.server_cpu, 0, kLastCpu, "pin the server")
      .Int("--client-cpu", "M", &options.client_cpu, 0, kLastCpu, "pin the (calling) client")
      .Int("--client2-cpu", "K", &options.client2_cpu, 0, kLastCpu,
           "pin the echoing client (relay mode)")
      .String("--socket", "NAME", &options.socket, "a path or @abstract")
      .Bool("--verify", &options.client.verify, "check every byte of every reply")
      .Value("--timeout", "S", "kill the processes after S seconds (default 3600)",
             [&options](absl::string_view v) -> absl::Status {
               double s;
               if (!absl::SimpleAtod(v, &s) || !(s > 0)) {
                 return absl::InvalidArgumentError(absl::StrCat("must be positive, got '", v, "'"));
               }
               options.timeout = absl::Seconds(s);
               return absl::OkStatus();
             })
      .Bool("--json", &json, "the result as JSON");
  if (std::optional<int> exit = ParseBenchFlags(flags, args)) return *exit;
  if (const absl::Status valid = ValidateUdsLaunchOptions(options); !valid.ok()) {
    return Report(flags.Error(valid.message()), flags);
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), flags);
  int signo = 0;
  absl::StatusOr<UdsLaunchResult> result = runtime->reactor->BlockOn(
      RunUdsLaunch(*runtime->reactor, options, &*runtime->signals, &signo));
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), flags);
  std::fputs(FormatUdsLaunchResult(*result, json).c_str(), stdout);
  return 0;
}

// ---- uds-server ----

namespace {

// Owns a bound socket path; unlinks it when dropped (abstract names need nothing).
class BoundPath {
 public:
  explicit BoundPath(std::string name) : name_(std::move(name)) {}
  BoundPath(const BoundPath&) = delete;
  BoundPath& operator=(const BoundPath&) = delete;
  ~BoundPath() {
    if (!name_.empty() && name_[0] != '@') ::unlink(name_.c_str());
  }

 private:
  std::string name_;
};

}  // namespace

int BenchUdsServerCommand(const std::vector<std::string>& args) {
  UdsMode mode = UdsMode::kSingle;
  std::string socket;
  std::optional<int> listen_fd;
  std::optional<int> cpu;
  bool json = false;
  FlagSet flags(
      "bench uds-server",
      "usage: hotring bench uds-server [--mode single|relay] [--socket NAME | --listen-fd FD]\n"
      "                                [--cpu N] [--json]\n"
      "  Accepts one client (single: echo) or two (relay: forward between them) and relays\n"
      "  until the caller hangs up. NAME is a path or @abstract (default @hotring-udsbench).");
  flags
      .Value("--mode", "single|relay", "echo one client, or relay between two",
             [&mode](absl::string_view v) { return ParseMode(v, &mode); })
      .String("--socket", "NAME", &socket, "where to listen")
      .Int("--listen-fd", "FD", &listen_fd, 0, INT32_MAX, "an inherited listening socket")
      .Int("--cpu", "N", &cpu, 0, kLastCpu, "pin the server")
      .Bool("--json", &json, "the result as JSON");
  if (std::optional<int> exit = ParseBenchFlags(flags, args)) return *exit;
  if (listen_fd.has_value() && !socket.empty()) {
    return Report(flags.Error("--socket and --listen-fd exclude each other"), flags);
  }
  if (!listen_fd.has_value() && socket.empty()) socket = std::string(kDefaultUdsSocket);
  if (cpu.has_value()) {
    if (absl::Status checked = CheckCpu(*cpu, "--cpu"); !checked.ok()) {
      return Report(checked, flags);
    }
  }
  if (const absl::Status pinned = MaybePinCurrentThread(cpu); !pinned.ok()) {
    return Report(pinned, flags);
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), flags);
  UniqueFd listener;
  std::optional<BoundPath> bound;
  if (listen_fd.has_value()) {
    listener.Reset(*listen_fd);
  } else {
    absl::StatusOr<UniqueFd> fd = io::BindUnix(SOCK_SEQPACKET, socket);
    if (!fd.ok()) return Report(fd.status(), flags);
    listener = std::move(*fd);
    bound.emplace(socket);
    if (::listen(listener.get(), 8) != 0) return Report(ErrnoStatus("listen"), flags);
  }
  int signo = 0;
  absl::StatusOr<UdsServerResult> result =
      RunUntilSignal(*runtime->reactor, *runtime->signals,
                     RunUdsServer(*runtime->reactor, listener.get(), mode), &signo);
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), flags);
  std::fputs(FormatUdsServerResult(*result, json).c_str(), stdout);
  return 0;
}

// ---- uds-client ----

int BenchUdsClientCommand(const std::vector<std::string>& args) {
  UdsClientOptions options;
  std::string socket = std::string(kDefaultUdsSocket);
  std::optional<int> cpu;
  std::optional<int> ready_fd;
  bool json = false;
  FlagSet flags(
      "bench uds-client",
      "usage: hotring bench uds-client [--sync|--async] [--size B] [--loops N] [--socket NAME]\n"
      "                                [--cpu N] [--verify] [--ready-fd FD] [--json]\n"
      "  Connects to a uds-server (or the seed server) and calls (first client) or echoes\n"
      "  (second client in relay mode). --ready-fd: write one byte there once connected.");
  flags.Store("--sync", &options.calls, UdsCalls::kSync, "each call waits for its reply")
      .Store("--async", &options.calls, UdsCalls::kAsync, "calls are pipelined")
      .Int("--size", "B", &options.size, 1, INT64_MAX, "message size")
      .Int("--loops", "N", &options.loops, 1, INT64_MAX, "round trips")
      .String("--socket", "NAME", &socket, "the server's socket")
      .Int("--cpu", "N", &cpu, 0, kLastCpu, "pin the client")
      .Bool("--verify", &options.verify, "check every byte of every reply")
      .Int("--ready-fd", "FD", &ready_fd, 0, INT32_MAX, "write one byte there once connected")
      .Bool("--json", &json, "the result as JSON");
  if (std::optional<int> exit = ParseBenchFlags(flags, args)) return *exit;
  UniqueFd ready(ready_fd.value_or(-1));
  absl::StatusOr<size_t> limit = SeqpacketMessageLimit();
  if (!limit.ok()) return Report(limit.status(), flags);
  if (const absl::Status valid = ValidateUdsClientOptions(options, *limit); !valid.ok()) {
    return Report(flags.Error(valid.message()), flags);
  }
  if (cpu.has_value()) {
    if (absl::Status checked = CheckCpu(*cpu, "--cpu"); !checked.ok()) {
      return Report(checked, flags);
    }
  }
  if (const absl::Status pinned = MaybePinCurrentThread(cpu); !pinned.ok()) {
    return Report(pinned, flags);
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), flags);
  absl::StatusOr<UniqueFd> fd = io::ConnectUnix(SOCK_SEQPACKET, socket);
  if (!fd.ok()) return Report(fd.status(), flags);
  if (ready.valid()) {
    const char byte = 'R';
    if (::write(ready.get(), &byte, 1) != 1) {
      return Report(ErrnoStatus("write(--ready-fd)"), flags);
    }
    ready.Reset();
  }
  int signo = 0;
  absl::StatusOr<UdsClientResult> result =
      RunUntilSignal(*runtime->reactor, *runtime->signals,
                     RunUdsClient(*runtime->reactor, fd->get(), options), &signo);
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), flags);
  std::fputs(FormatUdsClientResult(*result, json).c_str(), stdout);
  return 0;
}

// ---- dgram-fanin ----

int BenchDgramFaninCommand(const std::vector<std::string>& args) {
  DgramFaninOptions options;
  bool json = false;
  FlagSet flags(
      "bench dgram-fanin",
      "usage: hotring bench dgram-fanin [--clients N] [--connected|--unconnected]\n"
      "                                 [--messages M] [--waiter uring|select|both]\n"
      "                                 [--cpu N] [--exchanger-cpu M] [--json]\n"
      "  A waiter watches N datagram sockets (default 800, connected) while a forked\n"
      "  exchanger does M (default 20000) exchanges; times io_uring and select() waits.");
  flags.Int("--clients", "N", &options.clients, 1, 100000, "datagram sockets watched")
      .Store("--connected", &options.connected, true, "each client socket connected to the waiter's")
      .Store("--unconnected", &options.connected, false, "client sockets not connected")
      .Int("--messages", "M", &options.messages, 1, INT64_MAX, "exchanges")
      .Value("--waiter", "uring|select|both", "which waits to time (default both)",
             [&options](absl::string_view waiter) {
               if (waiter == "uring") {
                 options.waiters = {FaninWaiter::kUring};
               } else if (waiter == "select") {
                 options.waiters = {FaninWaiter::kSelect};
               } else if (waiter == "both") {
                 options.waiters = {FaninWaiter::kUring, FaninWaiter::kSelect};
               } else {
                 return absl::InvalidArgumentError(
                     absl::StrCat("must be uring, select or both, got '", waiter, "'"));
               }
               return absl::OkStatus();
             })
      .Int("--cpu", "N", &options.cpu, 0, kLastCpu,
           "pin the waiter (and the exchanger unless --exchanger-cpu)")
      .Int("--exchanger-cpu", "M", &options.exchanger_cpu, 0, kLastCpu, "pin the exchanger")
      .Bool("--json", &json, "the result as JSON");
  if (std::optional<int> exit = ParseBenchFlags(flags, args)) return *exit;
  if (absl::Status valid = ValidateDgramFaninOptions(options); !valid.ok()) {
    return Report(valid, flags);
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), flags);
  int signo = 0;
  absl::StatusOr<DgramFaninResult> result =
      RunUntilSignal(*runtime->reactor, *runtime->signals,
                     RunDgramFanin(*runtime->reactor, options), &signo);
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), flags);
  std::fputs(FormatDgramFaninResult(*result, json).c_str(), stdout);
  return 0;
}

namespace {

constexpr Command kIpcBenches[] = {
    {"bench", "sysv", "", "SysV message ping-pong", BenchSysvCommand},
    {"bench", "uds", "", "Unix SEQPACKET ping-pong", BenchUdsCommand},
    {"bench", "uds-server", "", "the uds bench's server", BenchUdsServerCommand},
    {"bench", "uds-client", "", "the uds bench's client", BenchUdsClientCommand},
    {"bench", "dgram-fanin", "", "datagram fan-in", BenchDgramFaninCommand},
};

}  // namespace

absl::Span<const Command> IpcBenches() { return kIpcBenches; }

}  // namespace hotring::ipc

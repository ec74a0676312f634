#include "ipc/bench_cli.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status.h"
#include "io/reactor.h"
#include "io/signals.h"
#include "io/socket.h"
#include "core/flags.h"
#include "core/cpu.h"
#include "ipc/dgram_fanin.h"
#include "ipc/interrupt.h"
#include "ipc/sysv_bench.h"
#include "ipc/uds_bench.h"
#include "ipc/uds_launcher.h"

namespace hotring::ipc {
namespace {

constexpr absl::string_view kSysvUsage =
    "usage: hotring bench sysv [--queues N] [--seconds T] [--no-pin] [--json]\n"
    "  N SysV message queues, two threads per queue bouncing an 8-byte message, pair i\n"
    "  pinned to CPU i mod nproc, for T seconds (default 1 queue, 5 s). Prints pmsg's\n"
    "  result matrix, the total and the rate.\n";

constexpr absl::string_view kUdsUsage =
    "usage: hotring bench uds [--mode single|relay] [--sync|--async] [--size B] [--loops N]\n"
    "                         [--server-cpu N] [--client-cpu M] [--client2-cpu K]\n"
    "                         [--socket NAME] [--verify] [--timeout S] [--json]\n"
    "  SOCK_SEQPACKET ping-pong: starts `bench uds-server` and `bench uds-client` processes\n"
    "  (two clients in relay mode) and reports the caller's seconds, msg/s, us/msg, MB/s.\n"
    "  Defaults: single, sync, 4096 bytes, 100000 loops, unpinned, an abstract socket.\n"
    "  Pin with --server-cpu/--client-cpu: cross-CPU wake-ups dominate sync figures.\n";

constexpr absl::string_view kUdsServerUsage =
    "usage: hotring bench uds-server [--mode single|relay] [--socket NAME | --listen-fd FD]\n"
    "                                [--cpu N] [--json]\n"
    "  Accepts one client (single: echo) or two (relay: forward between them) and relays\n"
    "  until the caller hangs up. NAME is a path or @abstract (default @hotring-udsbench).\n";

constexpr absl::string_view kUdsClientUsage =
    "usage: hotring bench uds-client [--sync|--async] [--size B] [--loops N] [--socket NAME]\n"
    "                                [--cpu N] [--verify] [--ready-fd FD] [--json]\n"
    "  Connects to a uds-server (or the seed server) and calls (first client) or echoes\n"
    "  (second client in relay mode). --ready-fd: write one byte there once connected.\n";

constexpr absl::string_view kDgramUsage =
    "usage: hotring bench dgram-fanin [--clients N] [--connected|--unconnected]\n"
    "                                 [--messages M] [--waiter uring|select|both]\n"
    "                                 [--cpu N] [--exchanger-cpu M] [--json]\n"
    "  A waiter watches N datagram sockets (default 800, connected) while a forked\n"
    "  exchanger does M (default 20000) exchanges; times io_uring and select() waits.\n";

// Exit codes: 0 done, 1 failed, 2 bad arguments, 128+N stopped by signal N.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int Report(const absl::Status& status, absl::string_view usage) {
  std::fprintf(stderr, "hotring: %s\n", std::string(status.message()).c_str());
  if (absl::IsInvalidArgument(status)) {
    std::fputs(std::string(usage).c_str(), stderr);
    return kExitUsage;
  }
  return kExitFailure;
}

int Interrupted(int signo) {
  std::fprintf(stderr, "hotring: interrupted by signal %d\n", signo);
  return ExitCodeForSignal(signo);
}

// Reads an optional CPU flag value.
absl::Status ReadCpu(FlagReader& flags, std::optional<int>* cpu) {
  HOTRING_ASSIGN_OR_RETURN(const int64_t value, flags.Int());
  if (value < 0 || value >= CPU_SETSIZE) {
    return flags.Error(absl::StrCat(flags.flag(), " must be a CPU number, got ", value));
  }
  *cpu = static_cast<int>(value);
  return absl::OkStatus();
}

absl::Status ReadPositive(FlagReader& flags, uint64_t* out) {
  HOTRING_ASSIGN_OR_RETURN(const int64_t value, flags.Int());
  if (value < 1) return flags.Error(absl::StrCat(flags.flag(), " must be at least 1, got ", value));
  *out = static_cast<uint64_t>(value);
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

struct Parsed {
  bool json = false;
  bool help = false;
};

// ---- sysv ----

absl::StatusOr<SysvBenchOptions> ParseSysv(const std::vector<std::string>& args, Parsed* parsed) {
  SysvBenchOptions options;
  FlagReader flags("bench sysv", args);
  while (flags.Next()) {
    const std::string& f = flags.flag();
    if (f == "--queues") {
      HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.Int());
      if (n < 1 || n > kSysvMaxQueues) {
        return flags.Error(absl::StrCat("--queues must be 1..", kSysvMaxQueues, ", got ", n));
      }
      options.queues = static_cast<int>(n);
    } else if (f == "--seconds") {
      HOTRING_ASSIGN_OR_RETURN(const double s, flags.Double());
      if (!(s > 0) || s > 86400) {
        return flags.Error(absl::StrCat("--seconds must be above 0 and at most 86400, got ", s));
      }
      options.duration = absl::Seconds(s);
    } else if (f == "--no-pin") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      options.pin = false;
    } else if (f == "--json") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      parsed->json = true;
    } else if (f == "--help" || f == "-h") {
      parsed->help = true;
    } else {
      return flags.Unknown();
    }
  }
  return options;
}

int BenchSysv(const std::vector<std::string>& args) {
  Parsed parsed;
  absl::StatusOr<SysvBenchOptions> options = ParseSysv(args, &parsed);
  if (!options.ok()) return Report(options.status(), kSysvUsage);
  if (parsed.help) {
    std::fputs(std::string(kSysvUsage).c_str(), stdout);
    return 0;
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), kSysvUsage);
  absl::StatusOr<SysvBenchResult> result = runtime->reactor->BlockOn(
      RunSysvBench(*runtime->reactor, *options, &*runtime->signals));
  if (!result.ok()) return Report(result.status(), kSysvUsage);
  std::fputs(FormatSysvResult(*result, parsed.json).c_str(), stdout);
  std::fflush(stdout);
  if (result->interrupted_by != 0) return Interrupted(result->interrupted_by);
  return 0;
}

// ---- uds (all-in-one) ----

absl::StatusOr<UdsLaunchOptions> ParseUds(const std::vector<std::string>& args, Parsed* parsed) {
  UdsLaunchOptions options;
  FlagReader flags("bench uds", args);
  while (flags.Next()) {
    const std::string& f = flags.flag();
    if (f == "--mode") {
      HOTRING_ASSIGN_OR_RETURN(const std::string mode, flags.String());
      absl::StatusOr<UdsMode> m = ParseUdsMode(mode);
      if (!m.ok()) return flags.Error(m.status().message());
      options.mode = *m;
    } else if (f == "--sync" || f == "--async") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      options.client.calls = f == "--sync" ? UdsCalls::kSync : UdsCalls::kAsync;
    } else if (f == "--size") {
      uint64_t size;
      HOTRING_RETURN_IF_ERROR(ReadPositive(flags, &size));
      options.client.size = size;
    } else if (f == "--loops") {
      HOTRING_RETURN_IF_ERROR(ReadPositive(flags, &options.client.loops));
    } else if (f == "--server-cpu") {
      HOTRING_RETURN_IF_ERROR(ReadCpu(flags, &options.server_cpu));
    } else if (f == "--client-cpu") {
      HOTRING_RETURN_IF_ERROR(ReadCpu(flags, &options.client_cpu));
    } else if (f == "--client2-cpu") {
      HOTRING_RETURN_IF_ERROR(ReadCpu(flags, &options.client2_cpu));
    } else if (f == "--socket") {
      HOTRING_ASSIGN_OR_RETURN(options.socket, flags.String());
    } else if (f == "--timeout") {
      HOTRING_ASSIGN_OR_RETURN(const double s, flags.Double());
      if (!(s > 0)) return flags.Error(absl::StrCat("--timeout must be positive, got ", s));
      options.timeout = absl::Seconds(s);
    } else if (f == "--verify") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      options.client.verify = true;
    } else if (f == "--json") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      parsed->json = true;
    } else if (f == "--help" || f == "-h") {
      parsed->help = true;
    } else {
      return flags.Unknown();
    }
  }
  return options;
}

int BenchUds(const std::vector<std::string>& args) {
  Parsed parsed;
  absl::StatusOr<UdsLaunchOptions> options = ParseUds(args, &parsed);
  if (!options.ok()) return Report(options.status(), kUdsUsage);
  if (parsed.help) {
    std::fputs(std::string(kUdsUsage).c_str(), stdout);
    return 0;
  }
  if (const absl::Status valid = ValidateUdsLaunchOptions(*options); !valid.ok()) {
    return Report(absl::InvalidArgumentError(absl::StrCat("bench uds: ", valid.message())),
                  kUdsUsage);
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), kUdsUsage);
  int signo = 0;
  absl::StatusOr<UdsLaunchResult> result = runtime->reactor->BlockOn(
      RunUdsLaunch(*runtime->reactor, *options, &*runtime->signals, &signo));
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), kUdsUsage);
  std::fputs(FormatUdsLaunchResult(*result, parsed.json).c_str(), stdout);
  return 0;
}

// ---- uds-server ----

struct ServerArgs {
  UdsMode mode = UdsMode::kSingle;
  std::string socket;
  std::optional<int> listen_fd;
  std::optional<int> cpu;
};

absl::StatusOr<ServerArgs> ParseUdsServer(const std::vector<std::string>& args, Parsed* parsed) {
  ServerArgs out;
  FlagReader flags("bench uds-server", args);
  while (flags.Next()) {
    const std::string& f = flags.flag();
    if (f == "--mode") {
      HOTRING_ASSIGN_OR_RETURN(const std::string mode, flags.String());
      absl::StatusOr<UdsMode> m = ParseUdsMode(mode);
      if (!m.ok()) return flags.Error(m.status().message());
      out.mode = *m;
    } else if (f == "--socket") {
      HOTRING_ASSIGN_OR_RETURN(out.socket, flags.String());
    } else if (f == "--listen-fd") {
      HOTRING_ASSIGN_OR_RETURN(const int64_t fd, flags.Int());
      if (fd < 0) return flags.Error("--listen-fd must be a descriptor number");
      out.listen_fd = static_cast<int>(fd);
    } else if (f == "--cpu") {
      HOTRING_RETURN_IF_ERROR(ReadCpu(flags, &out.cpu));
    } else if (f == "--json") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      parsed->json = true;
    } else if (f == "--help" || f == "-h") {
      parsed->help = true;
    } else {
      return flags.Unknown();
    }
  }
  if (out.listen_fd.has_value() && !out.socket.empty()) {
    return flags.Error("--socket and --listen-fd exclude each other");
  }
  if (!out.listen_fd.has_value() && out.socket.empty()) out.socket = std::string(kDefaultUdsSocket);
  if (out.cpu.has_value()) HOTRING_RETURN_IF_ERROR(CheckCpu(*out.cpu, "--cpu"));
  return out;
}

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

int BenchUdsServer(const std::vector<std::string>& args) {
  Parsed parsed;
  absl::StatusOr<ServerArgs> server = ParseUdsServer(args, &parsed);
  if (!server.ok()) return Report(server.status(), kUdsServerUsage);
  if (parsed.help) {
    std::fputs(std::string(kUdsServerUsage).c_str(), stdout);
    return 0;
  }
  if (const absl::Status pinned = MaybePinCurrentThread(server->cpu); !pinned.ok()) {
    return Report(pinned, kUdsServerUsage);
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), kUdsServerUsage);
  UniqueFd listener;
  std::optional<BoundPath> bound;
  if (server->listen_fd.has_value()) {
    listener.Reset(*server->listen_fd);
  } else {
    absl::StatusOr<UniqueFd> fd = io::BindUnix(SOCK_SEQPACKET, server->socket);
    if (!fd.ok()) return Report(fd.status(), kUdsServerUsage);
    listener = std::move(*fd);
    bound.emplace(server->socket);
    if (::listen(listener.get(), 8) != 0) return Report(ErrnoStatus("listen"), kUdsServerUsage);
  }
  int signo = 0;
  absl::StatusOr<UdsServerResult> result = RunUntilSignal(
      *runtime->reactor, *runtime->signals,
      RunUdsServer(*runtime->reactor, listener.get(), server->mode), &signo);
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), kUdsServerUsage);
  std::fputs(FormatUdsServerResult(*result, parsed.json).c_str(), stdout);
  return 0;
}

// ---- uds-client ----

struct ClientArgs {
  UdsClientOptions options;
  std::string socket = std::string(kDefaultUdsSocket);
  std::optional<int> cpu;
  std::optional<int> ready_fd;
};

absl::StatusOr<ClientArgs> ParseUdsClient(const std::vector<std::string>& args, Parsed* parsed) {
  ClientArgs out;
  FlagReader flags("bench uds-client", args);
  while (flags.Next()) {
    const std::string& f = flags.flag();
    if (f == "--sync" || f == "--async") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      out.options.calls = f == "--sync" ? UdsCalls::kSync : UdsCalls::kAsync;
    } else if (f == "--size") {
      uint64_t size;
      HOTRING_RETURN_IF_ERROR(ReadPositive(flags, &size));
      out.options.size = size;
    } else if (f == "--loops") {
      HOTRING_RETURN_IF_ERROR(ReadPositive(flags, &out.options.loops));
    } else if (f == "--socket") {
      HOTRING_ASSIGN_OR_RETURN(out.socket, flags.String());
    } else if (f == "--cpu") {
      HOTRING_RETURN_IF_ERROR(ReadCpu(flags, &out.cpu));
    } else if (f == "--ready-fd") {
      HOTRING_ASSIGN_OR_RETURN(const int64_t fd, flags.Int());
      if (fd < 0) return flags.Error("--ready-fd must be a descriptor number");
      out.ready_fd = static_cast<int>(fd);
    } else if (f == "--verify") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      out.options.verify = true;
    } else if (f == "--json") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      parsed->json = true;
    } else if (f == "--help" || f == "-h") {
      parsed->help = true;
    } else {
      return flags.Unknown();
    }
  }
  HOTRING_ASSIGN_OR_RETURN(const size_t limit, SeqpacketMessageLimit());
  if (const absl::Status valid = ValidateUdsClientOptions(out.options, limit); !valid.ok()) {
    return flags.Error(valid.message());
  }
  if (out.cpu.has_value()) HOTRING_RETURN_IF_ERROR(CheckCpu(*out.cpu, "--cpu"));
  return out;
}

int BenchUdsClient(const std::vector<std::string>& args) {
  Parsed parsed;
  absl::StatusOr<ClientArgs> client = ParseUdsClient(args, &parsed);
  if (!client.ok()) return Report(client.status(), kUdsClientUsage);
  if (parsed.help) {
    std::fputs(std::string(kUdsClientUsage).c_str(), stdout);
    return 0;
  }
  UniqueFd ready(client->ready_fd.value_or(-1));
  if (const absl::Status pinned = MaybePinCurrentThread(client->cpu); !pinned.ok()) {
    return Report(pinned, kUdsClientUsage);
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), kUdsClientUsage);
  absl::StatusOr<UniqueFd> fd = io::ConnectUnix(SOCK_SEQPACKET, client->socket);
  if (!fd.ok()) return Report(fd.status(), kUdsClientUsage);
  if (ready.valid()) {
    const char byte = 'R';
    if (::write(ready.get(), &byte, 1) != 1) {
      return Report(ErrnoStatus("write(--ready-fd)"), kUdsClientUsage);
    }
    ready.Reset();
  }
  int signo = 0;
  absl::StatusOr<UdsClientResult> result =
      RunUntilSignal(*runtime->reactor, *runtime->signals,
                     RunUdsClient(*runtime->reactor, fd->get(), client->options), &signo);
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), kUdsClientUsage);
  std::fputs(FormatUdsClientResult(*result, parsed.json).c_str(), stdout);
  return 0;
}

// ---- dgram-fanin ----

absl::StatusOr<DgramFaninOptions> ParseDgram(const std::vector<std::string>& args,
                                             Parsed* parsed) {
  DgramFaninOptions options;
  FlagReader flags("bench dgram-fanin", args);
  while (flags.Next()) {
    const std::string& f = flags.flag();
    if (f == "--clients") {
      HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.Int());
      if (n < 1 || n > 100000) {
        return flags.Error(absl::StrCat("--clients must be 1..100000, got ", n));
      }
      options.clients = static_cast<int>(n);
    } else if (f == "--connected" || f == "--unconnected") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      options.connected = f == "--connected";
    } else if (f == "--messages") {
      HOTRING_RETURN_IF_ERROR(ReadPositive(flags, &options.messages));
    } else if (f == "--waiter") {
      HOTRING_ASSIGN_OR_RETURN(const std::string waiter, flags.String());
      if (waiter == "uring") {
        options.waiters = {FaninWaiter::kUring};
      } else if (waiter == "select") {
        options.waiters = {FaninWaiter::kSelect};
      } else if (waiter == "both") {
        options.waiters = {FaninWaiter::kUring, FaninWaiter::kSelect};
      } else {
        return flags.Error(absl::StrCat("--waiter must be uring, select or both, got '", waiter, "'"));
      }
    } else if (f == "--cpu") {
      HOTRING_RETURN_IF_ERROR(ReadCpu(flags, &options.cpu));
    } else if (f == "--exchanger-cpu") {
      HOTRING_RETURN_IF_ERROR(ReadCpu(flags, &options.exchanger_cpu));
    } else if (f == "--json") {
      HOTRING_RETURN_IF_ERROR(flags.NoValue());
      parsed->json = true;
    } else if (f == "--help" || f == "-h") {
      parsed->help = true;
    } else {
      return flags.Unknown();
    }
  }
  HOTRING_RETURN_IF_ERROR(ValidateDgramFaninOptions(options));
  return options;
}

int BenchDgram(const std::vector<std::string>& args) {
  Parsed parsed;
  absl::StatusOr<DgramFaninOptions> options = ParseDgram(args, &parsed);
  if (!options.ok()) return Report(options.status(), kDgramUsage);
  if (parsed.help) {
    std::fputs(std::string(kDgramUsage).c_str(), stdout);
    return 0;
  }
  absl::StatusOr<Runtime> runtime = MakeRuntime();
  if (!runtime.ok()) return Report(runtime.status(), kDgramUsage);
  int signo = 0;
  absl::StatusOr<DgramFaninResult> result =
      RunUntilSignal(*runtime->reactor, *runtime->signals,
                     RunDgramFanin(*runtime->reactor, *options), &signo);
  if (signo != 0) return Interrupted(signo);
  if (!result.ok()) return Report(result.status(), kDgramUsage);
  std::fputs(FormatDgramFaninResult(*result, parsed.json).c_str(), stdout);
  return 0;
}

}  // namespace

bool IsIpcBench(const std::string& name) {
  return name == "sysv" || name == "uds" || name == "uds-server" || name == "uds-client" ||
         name == "dgram-fanin";
}

int RunIpcBench(const std::string& name, const std::vector<std::string>& args) {
  if (name == "sysv") return BenchSysv(args);
  if (name == "uds") return BenchUds(args);
  if (name == "uds-server") return BenchUdsServer(args);
  if (name == "uds-client") return BenchUdsClient(args);
  if (name == "dgram-fanin") return BenchDgram(args);
  std::fprintf(stderr, "hotring: unknown benchmark '%s'\n", name.c_str());
  return kExitUsage;
}

}  // namespace hotring::ipc

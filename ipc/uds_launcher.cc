#include "ipc/uds_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/task_scope.h"
#include "io/ops.h"
#include "io/process/child_process.h"
#include "io/process/spawner.h"
#include "io/socket.h"
#include "core/cpu.h"
#include "core/json.h"

namespace hotring::ipc {
namespace {

using io::process::ChildProcess;

// The descriptor number children get for the listening socket and the ready pipe.
constexpr int kChildFd = 3;

// Owns a socket path and unlinks it when dropped; abstract names leave nothing to remove.
class SocketPathRemover {
 public:
  explicit SocketPathRemover(std::string name) : name_(std::move(name)) {}
  SocketPathRemover(const SocketPathRemover&) = delete;
  SocketPathRemover& operator=(const SocketPathRemover&) = delete;
  ~SocketPathRemover() {
    if (!name_.empty() && name_[0] != '@') ::unlink(name_.c_str());
  }

 private:
  std::string name_;
};

struct ChildOutcome {
  std::string name;
  absl::StatusOr<std::string> output = std::string();
  absl::StatusOr<io::ExitStatus> exit = io::ExitStatus{};
};

// Reads one child's report and reaps it. A child that fails takes the others down with it
// (SIGTERM): a server left waiting for a caller that never connected would otherwise wait
// until the timeout.
Task<void> Collect(io::Reactor& reactor, std::vector<ChildProcess>* children, size_t index,
                   ChildOutcome* out, int* first_failed) {
  ChildProcess& child = (*children)[index];
  out->output = co_await child.ReadStdout(reactor);
  out->exit = co_await child.Wait(reactor);
  if (!out->exit.ok() || !out->exit->success()) {
    if (*first_failed < 0) *first_failed = static_cast<int>(index);
    for (size_t i = 0; i < children->size(); ++i) {
      if (i != index) (void)(*children)[i].Signal(SIGTERM);
    }
  }
}

Task<void> StopOnSignal(io::Reactor& reactor, io::SignalFd* signals,
                        std::vector<ChildProcess>* children, int* signal_number) {
  const absl::StatusOr<int> signo = co_await signals->Next(reactor);
  if (!signo.ok()) co_return;
  *signal_number = *signo;
  for (ChildProcess& child : *children) (void)child.Signal(SIGTERM);
}

Task<void> KillAtDeadline(io::Reactor& reactor, absl::Duration timeout,
                          std::vector<ChildProcess>* children, bool* timed_out) {
  const absl::Status slept = co_await io::Sleep(reactor, timeout);
  if (absl::IsCancelled(slept)) co_return;
  *timed_out = true;
  for (ChildProcess& child : *children) (void)child.Signal(SIGKILL);
}

std::string LastLine(absl::string_view text) {
  std::string last;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    last = std::string(line);
  }
  return last;
}

std::vector<std::string> ClientArgs(const UdsLaunchOptions& options, const std::string& socket,
                                    std::optional<int> cpu, bool ready_fd) {
  std::vector<std::string> args = options.self_argv;
  args.insert(args.end(),
              {"uds-client", "--socket", socket,
               options.client.calls == UdsCalls::kAsync ? "--async" : "--sync", "--size",
               absl::StrCat(options.client.size), "--loops", absl::StrCat(options.client.loops),
               "--json"});
  if (cpu.has_value()) args.insert(args.end(), {"--cpu", absl::StrCat(*cpu)});
  if (options.client.verify) args.push_back("--verify");
  if (ready_fd) args.insert(args.end(), {"--ready-fd", absl::StrCat(kChildFd)});
  return args;
}

std::string CpuText(std::optional<int> cpu) {
  return cpu.has_value() ? absl::StrCat("CPU ", *cpu) : std::string("any CPU");
}

std::vector<std::string> ServerArgs(const UdsLaunchOptions& options) {
  std::vector<std::string> server_args = options.self_argv;
  server_args.insert(server_args.end(),
                     {"uds-server", "--mode", std::string(UdsModeName(options.mode)),
                      "--listen-fd", absl::StrCat(kChildFd), "--json"});
  if (options.server_cpu.has_value()) {
    server_args.insert(server_args.end(), {"--cpu", absl::StrCat(*options.server_cpu)});
  }
  return server_args;
}

// Why the run failed, if a child did: the child that failed first is the story; the others
// were stopped because of it.
absl::Status FirstFailure(std::vector<ChildOutcome>& outcomes, int first_failed) {
  if (first_failed > 0) std::swap(outcomes[0], outcomes[first_failed]);
  for (const ChildOutcome& outcome : outcomes) {
    if (!outcome.output.ok()) {
      return absl::Status(outcome.output.status().code(),
                          absl::StrCat(outcome.name, ": ", outcome.output.status().message()));
    }
    if (!outcome.exit.ok()) {
      return absl::Status(outcome.exit.status().code(),
                          absl::StrCat(outcome.name, ": ", outcome.exit.status().message()));
    }
    if (!outcome.exit->success()) {
      return absl::InternalError(
          absl::StrCat(outcome.name, " failed (", io::process::DescribeExit(*outcome.exit), ")"));
    }
  }
  return absl::OkStatus();
}

// The figures the children reported (server, caller, then the echo peer of a relay), once
// their counts add up.
absl::StatusOr<UdsLaunchResult> ResultOf(const UdsLaunchOptions& options,
                                         const std::vector<ChildOutcome>& outcomes) {
  UdsLaunchResult result;
  result.mode = options.mode;
  result.loops = options.client.loops;
  result.server_cpu = options.server_cpu;
  result.client_cpu = options.client_cpu;
  result.client2_cpu = options.mode == UdsMode::kRelay
                           ? (options.client2_cpu.has_value() ? options.client2_cpu
                                                              : options.client_cpu)
                           : std::nullopt;
  HOTRING_ASSIGN_OR_RETURN(result.server, ParseUdsServerJson(LastLine(*outcomes[0].output)));
  HOTRING_ASSIGN_OR_RETURN(result.caller, ParseUdsClientJson(LastLine(*outcomes[1].output)));
  if (options.mode == UdsMode::kRelay) {
    HOTRING_ASSIGN_OR_RETURN(const UdsClientResult echo,
                             ParseUdsClientJson(LastLine(*outcomes[2].output)));
    result.echo = echo;
  }

  // The counts must add up: every call went through the server once each way (relay: twice).
  const uint64_t loops = options.client.loops;
  const uint64_t hops = options.mode == UdsMode::kRelay ? 2 : 1;
  if (result.caller.role != 1 || result.caller.messages != loops) {
    return absl::DataLossError(absl::StrFormat(
        "caller: role %d completed %d calls, expected role 1 and %d calls", result.caller.role,
        result.caller.messages, loops));
  }
  if (result.server.messages != hops * loops) {
    return absl::DataLossError(absl::StrFormat("server passed %d messages, expected %d",
                                               result.server.messages, hops * loops));
  }
  if (result.echo.has_value() && (result.echo->role != 2 || result.echo->messages != loops)) {
    return absl::DataLossError(
        absl::StrFormat("echo peer: role %d echoed %d messages, expected role 2 and %d",
                        result.echo->role, result.echo->messages, loops));
  }
  return result;
}

}  // namespace

absl::Status ValidateUdsLaunchOptions(const UdsLaunchOptions& options) {
  HOTRING_ASSIGN_OR_RETURN(const size_t limit, SeqpacketMessageLimit());
  HOTRING_RETURN_IF_ERROR(ValidateUdsClientOptions(options.client, limit));
  if (options.server_cpu.has_value()) {
    HOTRING_RETURN_IF_ERROR(CheckCpu(*options.server_cpu, "--server-cpu"));
  }
  if (options.client_cpu.has_value()) {
    HOTRING_RETURN_IF_ERROR(CheckCpu(*options.client_cpu, "--client-cpu"));
  }
  if (options.client2_cpu.has_value()) {
    HOTRING_RETURN_IF_ERROR(CheckCpu(*options.client2_cpu, "--client2-cpu"));
  }
  if (!options.socket.empty()) {
    const absl::StatusOr<io::SocketAddress> address = io::UnixAddress(options.socket);
    if (!address.ok()) return absl::InvalidArgumentError(address.status().message());
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--timeout must be positive");
  }
  return absl::OkStatus();
}

Task<absl::StatusOr<UdsLaunchResult>> RunUdsLaunch(io::Reactor& reactor, UdsLaunchOptions options,
                                                   io::SignalFd* signals, int* signal_number) {
  *signal_number = 0;
  HOTRING_CO_RETURN_IF_ERROR(ValidateUdsLaunchOptions(options));
  const std::string socket =
      !options.socket.empty()
          ? options.socket
          : absl::StrCat("@hotring-udsbench-", ::getpid(), "-",
                         MonoNow().time_since_epoch().count());
  HOTRING_CO_ASSIGN_OR_RETURN(UniqueFd listener, io::BindUnix(SOCK_SEQPACKET, socket));
  const SocketPathRemover remover(socket);
  if (::listen(listener.get(), 8) != 0) co_return ErrnoStatus("listen");
  // Only starts the children (a synchronous call); they do not need it afterwards.
  HOTRING_CO_ASSIGN_OR_RETURN(std::unique_ptr<io::process::Spawner> spawner,
                              io::process::Spawner::Create());

  std::vector<ChildProcess> children;
  children.reserve(3);
  std::vector<ChildOutcome> outcomes;
  outcomes.reserve(3);
  bool timed_out = false;
  // Declared after `children`: the watchers go first, then the children are killed if still
  // running.
  TaskScope watchers;
  if (signals != nullptr) {
    watchers.Spawn(StopOnSignal(reactor, signals, &children, signal_number));
  }
  watchers.Spawn(KillAtDeadline(reactor, options.timeout, &children, &timed_out));

  HOTRING_CO_ASSIGN_OR_RETURN(
      ChildProcess server,
      spawner->Start(BenchProcessRequest(options.self_exe, ServerArgs(options),
                                         {{.parent_fd = listener.get(), .child_fd = kChildFd}})));
  children.push_back(std::move(server));
  outcomes.push_back(ChildOutcome{"uds-server"});
  listener.Reset();  // the server holds it now

  // The server gives the caller role to whoever connects first. Start the caller, wait until
  // it has connected, then start the echo peer, so each role gets the CPU asked for it.
  {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) co_return ErrnoStatus("pipe2");
    UniqueFd ready_read(ready[0]);
    UniqueFd ready_write(ready[1]);
    HOTRING_CO_ASSIGN_OR_RETURN(
        ChildProcess caller,
        spawner->Start(BenchProcessRequest(
            options.self_exe, ClientArgs(options, socket, options.client_cpu, /*ready_fd=*/true),
            {{.parent_fd = ready_write.get(), .child_fd = kChildFd}})));
    children.push_back(std::move(caller));
    outcomes.push_back(ChildOutcome{"uds-client (caller)"});
    ready_write.Reset();
    // One byte once connected, or end of file if the client died first (its exit status
    // tells why).
    const io::BufferResult got = co_await io::Read(reactor, ready_read.get(), io::Buffer(1));
    (void)got;
  }
  if (options.mode == UdsMode::kRelay && *signal_number == 0 && !timed_out) {
    const std::optional<int> cpu =
        options.client2_cpu.has_value() ? options.client2_cpu : options.client_cpu;
    HOTRING_CO_ASSIGN_OR_RETURN(
        ChildProcess echo,
        spawner->Start(BenchProcessRequest(options.self_exe,
                                           ClientArgs(options, socket, cpu, /*ready_fd=*/false))));
    children.push_back(std::move(echo));
    outcomes.push_back(ChildOutcome{"uds-client (echo)"});
  }

  int first_failed = -1;
  {
    TaskScope collectors;
    for (size_t i = 0; i < children.size(); ++i) {
      collectors.Spawn(Collect(reactor, &children, i, &outcomes[i], &first_failed));
    }
    co_await collectors.Join();
  }
  watchers.CancelAll();
  if (*signal_number != 0) {
    co_return absl::CancelledError(absl::StrCat("interrupted by signal ", *signal_number));
  }
  if (timed_out) {
    co_return absl::DeadlineExceededError(absl::StrFormat(
        "bench uds: not finished after %s; the processes were killed",
        absl::FormatDuration(options.timeout)));
  }
  HOTRING_CO_RETURN_IF_ERROR(FirstFailure(outcomes, first_failed));
  co_return ResultOf(options, outcomes);
}

io::process::SpawnRequest BenchProcessRequest(std::string exe, std::vector<std::string> argv,
                                              std::vector<io::process::PassedFd> passed_fds) {
  io::process::SpawnRequest request;
  request.program = std::move(exe);
  request.argv = std::move(argv);
  request.envp = io::process::InheritedEnvironment();
  request.stdin_from = io::process::ChildInput::kInherit;
  request.stdout_to = io::process::ChildOutput::kPipe;
  request.stderr_to = io::process::ChildOutput::kInherit;
  request.passed_fds = std::move(passed_fds);
  request.group = io::process::ProcessGroup::kShared;
  return request;
}

std::string FormatUdsLaunchResult(const UdsLaunchResult& r, bool json) {
  if (json) {
    JsonObject out;
    out.String("bench", "uds")
        .String("mode", UdsModeName(r.mode))
        .String("calls", UdsCallsName(r.caller.calls))
        .Uint("size", r.caller.size)
        .Uint("loops", r.loops)
        .Int("server_cpu", r.server_cpu.value_or(-1))
        .Int("client_cpu", r.client_cpu.value_or(-1));
    if (r.client2_cpu.has_value()) out.Int("client2_cpu", *r.client2_cpu);
    out.Double("seconds", r.caller.seconds)
        .Double("msg_per_s", r.caller.msg_per_s())
        .Double("us_per_msg", r.caller.us_per_msg())
        .Double("mb_per_s", r.caller.mb_per_s())
        .Uint("server_messages", r.server.messages);
    if (r.echo.has_value()) out.Uint("echo_messages", r.echo->messages);
    return out.Build() + "\n";
  }
  std::string out = absl::StrFormat(
      "uds %s %s: %d-byte messages, %d calls; server on %s, caller on %s", UdsModeName(r.mode),
      UdsCallsName(r.caller.calls), r.caller.size, r.loops, CpuText(r.server_cpu),
      CpuText(r.client_cpu));
  if (r.mode == UdsMode::kRelay) absl::StrAppend(&out, ", echo peer on ", CpuText(r.client2_cpu));
  absl::StrAppendFormat(&out, "\nserver passed %d messages\n", r.server.messages);
  absl::StrAppend(&out, FormatUdsClientResult(r.caller, /*json=*/false));
  return out;
}

}  // namespace hotring::ipc

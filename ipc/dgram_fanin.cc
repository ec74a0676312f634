#include "ipc/dgram_fanin.h"

#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/task_scope.h"
#include "io/ops.h"
#include "io/process/child_process.h"
#include "io/socket.h"
#include "io/thread_wake.h"
#include "core/cpu.h"
#include "core/json.h"
#include "ipc/ring_ops.h"

namespace hotring::ipc {
namespace {

// Descriptors the run needs besides the client sockets (server, pair, ring, pidfd, stdio...).
constexpr int kSpareFds = 32;

// What the exchanger reports back over the socket pair.
struct ExchangeReport {
  int64_t nanoseconds = 0;
  uint64_t messages = 0;
  int32_t error = 0;  // errno of a failed call, or -1 for a wrong payload
};

// Owns the sockets of one run.
struct Sockets {
  UniqueFd server;
  std::vector<UniqueFd> clients;  // clients[0] is bound and receives the final datagram
  io::SocketAddress server_address;
  io::SocketAddress client_address;
  UniqueFd go_parent;  // the waiter's end of the start/report pair
  UniqueFd go_child;   // the exchanger's end
};

absl::Status EnsureDescriptorLimit(int needed) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return ErrnoStatus("getrlimit(RLIMIT_NOFILE)");
  if (limit.rlim_cur >= static_cast<rlim_t>(needed)) return absl::OkStatus();
  if (limit.rlim_max < static_cast<rlim_t>(needed)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "dgram-fanin needs %d descriptors but RLIMIT_NOFILE allows %d (raise it with ulimit -n)",
        needed, limit.rlim_max));
  }
  limit.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return ErrnoStatus("setrlimit(RLIMIT_NOFILE)");
  return absl::OkStatus();
}

absl::StatusOr<Sockets> MakeSockets(const DgramFaninOptions& options, int run) {
  // Abstract names unique to this process and run, so parallel runs do not collide.
  const std::string base = absl::StrCat("@hotring-fanin-", ::getpid(), "-", run, "-",
                                        MonoNow().time_since_epoch().count());
  Sockets s;
  HOTRING_ASSIGN_OR_RETURN(s.server_address, io::UnixAddress(base + "-server"));
  HOTRING_ASSIGN_OR_RETURN(s.client_address, io::UnixAddress(base + "-client"));
  HOTRING_ASSIGN_OR_RETURN(s.server, io::BindUnix(SOCK_DGRAM, base + "-server"));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd first, io::BindUnix(SOCK_DGRAM, base + "-client"));
  s.clients.push_back(std::move(first));
  for (int i = 1; i < options.clients; ++i) {
    HOTRING_ASSIGN_OR_RETURN(UniqueFd client, io::UnixSocket(SOCK_DGRAM));
    if (options.connected &&
        ::connect(client.get(), s.server_address.get(), s.server_address.length) != 0) {
      return ErrnoStatus("connect(client to server)");
    }
    s.clients.push_back(std::move(client));
  }
  HOTRING_ASSIGN_OR_RETURN(auto pair, io::UnixSocketPair(SOCK_STREAM));
  s.go_parent = std::move(pair.first);
  s.go_child = std::move(pair.second);
  return s;
}

int64_t NowNanoseconds() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The forked exchanger: only async-signal-safe calls from here on.
int Exchange(const Sockets& s, uint64_t messages, std::optional<int> cpu) {
  ExchangeReport report;
  if (cpu.has_value()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(*cpu, &set);
    if (::sched_setaffinity(0, sizeof(set), &set) != 0) report.error = errno;
  }
  char byte;
  if (report.error == 0 && ::read(s.go_child.get(), &byte, 1) != 1) report.error = errno;
  const int64_t start = NowNanoseconds();
  const int client = s.clients[0].get();
  const int server = s.server.get();
  char buffer[64];
  for (uint64_t i = 0; i < messages && report.error == 0; ++i) {
    if (::sendto(client, "S", 1, 0, s.server_address.get(), s.server_address.length) != 1) {
      report.error = errno;
      break;
    }
    const ssize_t n = ::recv(server, buffer, sizeof(buffer), 0);
    if (n < 0) {
      report.error = errno;
    } else if (n != 1 || buffer[0] != 'S') {
      report.error = -1;
    } else {
      ++report.messages;
    }
  }
  report.nanoseconds = NowNanoseconds() - start;
  // The datagram that ends the wait: to the first client, from itself as in the seed.
  if (::sendto(client, "Z", 1, 0, s.client_address.get(), s.client_address.length) != 1 &&
      report.error == 0) {
    report.error = errno;
  }
  if (::write(s.go_child.get(), &report, sizeof(report)) != sizeof(report)) return 2;
  return report.error == 0 ? 0 : 1;
}

absl::Status CheckFinalDatagram(const Sockets& s) {
  char buffer[64];
  const ssize_t n = ::recv(s.clients[0].get(), buffer, sizeof(buffer), MSG_DONTWAIT);
  if (n < 0) return ErrnoStatus("recv(final datagram)");
  if (n != 1 || buffer[0] != 'Z') {
    return absl::DataLossError("the first client received something other than the final 'Z'");
  }
  return absl::OkStatus();
}

// Reads the exchanger's report and reaps it.
Task<absl::StatusOr<ExchangeReport>> FinishExchanger(io::Reactor& reactor, const Sockets& s,
                                                     io::process::ChildProcess& child) {
  io::BufferResult got =
      co_await io::Read(reactor, s.go_parent.get(), io::Buffer(sizeof(ExchangeReport)));
  HOTRING_CO_ASSIGN_OR_RETURN(const io::ExitStatus exit, co_await child.Wait(reactor));
  HOTRING_CO_RETURN_IF_ERROR(got.bytes.status());
  if (*got.bytes != sizeof(ExchangeReport)) {
    co_return absl::InternalError(
        absl::StrCat("exchanger ended without a report (", io::process::DescribeExit(exit), ")"));
  }
  ExchangeReport report;
  std::memcpy(&report, got.buffer.data(), sizeof(report));
  if (report.error == -1) co_return absl::DataLossError("exchanger: the server got a wrong datagram");
  if (report.error != 0) co_return ErrnoStatus("exchanger", report.error);
  if (!exit.success()) {
    co_return absl::InternalError(
        absl::StrCat("exchanger failed (", io::process::DescribeExit(exit), ")"));
  }
  co_return report;
}

// The outcome of the POLL_ADD tasks: which client woke first, or the first error.
struct WakeState {
  int woken = -1;
  absl::Status status;
  bool over = false;  // the wait is over: the remaining polls are being cancelled
  const io::ThreadWake* wake = nullptr;
};

Task<void> PollClient(io::Reactor& reactor, int fd, int index, WakeState* state) {
  const absl::StatusOr<unsigned> revents = co_await io::Poll(reactor, fd, POLLIN);
  if (state->over) co_return;
  if (!revents.ok()) {
    if (state->status.ok()) state->status = revents.status();
  } else if (state->woken < 0) {
    state->woken = index;
  }
  state->wake->Notify();
}

// Sets *start just before the exchanger is told to go and *end as soon as a poll fired, before
// the other polls are cancelled (which is not part of the wait).
Task<absl::StatusOr<int>> WaitWithUring(io::Reactor& reactor, const Sockets& s, MonoTime* start,
                                        MonoTime* end) {
  HOTRING_CO_ASSIGN_OR_RETURN(const io::ThreadWake wake, io::ThreadWake::Create());
  WakeState state;
  state.wake = &wake;
  TaskScope polls;
  for (size_t i = 0; i < s.clients.size(); ++i) {
    polls.Spawn(PollClient(reactor, s.clients[i].get(), static_cast<int>(i), &state));
  }
  // The NOP goes to the kernel in the same submission as every POLL_ADD, after them: once it
  // completes, every poll is armed.
  HOTRING_CO_RETURN_IF_ERROR(co_await io::Nop(reactor));
  *start = MonoNow();
  if (::write(s.go_parent.get(), "W", 1) != 1) co_return ErrnoStatus("write(go)");
  while (state.woken < 0 && state.status.ok()) {
    HOTRING_CO_RETURN_IF_ERROR((co_await wake.Wait(reactor)).status());
  }
  *end = MonoNow();
  // Cancel the other polls in a few submissions and let their tasks end.
  state.over = true;
  std::vector<int> fds;
  fds.reserve(s.clients.size());
  for (const UniqueFd& fd : s.clients) fds.push_back(fd.get());
  QueueCancelAllOn(reactor, fds);
  co_await polls.Join();
  HOTRING_CO_RETURN_IF_ERROR(state.status);
  co_return state.woken;
}

absl::StatusOr<int> WaitWithSelect(const Sockets& s, MonoTime* start, MonoTime* end) {
  fd_set watched;
  FD_ZERO(&watched);
  int max_fd = -1;
  for (const UniqueFd& fd : s.clients) {
    if (fd.get() >= FD_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "select() cannot watch descriptor %d (FD_SETSIZE is %d)", fd.get(), FD_SETSIZE));
    }
    FD_SET(fd.get(), &watched);
    max_fd = std::max(max_fd, fd.get());
  }
  *start = MonoNow();
  if (::write(s.go_parent.get(), "W", 1) != 1) return ErrnoStatus("write(go)");
  for (;;) {
    fd_set ready = watched;
    const int n = ::select(max_fd + 1, &ready, nullptr, nullptr, nullptr);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus("select");
    *end = MonoNow();
    for (size_t i = 0; i < s.clients.size(); ++i) {
      if (FD_ISSET(s.clients[i].get(), &ready)) return static_cast<int>(i);
    }
  }
}

Task<absl::StatusOr<DgramFaninFigure>> RunOnce(io::Reactor& reactor,
                                               const DgramFaninOptions& options,
                                               FaninWaiter waiter, int run) {
  HOTRING_CO_ASSIGN_OR_RETURN(const Sockets sockets, MakeSockets(options, run));
  const std::optional<int> exchanger_cpu =
      options.exchanger_cpu.has_value() ? options.exchanger_cpu : options.cpu;
  HOTRING_CO_ASSIGN_OR_RETURN(
      io::process::ChildProcess exchanger,
      io::process::ForkChild([&] { return Exchange(sockets, options.messages, exchanger_cpu); }));
  MonoTime start;
  MonoTime end;
  absl::StatusOr<int> woken = -1;
  switch (waiter) {
    case FaninWaiter::kUring:
      woken = co_await WaitWithUring(reactor, sockets, &start, &end);
      break;
    case FaninWaiter::kSelect:
      woken = WaitWithSelect(sockets, &start, &end);
      break;
  }
  HOTRING_CO_RETURN_IF_ERROR(woken.status());
  HOTRING_CO_ASSIGN_OR_RETURN(const ExchangeReport report,
                              co_await FinishExchanger(reactor, sockets, exchanger));
  if (*woken != 0) {
    co_return absl::DataLossError(absl::StrFormat(
        "%s woke on client %d, which nobody wrote to", FaninWaiterName(waiter), *woken));
  }
  HOTRING_CO_RETURN_IF_ERROR(CheckFinalDatagram(sockets));
  if (report.messages != options.messages) {
    co_return absl::DataLossError(absl::StrFormat("exchanger completed %d of %d exchanges",
                                                  report.messages, options.messages));
  }
  DgramFaninFigure figure;
  figure.waiter = waiter;
  figure.wait_seconds = absl::ToDoubleSeconds(Since(start, end));
  figure.exchange_seconds = static_cast<double>(report.nanoseconds) * 1e-9;
  figure.messages = report.messages;
  figure.woken_client = *woken;
  co_return figure;
}

}  // namespace

absl::string_view FaninWaiterName(FaninWaiter waiter) {
  switch (waiter) {
    case FaninWaiter::kUring:
      return "io_uring";
    case FaninWaiter::kSelect:
      return "select";
  }
  return "?";
}

absl::Status ValidateDgramFaninOptions(const DgramFaninOptions& options) {
  if (options.clients < 1 || options.clients > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("bench dgram-fanin: --clients must be 1..100000, got ", options.clients));
  }
  if (options.messages < 1) {
    return absl::InvalidArgumentError("bench dgram-fanin: --messages must be at least 1");
  }
  if (options.waiters.empty()) {
    return absl::InvalidArgumentError("bench dgram-fanin: no waiter to measure");
  }
  for (const FaninWaiter waiter : options.waiters) {
    if (waiter == FaninWaiter::kSelect && options.clients + kSpareFds > FD_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "bench dgram-fanin: select() only watches descriptors below %d; use --waiter uring "
          "for more than %d clients",
          FD_SETSIZE, FD_SETSIZE - kSpareFds));
    }
  }
  if (options.cpu.has_value()) HOTRING_RETURN_IF_ERROR(CheckCpu(*options.cpu, "--cpu"));
  if (options.exchanger_cpu.has_value()) {
    HOTRING_RETURN_IF_ERROR(CheckCpu(*options.exchanger_cpu, "--exchanger-cpu"));
  }
  return absl::OkStatus();
}

Task<absl::StatusOr<DgramFaninResult>> RunDgramFanin(io::Reactor& reactor,
                                                     DgramFaninOptions options) {
  HOTRING_CO_RETURN_IF_ERROR(ValidateDgramFaninOptions(options));
  HOTRING_CO_RETURN_IF_ERROR(EnsureDescriptorLimit(options.clients + 2 * kSpareFds));
  // The waiter is pinned for the run only (the exchanger inherits it unless told otherwise).
  const AffinityRestorer restore_affinity;
  HOTRING_CO_RETURN_IF_ERROR(MaybePinCurrentThread(options.cpu));
  DgramFaninResult result;
  result.clients = options.clients;
  result.connected = options.connected;
  result.messages = options.messages;
  result.cpu = options.cpu;
  result.exchanger_cpu = options.exchanger_cpu;
  int run = 0;
  for (const FaninWaiter waiter : options.waiters) {
    HOTRING_CO_ASSIGN_OR_RETURN(DgramFaninFigure figure,
                                co_await RunOnce(reactor, options, waiter, run++));
    result.figures.push_back(figure);
  }
  co_return result;
}

std::string FormatDgramFaninResult(const DgramFaninResult& r, bool json) {
  if (json) {
    JsonObject out;
    out.String("bench", "dgram-fanin")
        .Int("clients", r.clients)
        .Bool("connected", r.connected)
        .Uint("messages", r.messages)
        .Int("cpu", r.cpu.value_or(-1))
        .Int("exchanger_cpu", r.exchanger_cpu.has_value() ? *r.exchanger_cpu : r.cpu.value_or(-1));
    for (const DgramFaninFigure& f : r.figures) {
      const std::string prefix = f.waiter == FaninWaiter::kUring ? "uring" : "select";
      out.Double(prefix + "_wait_s", f.wait_seconds)
          .Double(prefix + "_exchange_s", f.exchange_seconds);
    }
    return out.Build() + "\n";
  }
  std::string out = absl::StrFormat("dgram-fanin: %d client sockets (%s), %d messages", r.clients,
                                    r.connected ? "connected" : "unconnected", r.messages);
  if (r.cpu.has_value()) absl::StrAppend(&out, ", waiter on CPU ", *r.cpu);
  const std::optional<int> ex = r.exchanger_cpu.has_value() ? r.exchanger_cpu : r.cpu;
  if (ex.has_value()) absl::StrAppend(&out, ", exchanger on CPU ", *ex);
  out += "\n";
  for (const DgramFaninFigure& f : r.figures) {
    absl::StrAppendFormat(&out, "  %-9s wait %9.6f s (exchange loop %9.6f s, %.2f us/exchange)\n",
                          absl::StrCat(FaninWaiterName(f.waiter), ":"), f.wait_seconds,
                          f.exchange_seconds, f.exchange_seconds * 1e6 / f.messages);
  }
  return out;
}

}  // namespace hotring::ipc

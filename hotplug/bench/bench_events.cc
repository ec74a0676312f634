#include "hotplug/bench/bench_events.h"

#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/clock.h"
#include "core/cpu.h"
#include "core/flags.h"
#include "core/json.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/bench/bench_daemon.h"
#include "hotplug/client/client.h"
#include "hotplug/wire.h"
#include "io/netlink.h"
#include "io/socket.h"

extern char** environ;

namespace hotring::hotplug {
namespace {

struct BenchOptions {
  int64_t events = 100000;       // (a) no handler
  int64_t exec_events = 2000;    // (b) --exec /bin/true, and the serial baseline
  int64_t seed_events = 100;     // the seed's runs
  absl::Duration reorder_timeout = absl::Seconds(5);
  std::string program = "/bin/true";
  std::string append_line;  // --append-line PATH: a copy of it is the handler
  int64_t children_max = 0;
  int cpu = 0;  // (a) pinned: the daemon and the sender on this CPU
  bool json = false;
};

struct Figure {
  std::string name;
  int64_t events = 0;
  double seconds = 0;
  std::optional<double> daemon_cpu_us_per_event;
  // With a handler: the CPU of what handles the events (the daemon, or the serial loop) plus
  // the handlers', from the first send to the last event handled (the daemon's start-up and
  // shutdown left out).
  std::optional<double> cpu_with_handlers_us_per_event;
  std::optional<uint64_t> handler_lines;  // --append-line: lines its copies logged
};

std::string EventBytes(int64_t seqnum, int64_t device) {
  WireMessage m;
  m.type = WireType::kEvent;
  m.fields = {{"ACTION", "add"},
              {"DEVPATH", absl::StrCat("/devices/bench/dev", device)},
              {"SUBSYSTEM", "bench"},
              {"SEQNUM", absl::StrCat(seqnum)}};
  return EncodeWireMessage(m);
}

// How the bench's sender hands datagrams to the socket.
enum class SendMode {
  kBatched,  // sendmmsg, 64 datagrams per call: a sender that keeps up with the daemon
  kSingle,   // one blocking sendto per event, as one `hotring send` after another would
};

absl::Status SendAll(const std::string& socket, int64_t first, int64_t count,
                     SendMode mode = SendMode::kSingle) {
  return SendDatagrams(socket, count, mode == SendMode::kBatched ? 64 : 1,
                       [first](int64_t i) { return EventBytes(first + i, i); });
}

// Pins the daemon and the calling thread to one CPU for a figure; restores the thread's mask.
class SameCpu {
 public:
  static absl::StatusOr<std::unique_ptr<SameCpu>> Pin(pid_t daemon, std::optional<int> cpu) {
    auto same = std::unique_ptr<SameCpu>(new SameCpu());
    if (!cpu.has_value()) return same;
    HOTRING_RETURN_IF_ERROR(CheckCpu(*cpu, "--cpu"));
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(*cpu, &set);
    if (::sched_setaffinity(daemon, sizeof(set), &set) != 0) {
      return ErrnoStatus("sched_setaffinity(daemon)");
    }
    HOTRING_RETURN_IF_ERROR(PinCurrentThread(*cpu));
    return same;
  }

 private:
  SameCpu() = default;
  AffinityRestorer restore_;
};

// Sends `count` events and waits until the daemon has handled them all. With `cpu`, the daemon
// and the sender share that CPU.
absl::StatusOr<Figure> Pipeline(const std::string& name, const std::vector<std::string>& args,
                                int64_t first, int64_t count, SendMode mode = SendMode::kSingle,
                                std::optional<int> cpu = std::nullopt) {
  BenchDaemon::Options options;
  options.args = {"--no-netlink", "--expect-seqnum", "0", "--log-level", "warning"};
  options.args.insert(options.args.end(), args.begin(), args.end());
  const int64_t children_before = ReapedChildrenCpuNs();
  HOTRING_ASSIGN_OR_RETURN(BenchDaemon daemon, BenchDaemon::Start(std::move(options)));
  HOTRING_ASSIGN_OR_RETURN(const std::unique_ptr<SameCpu> pinned,
                           SameCpu::Pin(daemon.pid(), cpu));
  const int64_t cpu_before = ProcessCpuNs(daemon.pid());
  const MonoTime start = MonoNow();
  HOTRING_RETURN_IF_ERROR(SendAll(daemon.socket(), first, count, mode));
  HOTRING_RETURN_IF_ERROR(Settle(daemon.socket(), absl::Seconds(600)));
  const MonoTime end = MonoNow();
  const int64_t cpu_after = ProcessCpuNs(daemon.pid());
  Figure f{name, count, absl::ToDoubleSeconds(Since(start, end)), std::nullopt};
  if (cpu_before >= 0 && cpu_after >= 0) {
    // Includes the settle request and the reactor's start-up share: a small overcount.
    f.daemon_cpu_us_per_event = static_cast<double>(cpu_after - cpu_before) / 1000.0 / count;
  }
  // The handlers' CPU arrives with the daemon's, once it is reaped: everything reaped less the
  // daemon's own total (what it spends on stopping is counted as the handlers').
  HOTRING_RETURN_IF_ERROR(daemon.Stop());
  const int64_t children_after = ReapedChildrenCpuNs();
  const bool has_handler = std::find(args.begin(), args.end(), "--exec") != args.end();
  if (has_handler && f.daemon_cpu_us_per_event.has_value() && children_before >= 0 &&
      children_after >= children_before + cpu_after) {
    const double handlers_ns = static_cast<double>(children_after - children_before - cpu_after);
    f.cpu_with_handlers_us_per_event = *f.daemon_cpu_us_per_event + handlers_ns / 1000.0 / count;
  }
  return f;
}

// The plain C-style baseline: one process, one datagram at a time, spawn and wait.
absl::StatusOr<Figure> SerialBaseline(const std::string& program, const std::string& label,
                                      int64_t count) {
  const std::string socket = absl::StrCat("@hotring-bench-serial-", ::getpid());
  HOTRING_ASSIGN_OR_RETURN(UniqueFd server, io::BindUnix(SOCK_DGRAM, socket));
  (void)io::SetReceiveBuffer(server.get(), 8 << 20);
  const MonoTime start = MonoNow();
  absl::Status send_status;
  std::thread sender([&] { send_status = SendAll(socket, 0, count); });
  char buffer[kMaxWireBytes];
  int64_t handled = 0;
  const int64_t children_before = ReapedChildrenCpuNs();
  const int64_t loop_before = ThreadCpuNs();
  for (; handled < count; ++handled) {
    if (::recv(server.get(), buffer, sizeof(buffer), 0) < 0) break;
    pid_t pid;
    char* const argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>("bench"),
                          nullptr};
    if (::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, environ) != 0) break;
    int status;
    ::waitpid(pid, &status, 0);
  }
  const MonoTime end = MonoNow();
  const int64_t loop_after = ThreadCpuNs();
  const int64_t children_after = ReapedChildrenCpuNs();
  sender.join();
  HOTRING_RETURN_IF_ERROR(send_status);
  if (handled != count) return absl::InternalError("serial baseline stopped early");
  Figure f{absl::StrCat("serial baseline (", label, ")"), count,
           absl::ToDoubleSeconds(Since(start, end)), std::nullopt};
  if (loop_before >= 0 && loop_after >= loop_before && children_before >= 0 &&
      children_after >= children_before) {
    f.cpu_with_handlers_us_per_event =
        static_cast<double>((loop_after - loop_before) + (children_after - children_before)) /
        1000.0 / count;
  }
  return f;
}

std::string Format(const std::vector<Figure>& figures, double ratio, bool json) {
  std::vector<std::string> parts;
  for (const Figure& f : figures) {
    const std::string cpu = f.daemon_cpu_us_per_event.has_value()
                                ? absl::StrFormat("%.2f", *f.daemon_cpu_us_per_event)
                                : "";
    const std::string with_handlers =
        f.cpu_with_handlers_us_per_event.has_value()
            ? absl::StrFormat("%.2f", *f.cpu_with_handlers_us_per_event)
            : "";
    if (json) {
      parts.push_back(absl::StrFormat(
          "{\"name\": %s, \"events\": %d, \"seconds\": %.6f, \"events_per_s\": %.0f%s%s%s}",
          JsonQuote(f.name), f.events, f.seconds, f.events / f.seconds,
          cpu.empty() ? "" : absl::StrCat(", \"daemon_cpu_us_per_event\": ", cpu),
          with_handlers.empty()
              ? ""
              : absl::StrCat(", \"cpu_with_handlers_us_per_event\": ", with_handlers),
          f.handler_lines.has_value() ? absl::StrCat(", \"handler_lines\": ", *f.handler_lines)
                                      : ""));
    } else {
      parts.push_back(absl::StrFormat(
          "%-36s %7d events %9.3f s %10.0f events/s%s%s%s", f.name, f.events, f.seconds,
          f.events / f.seconds, cpu.empty() ? "" : absl::StrCat("  daemon CPU ", cpu, " us/event"),
          with_handlers.empty() ? ""
                                : absl::StrCat("  with handlers ", with_handlers, " us/event"),
          f.handler_lines.has_value() ? absl::StrCat("  (", *f.handler_lines, " lines logged)")
                                      : ""));
    }
  }
  if (json) {
    return absl::StrCat("{\"figures\": [", absl::StrJoin(parts, ", "),
                        absl::StrFormat("], \"exec_over_serial\": %.2f}\n", ratio));
  }
  return absl::StrCat(absl::StrJoin(parts, "\n"),
                      absl::StrFormat("\nthroughput with a handler / serial baseline: %.2fx\n",
                                      ratio));
}

}  // namespace

int BenchEventsCommand(const std::vector<std::string>& args) {
  BenchOptions options;
  FlagSet flags(
      "bench events",
      "usage: hotring bench events [options]\n"
      "Events through a private daemon and its control socket, then settle:\n"
      "  (a) no handler: the daemon's CPU time per event, fed by a sender that batches\n"
      "      (sendmmsg x64), unpinned and with daemon and sender on one CPU; and fed by one\n"
      "      blocking sendto per event (there the figure is mostly the kernel waking the sender\n"
      "      the daemon's reads make room for, charged to the daemon)\n"
      "  (b) --exec PROGRAM, against a serial baseline (one process: receive, posix_spawn, wait)\n"
      "  and the seed's two runs: N events in order, and N behind a SEQNUM gap.");
  constexpr int64_t kMost = 100'000'000;
  flags.Int("--events", "N", &options.events, 1, kMost, "(a) events (default 100000)")
      .Int("--exec-events", "N", &options.exec_events, 1, kMost,
           "(b) events and the baseline's (default 2000)")
      .Int("--seed-events", "N", &options.seed_events, 1, kMost,
           "events of each seed run (default 100)")
      .String("--exec", "PROGRAM", &options.program,
              "handler of (b) and the seed runs (default /bin/true)")
      .String("--append-line", "PATH", &options.append_line,
              "instead, the cheapest handler: PATH is bazel-bin/hotplug/bench/append_line, "
              "copied to a directory of its own; its lines counted")
      .Int("--children-max", "N", &options.children_max, 1, kMost, "the daemon's --children-max")
      .Seconds("--reorder-timeout", "S", &options.reorder_timeout,
               "the gap run's --reorder-timeout (default 5)")
      .Int("--cpu", "N", &options.cpu, 0, kMost, "the CPU of the pinned (a) figure (default 0)")
      .Bool("--json", &options.json, "the figures as JSON");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  std::optional<AppendLineHandler> append_line;
  std::string label = options.program;
  if (!options.append_line.empty()) {
    absl::StatusOr<AppendLineHandler> copy = AppendLineHandler::Copy(options.append_line);
    if (!copy.ok()) return ReportError("bench events", copy.status());
    append_line = std::move(*copy);
    options.program = append_line->program();
    label = "append_line";
  }
  // Lines the handlers logged since the last figure, for figures that run the handler.
  auto count_lines = [&](Figure& f) -> absl::Status {
    if (!append_line.has_value()) return absl::OkStatus();
    HOTRING_ASSIGN_OR_RETURN(const uint64_t lines, append_line->TakeLines());
    if (f.cpu_with_handlers_us_per_event.has_value()) f.handler_lines = lines;
    return absl::OkStatus();
  };
  std::vector<std::string> common;
  if (options.children_max > 0) {
    common = {"--children-max", absl::StrCat(options.children_max)};
  }
  std::vector<std::string> exec = common;
  exec.insert(exec.end(), {"--exec", options.program});
  std::vector<std::string> gap = exec;
  gap.insert(gap.end(),
             {"--reorder-timeout", absl::StrCat(absl::ToDoubleSeconds(options.reorder_timeout))});
  std::vector<Figure> figures;
  for (auto step : std::vector<std::function<absl::StatusOr<Figure>()>>{
           [&] {
             return Pipeline("(a) no handler, sendmmsg x64", common, 0, options.events,
                             SendMode::kBatched);
           },
           [&] {
             return Pipeline(absl::StrCat("(a) no handler, sendmmsg x64, CPU ", options.cpu),
                             common, 0, options.events, SendMode::kBatched, options.cpu);
           },
           [&] {
             return Pipeline("(a) no handler, one sendto each", common, 0, options.events,
                             SendMode::kSingle);
           },
           [&] {
             return Pipeline(absl::StrCat("(b) --exec ", label), exec, 0, options.exec_events);
           },
           [&] { return SerialBaseline(options.program, label, options.exec_events); },
           [&] {
             return Pipeline(absl::StrCat("seed run: ", options.seed_events, " in order"), exec,
                             0, options.seed_events);
           },
           [&] {
             return Pipeline(absl::StrCat("seed run: ", options.seed_events, " behind a gap (",
                                          absl::FormatDuration(options.reorder_timeout), ")"),
                             gap, 1, options.seed_events);
           }}) {
    absl::StatusOr<Figure> figure = step();
    if (!figure.ok()) return ReportError("bench events", figure.status());
    if (const absl::Status counted = count_lines(*figure); !counted.ok()) {
      return ReportError("bench events", counted);
    }
    figures.push_back(std::move(*figure));
  }
  // (b) over the serial baseline, the two figures after the three (a) ones.
  const double ratio = (figures[3].events / figures[3].seconds) /
                       (figures[4].events / figures[4].seconds);
  std::fputs(Format(figures, ratio, options.json).c_str(), stdout);
  if (!options.json && figures[3].cpu_with_handlers_us_per_event.has_value() &&
      figures[4].cpu_with_handlers_us_per_event.has_value()) {
    std::printf("CPU of daemon + handlers / serial loop + handlers: %.2fx\n",
                *figures[3].cpu_with_handlers_us_per_event /
                    *figures[4].cpu_with_handlers_us_per_event);
  }
  return 0;
}

}  // namespace hotring::hotplug

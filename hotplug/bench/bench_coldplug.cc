#include "hotplug/bench/bench_coldplug.h"

#include <linux/magic.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/json.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/bench/bench_daemon.h"
#include "hotplug/sysfs.h"
#include "io/netlink.h"

namespace hotring::hotplug {
namespace {

// Enough for every uevent the kernel sends (at most 2 KiB of env plus the header).
constexpr size_t kDatagramBuffer = 16 * 1024;
// Our listeners' buffers: the daemon's default, so nothing is lost while a phase runs.
constexpr int kListenerBuffer = 128 << 20;
// trigger's stderr kept per measurement.
constexpr size_t kMaxTriggerErrors = 4096;

// ---- Our own netlink listener ----

enum class Received { kNothing, kUevent, kOther };

// Owns a listener on netlink group 1 of this network namespace, and the last datagram.
class UeventTap {
 public:
  static absl::StatusOr<UeventTap> Open(bool trust_userspace) {
    io::UeventListenerOptions options;
    options.receive_buffer = kListenerBuffer;
    HOTRING_ASSIGN_OR_RETURN(io::UeventListener listener, io::OpenUeventListener(options));
    return UeventTap(std::move(listener.fd), trust_userspace);
  }

  // One datagram; kNothing when none came within `wait` (zero: only what is queued now).
  // kUevent: one the daemon would take as an event (from the kernel, or from anyone when
  // trusting userspace, and not libudev's); payload() holds it.
  absl::StatusOr<Received> Receive(absl::Duration wait) {
    if (wait > absl::ZeroDuration()) {
      pollfd p{fd_.get(), POLLIN, 0};
      const int ms = static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(wait)));
      const int ready = ::poll(&p, 1, ms);
      if (ready < 0 && errno != EINTR) return ErrnoStatus("poll(netlink)");
      if (ready <= 0) return Received::kNothing;
    }
    sockaddr_nl peer{};
    iovec iov{buffer_.data(), buffer_.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    msghdr msg{};
    msg.msg_name = &peer;
    msg.msg_namelen = sizeof(peer);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return Received::kNothing;
      if (errno == ENOBUFS) {
        return absl::ResourceExhaustedError(
            "our netlink listener overran (ENOBUFS): the counts of this run are unusable");
      }
      return ErrnoStatus("recvmsg(netlink)");
    }
    std::optional<ucred> credentials;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
        credentials = cred;
      }
    }
    io::SocketAddress address;
    std::memcpy(&address.storage, &peer, sizeof(peer));
    address.length = msg.msg_namelen;
    payload_ = absl::string_view(buffer_.data(), static_cast<size_t>(n));
    const bool trusted = trust_userspace_ || io::CheckNetlinkOrigin(address, credentials) ==
                                                 io::NetlinkOrigin::kKernel;
    if (!trusted || absl::StartsWith(payload_, absl::string_view("libudev\0", 8))) {
      return Received::kOther;
    }
    return Received::kUevent;
  }

  [[nodiscard]] absl::string_view payload() const { return payload_; }

  // Throws away what is queued.
  absl::Status Drain() {
    for (;;) {
      HOTRING_ASSIGN_OR_RETURN(const Received r, Receive(absl::ZeroDuration()));
      if (r == Received::kNothing) return absl::OkStatus();
    }
  }

  struct Counts {
    uint64_t datagrams = 0;
    uint64_t uevents = 0;
  };
  // Takes what is queued and counts it.
  absl::StatusOr<Counts> Count() {
    Counts counts;
    for (;;) {
      HOTRING_ASSIGN_OR_RETURN(const Received r, Receive(absl::ZeroDuration()));
      if (r == Received::kNothing) return counts;
      ++counts.datagrams;
      if (r == Received::kUevent) ++counts.uevents;
    }
  }

 private:
  UeventTap(UniqueFd fd, bool trust_userspace)
      : fd_(std::move(fd)), trust_userspace_(trust_userspace), buffer_(kDatagramBuffer) {}
  UniqueFd fd_;
  bool trust_userspace_;
  std::vector<char> buffer_;
  absl::string_view payload_;
};

// ---- The trigger, timed ----

// Marks when trigger printed its first --verbose line, i.e. when its first write returned.
struct WriteProbe {
  std::optional<MonoTime> first;
};

ssize_t ProbeWrite(void* cookie, const char* data, size_t size) {
  WriteProbe& probe = *static_cast<WriteProbe*>(cookie);
  if (!probe.first.has_value()) probe.first = MonoNow();
  return static_cast<ssize_t>(size);
}

struct TimedRun {
  TriggerReport report;
  MonoTime start;
  MonoTime first_write;
  MonoTime end;
  std::string errors;
};

// Runs trigger as `hotring trigger` would (the same walk and writes), then the after_writes
// hook. Output: the probe instead of stdout (it prints one line per write), errors kept.
// An untimed walk comes first, so that every timed walk finds what it reads in the caches,
// whatever ran before it (starting a daemon, a burst of spawns).
absl::StatusOr<TimedRun> TimedTrigger(const TriggerOptions& trigger,
                                      const ColdplugBenchOptions& options) {
  (void)ScanSysfs(trigger.sysfs_root, trigger.filter);
  WriteProbe probe;
  const cookie_io_functions_t functions{nullptr, ProbeWrite, nullptr, nullptr};
  FILE* out = ::fopencookie(&probe, "w", functions);
  if (out == nullptr) return ErrnoStatus("fopencookie");
  ::setvbuf(out, nullptr, _IONBF, 0);
  char* error_text = nullptr;
  size_t error_size = 0;
  FILE* err = ::open_memstream(&error_text, &error_size);
  if (err == nullptr) {
    ::fclose(out);
    return ErrnoStatus("open_memstream");
  }
  TriggerEnvironment env;
  env.out = out;
  env.err = err;
  env.progress = false;
  TimedRun run;
  run.start = MonoNow();
  absl::StatusOr<TriggerReport> report = Trigger(trigger, env);
  absl::Status hook = absl::OkStatus();
  if (report.ok() && options.after_writes) hook = options.after_writes(*report);
  run.end = MonoNow();
  ::fclose(out);
  ::fclose(err);
  run.errors.assign(error_text != nullptr ? error_text : "",
                    std::min(error_size, kMaxTriggerErrors));
  ::free(error_text);
  if (!report.ok()) return report.status();
  HOTRING_RETURN_IF_ERROR(hook);
  run.report = std::move(*report);
  run.first_write = probe.first.value_or(run.end);
  return run;
}

ColdplugMeasurement FromRun(ColdplugPhase phase, const TimedRun& run, UeventTap::Counts counts) {
  ColdplugMeasurement m;
  m.phase = phase;
  m.triggered = run.report.triggered;
  m.failed = run.report.failed;
  m.vanished = run.report.vanished;
  m.trigger_errors = run.errors;
  m.datagrams = counts.datagrams;
  m.uevents = counts.uevents;
  m.walk = Since(run.start, run.first_write);
  m.writes = Since(run.first_write, run.end);
  m.settled = m.writes;
  m.total = Since(run.start, run.end);
  return m;
}

// ---- The phases ----

struct Bench {
  const ColdplugBenchOptions& options;
  TriggerOptions trigger;
  UeventTap& tap;
};

absl::StatusOr<ColdplugMeasurement> TriggerOnly(Bench& bench) {
  HOTRING_RETURN_IF_ERROR(bench.tap.Drain());
  HOTRING_ASSIGN_OR_RETURN(const TimedRun run, TimedTrigger(bench.trigger, bench.options));
  HOTRING_ASSIGN_OR_RETURN(const UeventTap::Counts counts, bench.tap.Count());
  return FromRun(ColdplugPhase::kTriggerOnly, run, counts);
}

std::optional<uint64_t> ReadSeqnum(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  uint64_t value;
  if (!in || !std::getline(in, text) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) {
    return std::nullopt;
  }
  return value;
}

uint64_t Counter(const std::map<std::string, uint64_t>& status, const std::string& key) {
  auto it = status.find(key);
  return it == status.end() ? 0 : it->second;
}

uint64_t Pending(const std::map<std::string, uint64_t>& status) {
  return Counter(status, "held") + Counter(status, "queued") + Counter(status, "running");
}

std::string FormatStatus(const std::map<std::string, uint64_t>& status) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : status) {
    if (value != 0) parts.push_back(absl::StrCat(key, "=", value));
  }
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<ColdplugMeasurement> ThroughDaemon(Bench& bench, bool exec) {
  const ColdplugBenchOptions& options = bench.options;
  const std::string seqnum_file = absl::StrCat(options.sysfs_root, "/kernel/uevent_seqnum");
  BenchDaemon::Options daemon_options;
  daemon_options.binary = options.daemon_binary;
  daemon_options.args = {"--log-level", "warning", "--sysfs-root", options.sysfs_root,
                         "--seqnum-file", seqnum_file};
  // Read as late as possible: a SEQNUM used up between here and the first write is a gap.
  if (const std::optional<uint64_t> last = ReadSeqnum(seqnum_file); last.has_value()) {
    daemon_options.args.insert(daemon_options.args.end(),
                               {"--expect-seqnum", absl::StrCat(*last + 1)});
  }
  if (options.children_max > 0) {
    daemon_options.args.insert(daemon_options.args.end(),
                               {"--children-max", absl::StrCat(options.children_max)});
  }
  if (exec) daemon_options.args.insert(daemon_options.args.end(), {"--exec", options.program});
  daemon_options.args.insert(daemon_options.args.end(), options.daemon_args.begin(),
                             options.daemon_args.end());
  const int64_t children_before = ReapedChildrenCpuNs();
  HOTRING_ASSIGN_OR_RETURN(BenchDaemon daemon, BenchDaemon::Start(std::move(daemon_options)));
  // Before the drain: a foreign uevent in between could only make the wait below end one
  // event early, never wait for an event that is not coming.
  HOTRING_ASSIGN_OR_RETURN(const auto before, daemon.Status());
  HOTRING_RETURN_IF_ERROR(bench.tap.Drain());
  const int64_t cpu_before = ProcessCpuNs(daemon.pid());

  HOTRING_ASSIGN_OR_RETURN(const TimedRun run, TimedTrigger(bench.trigger, options));
  // Settle and read the status first, count our listener's datagrams afterwards: counting
  // takes a syscall per datagram, which must not be timed as the daemon's.
  std::optional<UeventTap::Counts> counts;
  uint64_t target = 0;
  uint64_t early_settles = 0;
  const MonoTime deadline = MonoNow() + options.settle_timeout;
  std::map<std::string, uint64_t> status;
  MonoTime done;
  for (;;) {
    const absl::Duration left = Since(MonoNow(), deadline);
    const absl::Status settled = left > absl::ZeroDuration()
                                     ? daemon.Settle(left)
                                     : absl::DeadlineExceededError("settle timed out");
    if (!settled.ok()) {
      return absl::Status(settled.code(),
                          absl::StrCat("daemon did not settle: ", settled.message(), "; wanted ",
                                       target, " netlink uevents; status: ",
                                       FormatStatus(status), "; log: ", daemon.Log()));
    }
    HOTRING_ASSIGN_OR_RETURN(status, daemon.Status());
    done = MonoNow();
    if (!counts.has_value()) {
      HOTRING_ASSIGN_OR_RETURN(counts, bench.tap.Count());
      target = Counter(before, "netlink_received") + counts->uevents;
    }
    // After an overrun the daemon re-synchronised from sysfs instead: settled is all we get.
    if ((Counter(status, "netlink_received") >= target ||
         Counter(status, "netlink_overruns") > 0) &&
        Pending(status) == 0) {
      break;
    }
    ++early_settles;
  }
  ColdplugMeasurement m =
      FromRun(exec ? ColdplugPhase::kDaemonExec : ColdplugPhase::kDaemonNoHandler, run, *counts);
  m.early_settles = early_settles;
  const int64_t cpu_after = ProcessCpuNs(daemon.pid());
  const int64_t rss = PeakRssKiB(daemon.pid());
  m.settled = Since(run.first_write, done);
  m.total = Since(run.start, done);
  if (cpu_before >= 0 && cpu_after >= cpu_before) {
    m.daemon_cpu = absl::Nanoseconds(cpu_after - cpu_before);
  }
  if (rss >= 0) m.daemon_peak_rss_kib = rss;
  m.handled = Counter(status, "handled");
  m.handler_failures = Counter(status, "failed") + Counter(status, "timed_out");
  m.daemon_status = std::move(status);
  // The handlers' CPU reaches us once the daemon that reaped them is reaped: all the daemon's
  // reaped children, less the daemon's own CPU since it started (read just before it stops;
  // what it spends on stopping is counted as the handlers').
  const pid_t pid = daemon.pid();
  const int64_t daemon_total = ProcessCpuNs(pid);
  HOTRING_RETURN_IF_ERROR(daemon.Stop());
  const int64_t children_after = ReapedChildrenCpuNs();
  if (exec && m.daemon_cpu.has_value() && daemon_total >= 0 && children_before >= 0 &&
      children_after >= children_before + daemon_total) {
    m.handlers_cpu = absl::Nanoseconds(children_after - children_before - daemon_total);
    m.cpu_with_handlers = *m.daemon_cpu + *m.handlers_cpu;
  }
  return m;
}

// The uevent's "KEY=VALUE" strings (after the "ACTION@DEVPATH" header) and its SUBSYSTEM.
void SplitUevent(absl::string_view payload, std::vector<std::string>& env,
                 std::string& subsystem) {
  env.clear();
  subsystem.clear();
  bool header = true;
  while (!payload.empty()) {
    const size_t nul = payload.find('\0');
    const absl::string_view item = payload.substr(0, nul);
    payload.remove_prefix(nul == absl::string_view::npos ? payload.size() : nul + 1);
    if (header) {
      header = false;
      continue;
    }
    if (item.find('=') == absl::string_view::npos) continue;
    if (absl::StartsWith(item, "SUBSYSTEM=")) subsystem = std::string(item.substr(10));
    env.emplace_back(item);
  }
  env.emplace_back("HOME=/");
  env.emplace_back("PATH=/sbin:/bin:/usr/sbin:/usr/bin");
}

// Runs `program SUBSYSTEM` with the uevent's environment and waits for it; true if it exited 0.
bool SpawnAndWait(const std::string& program, const std::string& subsystem,
                  std::vector<std::string>& env) {
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = program;
  std::string arg1 = subsystem;
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid;
  if (::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, envp.data()) != 0) {
    return false;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Phase 4: a second thread receives and runs the handler serially (the "one process" of the
// baseline); the trigger runs on this thread, as in every other phase.
absl::StatusOr<ColdplugMeasurement> SerialBaseline(Bench& bench) {
  const ColdplugBenchOptions& options = bench.options;
  HOTRING_ASSIGN_OR_RETURN(UeventTap receiver, UeventTap::Open(options.trust_userspace));
  // Both empty at the same moment, so both see the same datagrams from here on.
  HOTRING_RETURN_IF_ERROR(receiver.Drain());
  HOTRING_RETURN_IF_ERROR(bench.tap.Drain());

  constexpr int64_t kUnknown = -1;
  constexpr int64_t kGiveUp = -2;
  std::atomic<int64_t> target{kUnknown};
  struct Outcome {
    uint64_t received = 0;
    uint64_t handled = 0;
    uint64_t failures = 0;
    absl::Status status;
    MonoTime done;
    int64_t thread_cpu_ns = -1;
  } outcome;
  const int64_t children_before = ReapedChildrenCpuNs();
  std::thread receiver_thread([&] {
    const int64_t cpu_start = ThreadCpuNs();
    std::vector<std::string> env;
    std::string subsystem;
    const MonoTime deadline = MonoNow() + options.settle_timeout;
    for (;;) {
      const int64_t want = target.load();
      if (want == kGiveUp) break;
      if (want >= 0 && outcome.received >= static_cast<uint64_t>(want)) break;
      if (MonoNow() >= deadline) {
        outcome.status = absl::DeadlineExceededError(absl::StrCat(
            "serial baseline: ", outcome.received, " uevents after ",
            absl::FormatDuration(options.settle_timeout), ", wanted ", want));
        break;
      }
      absl::StatusOr<Received> r = receiver.Receive(absl::Milliseconds(20));
      if (!r.ok()) {
        outcome.status = r.status();
        break;
      }
      if (*r != Received::kUevent) continue;
      ++outcome.received;
      SplitUevent(receiver.payload(), env, subsystem);
      if (SpawnAndWait(options.program, subsystem, env)) {
        ++outcome.handled;
      } else {
        ++outcome.failures;
      }
    }
    outcome.done = MonoNow();
    const int64_t cpu_end = ThreadCpuNs();
    if (cpu_start >= 0 && cpu_end >= cpu_start) outcome.thread_cpu_ns = cpu_end - cpu_start;
  });

  absl::StatusOr<TimedRun> run = TimedTrigger(bench.trigger, options);
  absl::StatusOr<UeventTap::Counts> counts =
      run.ok() ? bench.tap.Count() : absl::StatusOr<UeventTap::Counts>(run.status());
  target = counts.ok() ? static_cast<int64_t>(counts->uevents) : kGiveUp;
  receiver_thread.join();
  HOTRING_RETURN_IF_ERROR(counts.status());
  HOTRING_RETURN_IF_ERROR(outcome.status);
  ColdplugMeasurement m = FromRun(ColdplugPhase::kSerialBaseline, *run, *counts);
  m.settled = Since(run->first_write, outcome.done);
  m.total = Since(run->start, outcome.done);
  m.handled = outcome.handled;
  m.handler_failures = outcome.failures;
  const int64_t children_after = ReapedChildrenCpuNs();
  if (children_before >= 0 && children_after >= children_before && outcome.thread_cpu_ns >= 0) {
    m.handlers_cpu = absl::Nanoseconds(children_after - children_before);
    m.cpu_with_handlers = *m.handlers_cpu + absl::Nanoseconds(outcome.thread_cpu_ns);
  }
  return m;
}

// ---- Report ----

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct PhaseSummary {
  std::string name;
  double triggered = 0;
  double failed = 0;
  double uevents = 0;
  double handled = 0;
  double walk_ms = 0;
  double writes_ms = 0;
  double settled_ms = 0;
  double total_ms = 0;
  std::optional<double> cpu_ms;
  std::optional<double> handlers_cpu_ms;
  std::optional<double> cpu_with_handlers_ms;
  std::optional<double> handler_lines;
  std::optional<double> rss_kib;
  std::vector<double> settled_runs_ms;
};

std::string HandlerName(const ColdplugBenchOptions& options) {
  return options.append_line.empty() ? options.program : std::string("append_line");
}

PhaseSummary Summarize(const ColdplugBenchReport& report, size_t index,
                       const ColdplugBenchOptions& options) {
  PhaseSummary s;
  const ColdplugPhase phase = kColdplugPhases[index];
  s.name = std::string(ColdplugPhaseName(phase));
  if (phase == ColdplugPhase::kDaemonExec || phase == ColdplugPhase::kSerialBaseline) {
    absl::StrAppend(&s.name, " (", HandlerName(options), ")");
  }
  std::vector<double> triggered, failed, uevents, handled, walk, writes, settled, total, cpu, rss;
  std::vector<double> handlers_cpu, cpu_with_handlers, handler_lines;
  for (const std::vector<ColdplugMeasurement>& run : report.runs) {
    const ColdplugMeasurement& m = run[index];
    triggered.push_back(static_cast<double>(m.triggered));
    failed.push_back(static_cast<double>(m.failed));
    uevents.push_back(static_cast<double>(m.uevents));
    handled.push_back(static_cast<double>(m.handled));
    walk.push_back(absl::ToDoubleMilliseconds(m.walk));
    writes.push_back(absl::ToDoubleMilliseconds(m.writes));
    settled.push_back(absl::ToDoubleMilliseconds(m.settled));
    total.push_back(absl::ToDoubleMilliseconds(m.total));
    if (m.daemon_cpu.has_value()) cpu.push_back(absl::ToDoubleMilliseconds(*m.daemon_cpu));
    if (m.handlers_cpu.has_value()) {
      handlers_cpu.push_back(absl::ToDoubleMilliseconds(*m.handlers_cpu));
    }
    if (m.cpu_with_handlers.has_value()) {
      cpu_with_handlers.push_back(absl::ToDoubleMilliseconds(*m.cpu_with_handlers));
    }
    if (m.handler_lines.has_value()) {
      handler_lines.push_back(static_cast<double>(*m.handler_lines));
    }
    if (m.daemon_peak_rss_kib.has_value()) {
      rss.push_back(static_cast<double>(*m.daemon_peak_rss_kib));
    }
  }
  s.triggered = Median(triggered);
  s.failed = Median(failed);
  s.uevents = Median(uevents);
  s.handled = Median(handled);
  s.walk_ms = Median(walk);
  s.writes_ms = Median(writes);
  s.settled_ms = Median(settled);
  s.total_ms = Median(total);
  if (!cpu.empty()) s.cpu_ms = Median(cpu);
  if (!handlers_cpu.empty()) s.handlers_cpu_ms = Median(handlers_cpu);
  if (!cpu_with_handlers.empty()) s.cpu_with_handlers_ms = Median(cpu_with_handlers);
  if (!handler_lines.empty()) s.handler_lines = Median(handler_lines);
  if (!rss.empty()) s.rss_kib = Median(rss);
  s.settled_runs_ms = settled;
  return s;
}

}  // namespace

absl::string_view ColdplugPhaseName(ColdplugPhase phase) {
  switch (phase) {
    case ColdplugPhase::kTriggerOnly:
      return "trigger only";
    case ColdplugPhase::kDaemonNoHandler:
      return "daemon, no handler";
    case ColdplugPhase::kDaemonExec:
      return "daemon, --exec";
    case ColdplugPhase::kSerialBaseline:
      return "serial baseline";
  }
  return "?";
}

absl::Status CheckColdplugAction(absl::string_view sysfs_root, absl::string_view action) {
  if (action == "change") return absl::OkStatus();
  struct statfs fs;
  const std::string root(sysfs_root);
  if (::statfs(root.c_str(), &fs) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bench coldplug: cannot tell whether ", root, " is a real sysfs (", std::strerror(errno),
        "); only --action change is allowed there"));
  }
  if (fs.f_type == SYSFS_MAGIC) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bench coldplug: ", root, " is a real sysfs: only --action change may be written there "
        "(", action, " would tell every listener that devices came or went)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ColdplugBenchOptions>> ParseColdplugBenchArgs(
    const std::vector<std::string>& args, std::FILE* help_out) {
  ColdplugBenchOptions options;
  FlagSet flags(
      "bench coldplug",
      "usage: hotring bench coldplug [options]   (as root)\n"
      "Walks sysfs and writes ACTION into every uevent file, four ways per run: trigger alone,\n"
      "through a daemon with no handler, through a daemon with --exec PROGRAM, and a serial\n"
      "baseline that spawns PROGRAM for each uevent it receives; prints medians and the ratios.");
  flags.String("--sysfs-root", "DIR", &options.sysfs_root, "tree to walk (default /sys)")
      .String("--action", "ACTION", &options.action,
              "written to the uevent files (default change; only change on a real sysfs)")
      .Value("--exec", "PROGRAM", "handler of the last two phases (default /bin/true)",
             [&options](absl::string_view v) {
               if (v.empty() || v[0] != '/') {
                 return absl::InvalidArgumentError("needs an absolute path");
               }
               options.program = std::string(v);
               return absl::OkStatus();
             })
      .Value("--append-line", "PATH",
             "instead, the cheapest handler: PATH is bazel-bin/hotplug/bench/append_line, copied "
             "to a directory of its own; one log line per run, counted",
             [&options](absl::string_view v) {
               if (v.empty()) return absl::InvalidArgumentError("needs a path");
               options.append_line = std::string(v);
               return absl::OkStatus();
             })
      .Int("--runs", "N", &options.runs, 1, 1000, "repetitions (default 5)")
      .Int("--children-max", "N", &options.children_max, 1, 4096, "the daemon's --children-max")
      .Seconds("--timeout", "S", &options.settle_timeout,
               "give up waiting for a daemon to settle (default 60)")
      .Bool("--json", &options.json, "the raw figures as JSON");
  HOTRING_ASSIGN_OR_RETURN(const FlagsParsed parsed, flags.Parse(args, help_out));
  if (parsed == FlagsParsed::kHelpShown) return std::nullopt;
  // trigger's own parser decides which actions exist.
  absl::StatusOr<std::optional<TriggerOptions>> trigger =
      ParseTriggerArgs({"--sysfs-root", options.sysfs_root, "--action", options.action});
  if (!trigger.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("bench coldplug: ", trigger.status().message()));
  }
  HOTRING_RETURN_IF_ERROR(CheckColdplugAction(options.sysfs_root, options.action));
  return options;
}

absl::StatusOr<ColdplugBenchReport> RunColdplugBench(const ColdplugBenchOptions& given) {
  HOTRING_RETURN_IF_ERROR(CheckColdplugAction(given.sysfs_root, given.action));
  ColdplugBenchOptions options = given;
  std::optional<AppendLineHandler> append_line;
  if (!options.append_line.empty()) {
    HOTRING_ASSIGN_OR_RETURN(append_line, AppendLineHandler::Copy(options.append_line));
    options.program = append_line->program();
  }
  HOTRING_ASSIGN_OR_RETURN(
      std::optional<TriggerOptions> parsed,
      ParseTriggerArgs({"--sysfs-root", options.sysfs_root, "--action", options.action}));
  TriggerOptions trigger = std::move(parsed).value();
  // One line per write goes to the probe: that is how the first write is timed.
  trigger.verbose = true;
  HOTRING_ASSIGN_OR_RETURN(UeventTap tap, UeventTap::Open(options.trust_userspace));
  Bench bench{options, std::move(trigger), tap};
  ColdplugBenchReport report;
  constexpr size_t kPhases = std::size(kColdplugPhases);
  for (int i = 0; i < options.runs; ++i) {
    std::vector<ColdplugMeasurement> run(kPhases);
    // Each run starts with another phase, so drift in the machine's load and caches does not
    // always hit the same one.
    for (size_t k = 0; k < kPhases; ++k) {
      const size_t index = (k + static_cast<size_t>(i)) % kPhases;
      const ColdplugPhase phase = kColdplugPhases[index];
      absl::StatusOr<ColdplugMeasurement> m;
      switch (phase) {
        case ColdplugPhase::kTriggerOnly:
          m = TriggerOnly(bench);
          break;
        case ColdplugPhase::kDaemonNoHandler:
          m = ThroughDaemon(bench, false);
          break;
        case ColdplugPhase::kDaemonExec:
          m = ThroughDaemon(bench, true);
          break;
        case ColdplugPhase::kSerialBaseline:
          m = SerialBaseline(bench);
          break;
      }
      if (!m.ok()) {
        return absl::Status(m.status().code(), absl::StrCat("run ", i + 1, ", ",
                                                            ColdplugPhaseName(phase), ": ",
                                                            m.status().message()));
      }
      if (append_line.has_value()) {
        HOTRING_ASSIGN_OR_RETURN(const uint64_t lines, append_line->TakeLines());
        if (phase == ColdplugPhase::kDaemonExec || phase == ColdplugPhase::kSerialBaseline) {
          m->handler_lines = lines;
        }
      }
      run[index] = std::move(*m);
    }
    report.runs.push_back(std::move(run));
  }
  return report;
}

std::string FormatColdplugReport(const ColdplugBenchReport& report,
                                 const ColdplugBenchOptions& options) {
  std::vector<PhaseSummary> phases;
  for (size_t i = 0; i < std::size(kColdplugPhases); ++i) {
    phases.push_back(Summarize(report, i, options));
  }
  const PhaseSummary& alone = phases[0];
  // The goal compares like with like: `trigger` + settle against `trigger` alone, both from
  // the start of the walk (the stricter figure leaves the walk out of both), as a ratio of the
  // medians. The best run's ratio (both phases of one run saw the same machine) shows what the
  // code can do when the machine's other load leaves it alone.
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const double settle_over_trigger = ratio(phases[1].total_ms, phases[0].total_ms);
  const double settle_over_writes = ratio(phases[1].settled_ms, phases[0].writes_ms);
  const double serial_over_exec = ratio(phases[3].settled_ms, phases[2].settled_ms);
  std::vector<double> settle_over_trigger_runs, settle_over_writes_runs, serial_over_exec_runs;
  for (const std::vector<ColdplugMeasurement>& run : report.runs) {
    auto ms = [](absl::Duration d) { return absl::ToDoubleMilliseconds(d); };
    settle_over_trigger_runs.push_back(ratio(ms(run[1].total), ms(run[0].total)));
    settle_over_writes_runs.push_back(ratio(ms(run[1].settled), ms(run[0].writes)));
    serial_over_exec_runs.push_back(ratio(ms(run[3].settled), ms(run[2].settled)));
  }
  auto best_low = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
  };
  auto best_high = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
  };
  const double best_settle_over_trigger = best_low(settle_over_trigger_runs);
  const double best_settle_over_writes = best_low(settle_over_writes_runs);
  const double best_serial_over_exec = best_high(serial_over_exec_runs);
  // The handler goals of issue 16, per run (both phases of one run saw the same machine):
  // the daemon's wall against the serial loop's, and the CPU of daemon plus handlers against
  // the loop's plus its handlers'.
  std::vector<double> exec_over_serial_runs, cpu_exec_over_serial_runs;
  for (const std::vector<ColdplugMeasurement>& run : report.runs) {
    auto ms = [](absl::Duration d) { return absl::ToDoubleMilliseconds(d); };
    exec_over_serial_runs.push_back(ratio(ms(run[2].settled), ms(run[3].settled)));
    if (run[2].cpu_with_handlers.has_value() && run[3].cpu_with_handlers.has_value()) {
      cpu_exec_over_serial_runs.push_back(
          ratio(ms(*run[2].cpu_with_handlers), ms(*run[3].cpu_with_handlers)));
    }
  }
  const double exec_over_serial = Median(exec_over_serial_runs);
  const double cpu_exec_over_serial = Median(cpu_exec_over_serial_runs);
  uint64_t gap_runs = 0;
  uint64_t early_settles = 0;
  uint64_t short_runs = 0;  // a handler count below the uevents it had to handle
  for (const std::vector<ColdplugMeasurement>& run : report.runs) {
    bool gap = false;
    for (const ColdplugMeasurement& m : run) {
      gap |= Counter(m.daemon_status, "missing_seqnums") > 0 ||
             Counter(m.daemon_status, "reorder_timeouts") > 0;
      early_settles += m.early_settles;
      if (m.phase != ColdplugPhase::kTriggerOnly && m.handled + m.handler_failures < m.uevents) {
        ++short_runs;
      }
    }
    gap_runs += gap ? 1 : 0;
  }

  if (options.json) {
    std::vector<std::string> parts;
    for (const PhaseSummary& p : phases) {
      std::string s = absl::StrFormat(
          "{\"name\": %s, \"triggered\": %.0f, \"failed\": %.0f, \"uevents\": %.0f, "
          "\"handled\": %.0f, \"walk_ms\": %.3f, \"writes_ms\": %.3f, \"settled_ms\": %.3f, "
          "\"total_ms\": %.3f",
          JsonQuote(p.name), p.triggered, p.failed, p.uevents, p.handled, p.walk_ms,
          p.writes_ms, p.settled_ms, p.total_ms);
      if (p.cpu_ms.has_value()) {
        absl::StrAppendFormat(&s, ", \"daemon_cpu_ms\": %.3f", *p.cpu_ms);
        if (p.uevents > 0) {
          absl::StrAppendFormat(&s, ", \"daemon_cpu_us_per_event\": %.2f",
                                *p.cpu_ms * 1000 / p.uevents);
        }
      }
      if (p.handlers_cpu_ms.has_value()) {
        absl::StrAppendFormat(&s, ", \"handlers_cpu_ms\": %.3f", *p.handlers_cpu_ms);
      }
      if (p.cpu_with_handlers_ms.has_value()) {
        absl::StrAppendFormat(&s, ", \"cpu_with_handlers_ms\": %.3f", *p.cpu_with_handlers_ms);
      }
      if (p.handler_lines.has_value()) {
        absl::StrAppendFormat(&s, ", \"handler_lines\": %.0f", *p.handler_lines);
      }
      if (p.rss_kib.has_value()) absl::StrAppendFormat(&s, ", \"peak_rss_kib\": %.0f", *p.rss_kib);
      std::vector<std::string> runs;
      for (const double v : p.settled_runs_ms) runs.push_back(absl::StrFormat("%.3f", v));
      absl::StrAppend(&s, ", \"settled_ms_runs\": [", absl::StrJoin(runs, ", "), "]}");
      parts.push_back(std::move(s));
    }
    return absl::StrFormat(
        "{\"sysfs_root\": %s, \"action\": %s, \"program\": %s, \"runs\": %d, \"phases\": [%s], "
        "\"settle_over_trigger\": %.3f, \"settle_over_writes\": %.3f, "
        "\"serial_over_exec\": %.3f, \"best_settle_over_trigger\": %.3f, "
        "\"best_settle_over_writes\": %.3f, \"best_serial_over_exec\": %.3f, "
        "\"exec_over_serial\": %.3f, \"cpu_exec_over_serial\": %.3f, "
        "\"gap_runs\": %d, \"early_settles\": %d, \"short_runs\": %d}\n",
        JsonQuote(options.sysfs_root), JsonQuote(options.action), JsonQuote(HandlerName(options)),
        report.runs.size(), absl::StrJoin(parts, ", "), settle_over_trigger, settle_over_writes,
        serial_over_exec, best_settle_over_trigger, best_settle_over_writes,
        best_serial_over_exec, exec_over_serial, cpu_exec_over_serial, gap_runs, early_settles,
        short_runs);
  }

  std::string out = absl::StrFormat(
      "coldplug: %s into %s, %.0f objects, %d runs (medians; times in ms from the start of "
      "the walk)\n",
      options.action, options.sysfs_root, alone.triggered, report.runs.size());
  absl::StrAppendFormat(&out, "%-30s %7s %7s %8s %8s %9s %9s %9s %11s %13s %9s\n", "",
                        "objects", "uevents", "handled", "walk", "writes", "settled", "total",
                        "daemon CPU", "+handlers CPU", "peak RSS");
  for (const PhaseSummary& p : phases) {
    absl::StrAppendFormat(
        &out, "%-30s %7.0f %7.0f %8s %8.2f %9.2f %9.2f %9.2f %11s %13s %9s\n", p.name,
        p.triggered, p.uevents, p.name == alone.name ? "-" : absl::StrFormat("%.0f", p.handled),
        p.walk_ms, p.writes_ms, p.settled_ms, p.total_ms,
        p.cpu_ms.has_value() ? absl::StrFormat("%.2f ms", *p.cpu_ms) : "-",
        p.cpu_with_handlers_ms.has_value() ? absl::StrFormat("%.2f ms", *p.cpu_with_handlers_ms)
                                           : "-",
        p.rss_kib.has_value() ? absl::StrFormat("%.0f KiB", *p.rss_kib) : "-");
  }
  absl::StrAppendFormat(&out,
                        "(+handlers CPU: the daemon's CPU plus its handlers'; for the serial "
                        "baseline its receiving thread's plus its handlers')\n");
  if (phases[2].handler_lines.has_value() && phases[3].handler_lines.has_value()) {
    absl::StrAppendFormat(&out, "append_line logged %.0f lines per daemon phase, %.0f per serial "
                          "phase (medians)\n",
                          *phases[2].handler_lines, *phases[3].handler_lines);
  }
  absl::StrAppendFormat(&out,
                        "(settled: from the first write until everything was handled; trigger "
                        "only: until the last write)\n");
  absl::StrAppendFormat(&out,
                        "no handler: trigger + settle / trigger alone = %.2fx (goal <= 1.2x; "
                        "best run %.2fx); without the walk: %.2fx (best %.2fx)\n",
                        settle_over_trigger, best_settle_over_trigger, settle_over_writes,
                        best_settle_over_writes);
  absl::StrAppendFormat(&out,
                        "with %s: serial baseline / daemon = %.2fx (goal > 1x: the daemon "
                        "ahead; best run %.2fx)\n",
                        HandlerName(options), serial_over_exec, best_serial_over_exec);
  absl::StrAppendFormat(&out,
                        "with %s, medians of the per-run ratios: daemon settled / serial settled "
                        "= %.2fx (goal <= 0.7x); CPU of daemon + handlers / serial loop + "
                        "handlers = %.2fx (goal <= 1.1x)\n",
                        HandlerName(options), exec_over_serial, cpu_exec_over_serial);
  absl::StrAppendFormat(&out,
                        "runs held up by a SEQNUM gap: %d of %d; settle answered before every "
                        "uevent was read: %d times; phases that handled fewer than they got: %d\n",
                        gap_runs, report.runs.size(), early_settles, short_runs);
  return out;
}

int BenchColdplugCommand(const std::vector<std::string>& args) {
  absl::StatusOr<std::optional<ColdplugBenchOptions>> parsed = ParseColdplugBenchArgs(args);
  if (!parsed.ok()) {
    // The parser's messages already name the command.
    std::fprintf(stderr, "hotring %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  if (!parsed->has_value()) return 0;  // --help
  const ColdplugBenchOptions* options = &**parsed;
  absl::StatusOr<ColdplugBenchReport> report = RunColdplugBench(*options);
  if (!report.ok()) {
    std::fprintf(stderr, "hotring bench coldplug: %s\n",
                 std::string(report.status().message()).c_str());
    return 1;
  }
  if (!report->runs.empty()) {
    const ColdplugMeasurement& first = report->runs[0][0];
    if (first.failed > 0 || !first.trigger_errors.empty()) {
      std::fprintf(stderr, "hotring bench coldplug: trigger: %zu failed; it said:\n%s",
                   first.failed, first.trigger_errors.c_str());
    }
  }
  std::fputs(FormatColdplugReport(*report, *options).c_str(), stdout);
  return 0;
}

}  // namespace hotring::hotplug

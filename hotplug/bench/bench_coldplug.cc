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

#include "hotplug/bench/bench_rules.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/json.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/devroot/user_db.h"
#include "hotplug/rules/device.h"
#include "hotplug/rules/engine.h"
#include "hotplug/rules/mdev_scan.h"
#include "hotplug/rules/rule_set.h"

namespace hotring::hotplug::bench {
namespace {

absl::Status CopyFile(const std::string& from, const std::string& to) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return ErrnoStatus(absl::StrCat("open(", from, ")"));
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755));
  if (!out.valid()) return ErrnoStatus(absl::StrCat("open(", to, ")"));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.get(), buf, sizeof(buf));
    if (n < 0) return ErrnoStatus(absl::StrCat("read(", from, ")"));
    if (n == 0) break;
    if (::write(out.get(), buf, static_cast<size_t>(n)) != n) {
      return ErrnoStatus(absl::StrCat("write(", to, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Duration FromTimeval(const struct timeval& tv) {
  return absl::Seconds(tv.tv_sec) + absl::Microseconds(tv.tv_usec);
}

// `chroot ROOT /PROGRAM -s` with an environment of PATH only (as busybox's suite runs it),
// stdout and stderr into a memfd.
absl::StatusOr<MdevRun> TimeMdev(const std::string& root, const std::string& program) {
  UniqueFd output(::memfd_create("mdev-output", MFD_CLOEXEC));
  if (!output.valid()) return ErrnoStatus("memfd_create");
  const absl::Time start = absl::Now();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) {
    ::dup2(output.get(), 1);
    ::dup2(output.get(), 2);
    if (::chroot(root.c_str()) != 0 || ::chdir("/") != 0) ::_exit(126);
    char name[] = "mdev";
    char scan[] = "-s";
    char* argv[] = {name, scan, nullptr};
    char path[] = "PATH=/sbin:/bin";
    char* envp[] = {path, nullptr};
    ::execve(program.c_str(), argv, envp);
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage = {};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) return ErrnoStatus("wait4");
  }
  MdevRun run;
  run.wall = absl::Now() - start;
  run.cpu = FromTimeval(usage.ru_utime) + FromTimeval(usage.ru_stime);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  char head[512];
  const ssize_t n = ::pread(output.get(), head, sizeof(head), 0);
  if (n > 0) {
    absl::string_view text(head, static_cast<size_t>(n));
    run.stderr_head = std::string(text.substr(0, text.find('\n')));
  }
  return run;
}

// This thread's CPU time: the matching figure must not count time the scheduler gave others
// (the bench runs on shared machines).
absl::Duration ThreadCpu() {
  struct timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return DurationFromTimespec(ts);
}

// What one scanned device needs to outlive the scan: the matching figure replays them.
struct StoredDevice {
  std::string devpath;
  std::string name;
  std::string subsystem;
  std::optional<rules::DevNumber> number;
  std::vector<std::pair<std::string, std::string>> env;
};

absl::Status MeasureMatching(const std::string& root, int rounds, RulesBenchReport& report) {
  HOTRING_ASSIGN_OR_RETURN(devroot::UserDb users, devroot::UserDb::Load(root));
  HOTRING_ASSIGN_OR_RETURN(rules::RuleSet rule_set,
                           rules::LoadRules({.file = absl::StrCat(root, "/etc/mdev.conf")}, users));
  report.rules = rule_set.rules().size();
  std::vector<StoredDevice> devices;
  std::string subsystem;
  const std::string sys = absl::StrCat(root, "/sys");
  HOTRING_RETURN_IF_ERROR(rules::ScanSysDev(absl::StrCat(sys, "/dev"), [&](const rules::ScannedDevice& d) {
    if (d.subsystem) subsystem = std::string(*d.subsystem);
    StoredDevice stored;
    stored.devpath = std::string(d.path.substr(sys.size()));
    stored.name = std::string(d.name);
    stored.subsystem = subsystem;
    stored.number = rules::ParseDevNumber(d.dev);
    stored.env = {{"ACTION", "add"}, {"SUBSYSTEM", subsystem}, {"PATH", "/sbin:/bin"}};
    devices.push_back(std::move(stored));
  }));
  report.scanned = devices.size();
  std::vector<rules::Device> views;
  views.reserve(devices.size());
  for (const StoredDevice& s : devices) {
    rules::Device d;
    d.action = rules::DeviceAction::kAdd;
    d.devpath = s.devpath;
    d.subsystem = s.subsystem;
    d.name = s.name;
    d.number = s.number;
    d.env = s.env;
    views.push_back(d);
  }
  if (views.empty()) return absl::OkStatus();
  uint64_t matched = 0;
  const absl::Duration match_start = ThreadCpu();
  for (int r = 0; r < rounds; ++r) {
    for (const rules::Device& d : views) {
      rule_set.Match(d, [&](const rules::Rule&, absl::string_view, const rules::MatchGroups&) {
        ++matched;
      });
    }
  }
  const absl::Duration match_time = ThreadCpu() - match_start;
  uint64_t planned = 0;
  const absl::Duration plan_start = ThreadCpu();
  for (int r = 0; r < rounds; ++r) {
    for (const rules::Device& d : views) {
      const rules::EventPlan plan = rules::PlanEvent(rule_set, d);
      planned += plan.nodes.size();
    }
  }
  const absl::Duration plan_time = ThreadCpu() - plan_start;
  const double events = static_cast<double>(views.size()) * rounds;
  report.match_ns_per_event = absl::ToDoubleNanoseconds(match_time) / events;
  report.plan_ns_per_event = absl::ToDoubleNanoseconds(plan_time) / events;
  if (matched == 0 || planned == 0) return absl::InternalError("no rule matched any device");
  return absl::OkStatus();
}

template <typename F>
double Median(const std::vector<MdevRun>& runs, F field) {
  std::vector<double> values;
  for (const MdevRun& r : runs) values.push_back(field(r));
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double WallMs(const MdevRun& r) { return absl::ToDoubleMilliseconds(r.wall); }
double CpuMs(const MdevRun& r) { return absl::ToDoubleMilliseconds(r.cpu); }

bool AllIdentical(const RulesBenchReport& report) {
  for (const auto* runs : {&report.busybox, &report.hotring}) {
    for (const MdevRun& r : *runs) {
      if (!r.diffs.empty() || r.exit_code != 0) return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::optional<RulesBenchOptions>> ParseRulesBenchArgs(
    const std::vector<std::string>& args, std::FILE* help_out) {
  RulesBenchOptions options;
  FlagSet flags(
      "bench rules",
      "usage: hotring bench rules [--devices N] [--runs N] [--busybox PATH] [--hotring PATH]\n"
      "                           [--work-dir DIR] [--match-rounds N] [--keep] [--json]\n"
      "  hotring as `mdev -s` against busybox `mdev -s` on one generated board (a sysfs of N\n"
      "  devices, default 10000: block, tty, input, net; a 40-line mdev.conf), each in a chroot of\n"
      "  the board, interleaved over --runs runs (default 5), /dev compared after every run;\n"
      "  then rule matching alone over every device (--match-rounds passes, default 20).\n"
      "  Needs root (chroot, mknod, chown).");
  flags.Int("--devices", "N", &options.devices, 1, 1'000'000, "devices of the board (default 10000)")
      .Int("--runs", "N", &options.runs, 1, 1000, "runs of each mdev -s (default 5)")
      .Int("--match-rounds", "N", &options.match_rounds, 1, 100000,
           "passes of rule matching over every device (default 20)")
      .String("--busybox", "PATH", &options.busybox, "a static busybox (default /bin/busybox)")
      .String("--hotring", "PATH", &options.hotring, "a static hotring (default: the one beside hotring-bench)")
      .String("--work-dir", "DIR", &options.work_dir,
              "where the board is generated (default /dev/shm)")
      .Bool("--keep", &options.keep, "leave the board behind (its path is printed)")
      .Bool("--json", &options.json, "the figures as JSON");
  HOTRING_ASSIGN_OR_RETURN(const FlagsParsed parsed, flags.Parse(args, help_out));
  if (parsed == FlagsParsed::kHelpShown) return std::nullopt;
  return options;
}

absl::StatusOr<RulesBenchReport> RunRulesBench(const RulesBenchOptions& options) {
  if (::geteuid() != 0) return absl::FailedPreconditionError("needs root (chroot, mknod, chown)");
  std::string tmpl = absl::StrCat(options.work_dir, "/hotring-bench-rules.XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) return ErrnoStatus(absl::StrCat("mkdtemp(", tmpl, ")"));
  const std::string root = tmpl;
  struct Cleanup {
    const std::string& root;
    bool keep;
    ~Cleanup() {
      if (!keep) {
        (void)ClearDirectory(root);
        ::rmdir(root.c_str());
      }
    }
  } cleanup{root, options.keep};

  RulesBenchReport report;
  report.board = root;
  HOTRING_ASSIGN_OR_RETURN(report.counts, GenerateBoardTree(root, options.devices));
  for (const char* dir : {"/bin", "/bb", "/hr"}) {
    if (::mkdir(absl::StrCat(root, dir).c_str(), 0755) != 0) return ErrnoStatus("mkdir");
  }
  // Both as `mdev` (busybox picks its applet by that name), and a shell for commands.
  HOTRING_RETURN_IF_ERROR(CopyFile(options.busybox, absl::StrCat(root, "/bb/mdev")));
  HOTRING_RETURN_IF_ERROR(CopyFile(options.hotring, absl::StrCat(root, "/hr/mdev")));
  HOTRING_RETURN_IF_ERROR(CopyFile(options.busybox, absl::StrCat(root, "/bin/sh")));
  const std::string dev = absl::StrCat(root, "/dev");

  // An untimed run of each first: page cache and dentries warm for both.
  std::optional<DevSnapshot> reference;
  for (const char* program : {"/bb/mdev", "/hr/mdev"}) {
    HOTRING_RETURN_IF_ERROR(ClearDirectory(dev));
    HOTRING_ASSIGN_OR_RETURN(MdevRun warm, TimeMdev(root, program));
    if (warm.exit_code != 0) {
      return absl::InternalError(absl::StrCat(program, " -s exited with ", warm.exit_code, ": ",
                                              warm.stderr_head));
    }
    if (!reference) {
      HOTRING_ASSIGN_OR_RETURN(DevSnapshot snap, SnapshotDev(dev));
      reference = std::move(snap);
    }
  }
  for (int run = 0; run < options.runs; ++run) {
    const bool busybox_first = run % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool busybox = (k == 0) == busybox_first;
      HOTRING_RETURN_IF_ERROR(ClearDirectory(dev));
      HOTRING_ASSIGN_OR_RETURN(MdevRun timed, TimeMdev(root, busybox ? "/bb/mdev" : "/hr/mdev"));
      HOTRING_ASSIGN_OR_RETURN(DevSnapshot snap, SnapshotDev(dev));
      timed.dev_entries = snap.size();
      timed.diffs = DiffSnapshots(*reference, snap);
      (busybox ? report.busybox : report.hotring).push_back(std::move(timed));
    }
  }
  HOTRING_RETURN_IF_ERROR(MeasureMatching(root, options.match_rounds, report));
  return report;
}

std::string FormatRulesReport(const RulesBenchReport& report, bool json) {
  const double bb_wall = Median(report.busybox, WallMs);
  const double hr_wall = Median(report.hotring, WallMs);
  const double bb_cpu = Median(report.busybox, CpuMs);
  const double hr_cpu = Median(report.hotring, CpuMs);
  const bool identical = AllIdentical(report);
  const size_t entries = report.busybox.empty() ? 0 : report.busybox[0].dev_entries;
  if (json) {
    JsonObject o;
    o.Uint("devices", report.counts.total())
        .Uint("nodes", report.counts.nodes())
        .Uint("block", report.counts.block)
        .Uint("tty", report.counts.tty)
        .Uint("input", report.counts.input)
        .Uint("net", report.counts.net)
        .Uint("misc", report.counts.misc)
        .Uint("rules", report.rules)
        .Uint("runs", report.hotring.size())
        .Uint("dev_entries", entries)
        .Double("busybox_wall_ms", bb_wall)
        .Double("hotring_wall_ms", hr_wall)
        .Double("wall_ratio", bb_wall > 0 ? hr_wall / bb_wall : 0)
        .Double("busybox_cpu_ms", bb_cpu)
        .Double("hotring_cpu_ms", hr_cpu)
        .Double("cpu_ratio", bb_cpu > 0 ? hr_cpu / bb_cpu : 0)
        .Double("match_ns_per_event", report.match_ns_per_event)
        .Double("plan_ns_per_event", report.plan_ns_per_event)
        .Bool("identical", identical);
    return o.Build() + "\n";
  }
  std::string out = absl::StrFormat(
      "board: %zu devices (%zu block, %zu tty, %zu input, %zu misc, %zu net without a node), "
      "%zu rules\n",
      report.counts.total(), report.counts.block, report.counts.tty, report.counts.input,
      report.counts.misc, report.counts.net, report.rules);
  absl::StrAppendFormat(&out, "mdev -s, median of %zu interleaved runs (chroot, /dev emptied before each):\n",
                        report.hotring.size());
  absl::StrAppendFormat(&out, "  %-8s %10s %10s\n", "", "wall ms", "cpu ms");
  absl::StrAppendFormat(&out, "  %-8s %10.1f %10.1f\n", "busybox", bb_wall, bb_cpu);
  absl::StrAppendFormat(&out, "  %-8s %10.1f %10.1f\n", "hotring", hr_wall, hr_cpu);
  absl::StrAppendFormat(&out, "  %-8s %10.2fx %9.2fx\n", "ratio", bb_wall > 0 ? hr_wall / bb_wall : 0,
                        bb_cpu > 0 ? hr_cpu / bb_cpu : 0);
  absl::StrAppendFormat(&out, "/dev: %zu entries; %s\n", entries,
                        identical ? "identical in every run" : "DIFFERENT (see below)");
  for (const auto* runs : {&report.busybox, &report.hotring}) {
    for (const MdevRun& r : *runs) {
      const char* who = runs == &report.busybox ? "busybox" : "hotring";
      if (r.exit_code != 0) absl::StrAppendFormat(&out, "  %s exited %d: %s\n", who, r.exit_code, r.stderr_head);
      for (const std::string& d : r.diffs) absl::StrAppendFormat(&out, "  %s: %s\n", who, d);
    }
  }
  absl::StrAppendFormat(&out, "rule matching alone over %zu devices (CPU time): %.0f ns/event (Match), %.0f ns/event (PlanEvent)\n",
                        report.scanned, report.match_ns_per_event, report.plan_ns_per_event);
  return out;
}

int BenchRulesCommand(const std::vector<std::string>& args) {
  absl::StatusOr<std::optional<RulesBenchOptions>> parsed = ParseRulesBenchArgs(args);
  if (!parsed.ok()) return ReportError("bench rules", parsed.status());
  if (!parsed->has_value()) return 0;  // --help
  const RulesBenchOptions* options = &**parsed;
  absl::StatusOr<RulesBenchReport> report = RunRulesBench(*options);
  if (!report.ok()) {
    std::fprintf(stderr, "hotring bench rules: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  std::fputs(FormatRulesReport(*report, options->json).c_str(), stdout);
  if (options->keep) std::fprintf(stderr, "hotring bench rules: board kept in %s\n", report->board.c_str());
  return AllIdentical(*report) ? 0 : 1;
}

}  // namespace hotring::hotplug::bench

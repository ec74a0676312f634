#include "hotplug/bench/bench_coldplug.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/json.h"

// `bench coldplug`'s report: each phase's medians over the runs, the goal ratios, the caveats
// (gaps, early settles, short runs), as text or as one JSON object.
namespace hotring::hotplug {
namespace {

uint64_t Counter(const std::map<std::string, uint64_t>& status, const std::string& key) {
  auto it = status.find(key);
  return it == status.end() ? 0 : it->second;
}

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

// The goal ratios and the caveats counted over the runs.
struct Ratios {
  double settle_over_trigger = 0;
  double settle_over_writes = 0;
  double serial_over_exec = 0;
  double best_settle_over_trigger = 0;
  double best_settle_over_writes = 0;
  double best_serial_over_exec = 0;
  double exec_over_serial = 0;
  double cpu_exec_over_serial = 0;
  uint64_t gap_runs = 0;
  uint64_t early_settles = 0;
  uint64_t short_runs = 0;  // a handler count below the uevents it had to handle
};

Ratios ComputeRatios(const ColdplugBenchReport& report,
                    const std::vector<PhaseSummary>& phases) {
  // The goal compares like with like: `trigger` + settle against `trigger` alone, both from
  // the start of the walk (the stricter figure leaves the walk out of both), as a ratio of the
  // medians. The best run's ratio (both phases of one run saw the same machine) shows what the
  // code can do when the machine's other load leaves it alone.
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  Ratios r;
  r.settle_over_trigger = ratio(phases[1].total_ms, phases[0].total_ms);
  r.settle_over_writes = ratio(phases[1].settled_ms, phases[0].writes_ms);
  r.serial_over_exec = ratio(phases[3].settled_ms, phases[2].settled_ms);
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
  r.best_settle_over_trigger = best_low(settle_over_trigger_runs);
  r.best_settle_over_writes = best_low(settle_over_writes_runs);
  r.best_serial_over_exec = best_high(serial_over_exec_runs);
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
  r.exec_over_serial = Median(exec_over_serial_runs);
  r.cpu_exec_over_serial = Median(cpu_exec_over_serial_runs);
  for (const std::vector<ColdplugMeasurement>& run : report.runs) {
    bool gap = false;
    for (const ColdplugMeasurement& m : run) {
      gap |= Counter(m.daemon_status, "missing_seqnums") > 0 ||
             Counter(m.daemon_status, "reorder_timeouts") > 0;
      r.early_settles += m.early_settles;
      if (m.phase != ColdplugPhase::kTriggerOnly && m.handled + m.handler_failures < m.uevents) {
        ++r.short_runs;
      }
    }
    r.gap_runs += gap ? 1 : 0;
  }
  return r;
}

std::string FormatJson(const ColdplugBenchReport& report, const ColdplugBenchOptions& options,
                       const std::vector<PhaseSummary>& phases, const Ratios& r) {
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
      report.runs.size(), absl::StrJoin(parts, ", "), r.settle_over_trigger, r.settle_over_writes,
      r.serial_over_exec, r.best_settle_over_trigger, r.best_settle_over_writes,
      r.best_serial_over_exec, r.exec_over_serial, r.cpu_exec_over_serial, r.gap_runs,
      r.early_settles, r.short_runs);
}

std::string FormatText(const ColdplugBenchReport& report, const ColdplugBenchOptions& options,
                       const std::vector<PhaseSummary>& phases, const Ratios& r) {
  const PhaseSummary& alone = phases[0];
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
                        r.settle_over_trigger, r.best_settle_over_trigger, r.settle_over_writes,
                        r.best_settle_over_writes);
  absl::StrAppendFormat(&out,
                        "with %s: serial baseline / daemon = %.2fx (goal > 1x: the daemon "
                        "ahead; best run %.2fx)\n",
                        HandlerName(options), r.serial_over_exec, r.best_serial_over_exec);
  absl::StrAppendFormat(&out,
                        "with %s, medians of the per-run ratios: daemon settled / serial settled "
                        "= %.2fx (goal <= 0.7x); CPU of daemon + handlers / serial loop + "
                        "handlers = %.2fx (goal <= 1.1x)\n",
                        HandlerName(options), r.exec_over_serial, r.cpu_exec_over_serial);
  absl::StrAppendFormat(&out,
                        "runs held up by a SEQNUM gap: %d of %d; settle answered before every "
                        "uevent was read: %d times; phases that handled fewer than they got: %d\n",
                        r.gap_runs, report.runs.size(), r.early_settles, r.short_runs);
  return out;
}

}  // namespace

std::string FormatColdplugReport(const ColdplugBenchReport& report,
                                 const ColdplugBenchOptions& options) {
  std::vector<PhaseSummary> phases;
  for (size_t i = 0; i < std::size(kColdplugPhases); ++i) {
    phases.push_back(Summarize(report, i, options));
  }
  const Ratios ratios = ComputeRatios(report, phases);
  return options.json ? FormatJson(report, options, phases, ratios)
                      : FormatText(report, options, phases, ratios);
}

}  // namespace hotring::hotplug

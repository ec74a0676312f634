#include "hotplug/report/svg.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hotplug/report/report.h"

namespace hotring::hotplug::report {
namespace {

constexpr double kRowHeight = 16;
constexpr double kLabelWidth = 420;  // left column: SEQNUM ACTION DEVPATH
constexpr double kTop = 64;          // title, legend and the axis labels
constexpr double kMargin = 10;

// A step of 1, 2 or 5 x 10^k microseconds giving at most ~12 ticks.
int64_t TickStep(int64_t span_us) {
  int64_t step = 1;
  for (;;) {
    for (const int64_t m : {1, 2, 5}) {
      if (span_us / (step * m) <= 12) return step * m;
    }
    step *= 10;
  }
}

std::string TickLabel(int64_t us) {
  if (us == 0) return "0";
  if (us % 1000000 == 0) return absl::StrCat(us / 1000000, " s");
  if (us >= 1000000 && us % 100000 == 0) return absl::StrFormat("%.1f s", static_cast<double>(us) / 1e6);
  if (us % 1000 == 0) return absl::StrCat(us / 1000, " ms");
  return absl::StrFormat("%.3f ms", static_cast<double>(us) / 1000.0);
}

// The tail of a long DEVPATH: the end names the device.
std::string Shorten(absl::string_view devpath, size_t max) {
  if (devpath.size() <= max) return std::string(devpath);
  return absl::StrCat("...", devpath.substr(devpath.size() - (max - 3)));
}

// A duration for the title: "3.69 s", "12.3 ms".
std::string DurationLabel(int64_t us) {
  if (us >= 1000000) return absl::StrFormat("%.2f s", static_cast<double>(us) / 1e6);
  return absl::StrFormat("%.1f ms", static_cast<double>(us) / 1e3);
}

}  // namespace

std::string XmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0.
        out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
    }
  }
  return out;
}

namespace {

// One row of the chart: an event with a known start, or a module load.
struct Row {
  const EventSpan* event = nullptr;
  const ModuleLoad* module = nullptr;
  int64_t begin = 0;
};

// Events with a known start, in order of that start; then module loads.
std::vector<Row> ChartRows(const Timeline& timeline) {
  std::vector<Row> rows;
  for (const EventSpan& e : timeline.events) {
    const std::optional<int64_t> begin = e.received_us ? e.received_us : e.released_us;
    if (begin.has_value()) rows.push_back(Row{&e, nullptr, *begin});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.begin < b.begin; });
  std::vector<Row> module_rows;
  for (const ModuleLoad& m : timeline.modules) {
    module_rows.push_back(Row{nullptr, &m, m.end_us - m.took_us});
  }
  std::stable_sort(module_rows.begin(), module_rows.end(),
                   [](const Row& a, const Row& b) { return a.begin < b.begin; });
  rows.insert(rows.end(), module_rows.begin(), module_rows.end());
  return rows;
}

// The chart being drawn: the span of time it shows, [t0, t1] in microseconds, pixels per
// microsecond, and the SVG text so far.
struct Chart {
  int64_t t0;
  int64_t t1;
  double scale;
  std::string svg;

  double X(int64_t t) const { return kLabelWidth + static_cast<double>(t - t0) * scale; }

  void Legend() {
    double lx = kMargin;
    for (const auto& [cls, name] : std::vector<std::pair<const char*, const char*>>{
             {"held", "held (SEQNUM gap)"}, {"queued", "queued behind a related event"},
             {"slot", "waiting for a handler slot"},
             {"run", "handler"}, {"failed", "failed"}, {"timed_out", "timed out"},
             {"open", "unfinished"}, {"module", "module load"}}) {
      absl::StrAppendFormat(&svg,
                            "<rect class=\"%s legend\" x=\"%.0f\" y=\"28\" width=\"10\" height=\"10\"/>"
                            "<text x=\"%.0f\" y=\"37\">%s</text>\n",
                            cls, lx, lx + 14, name);
      lx += 14 + 7.0 * static_cast<double>(absl::string_view(name).size()) + 16;
    }
  }

  // A vertical line and a label per tick, down to `bottom`.
  void Axis(double bottom) {
    const int64_t step = TickStep(t1 - t0);
    for (int64_t t = 0; t0 + t <= t1; t += step) {
      absl::StrAppendFormat(&svg,
                            "<line class=\"tick\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>"
                            "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
                            X(t0 + t), kTop - 6, X(t0 + t), bottom, X(t0 + t), kTop - 10,
                            TickLabel(t));
    }
  }

  // A segment of the row at `y`, with its tooltip.
  void Bar(const char* cls, int64_t from, int64_t to, double y, const std::string& tip) {
    const double w = std::max(1.0, (static_cast<double>(to - from)) * scale);
    absl::StrAppendFormat(&svg,
                          "<rect class=\"%s\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\">"
                          "<title>%s</title></rect>\n",
                          cls, X(from), y + 2, w, kRowHeight - 4, tip);
  }

  // An event's label, then its segments: held, queued, handled (or still open at t1).
  void EventRow(const Timeline& timeline, const EventSpan& e, int64_t begin, double y) {
    const std::string name = XmlEscape(absl::StrCat(
        e.seqnum.has_value() ? absl::StrCat(*e.seqnum) : "-", " ", e.action, " ",
        Shorten(e.devpath, 56)));
    absl::StrAppendFormat(&svg, "<text class=\"label\" x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                          kMargin, y + kRowHeight - 4, name);
    const std::string tip_base = XmlEscape(absl::StrCat(
        e.seqnum.has_value() ? absl::StrCat("SEQNUM ", *e.seqnum, " ") : "", e.action, " ",
        e.devpath, e.subsystem.empty() ? "" : absl::StrCat(" (", e.subsystem, ")")));
    int64_t at = begin;
    if (e.received_us && e.released_us && *e.released_us > *e.received_us) {
      Bar("held", *e.received_us, *e.released_us, y,
          absl::StrCat(tip_base, ": held ", TickLabel(*e.released_us - *e.received_us)));
    }
    if (e.released_us) at = *e.released_us;
    if (e.released_us && e.started_us && *e.started_us > *e.released_us) {
      const EventSpan* blocker = FindBlocker(timeline, e);
      Bar(blocker != nullptr ? "queued" : "slot", *e.released_us, *e.started_us, y,
          absl::StrCat(tip_base, ": queued ", TickLabel(*e.started_us - *e.released_us),
                       blocker != nullptr
                           ? absl::StrCat(" behind ", XmlEscape(blocker->devpath))
                           : std::string(" for a handler slot")));
    }
    if (e.started_us) at = *e.started_us;
    if (e.started_us && e.handled_us) {
      const char* cls = e.result == "failed"      ? "failed"
                        : e.result == "timed_out" ? "timed_out"
                                                  : "run";
      Bar(cls, *e.started_us, *e.handled_us, y,
          absl::StrCat(tip_base, ": ", e.result, " in ",
                       TickLabel(*e.handled_us - *e.started_us)));
    } else if (!e.handled_us) {
      Bar("open", at, t1, y, absl::StrCat(tip_base, ": unfinished"));
    }
  }

  void ModuleRow(const ModuleLoad& m, double y) {
    absl::StrAppendFormat(&svg, "<text class=\"label\" x=\"%.0f\" y=\"%.0f\">module %s</text>\n",
                          kMargin, y + kRowHeight - 4, XmlEscape(m.module));
    Bar("module", m.end_us - m.took_us, m.end_us, y,
        absl::StrCat(XmlEscape(m.module), m.ok ? "" : " FAILED", ": ", TickLabel(m.took_us)));
  }
};

}  // namespace

std::string RenderSvg(const Timeline& timeline, const SvgOptions& options) {
  std::vector<Row> rows = ChartRows(timeline);
  const size_t total_rows = rows.size();
  if (rows.size() > options.max_rows) rows.resize(options.max_rows);

  int64_t t0 = rows.empty() ? 0 : rows.front().begin;
  int64_t t1 = t0 + 1;
  for (const Row& r : rows) {
    t0 = std::min(t0, r.begin);
    if (r.event != nullptr) {
      for (const std::optional<int64_t>& t :
           {r.event->released_us, r.event->started_us, r.event->handled_us}) {
        if (t.has_value()) t1 = std::max(t1, *t);
      }
    } else {
      t1 = std::max(t1, r.module->end_us);
    }
  }
  const double width = kLabelWidth + options.chart_width + kMargin;
  const double height = kTop + kRowHeight * static_cast<double>(rows.size()) + 2 * kMargin;

  Chart chart{t0, t1, options.chart_width / static_cast<double>(t1 - t0), ""};
  chart.svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<style>.held{fill:#b0b0b0}.queued{fill:#f0c070}.run{fill:#4a9a4a}"
      ".slot{fill:#f5e0b0}.failed{fill:#c83c3c}.timed_out{fill:#e07020}.open{fill:#7aa0d0}.module{fill:#8a5cc0}"
      ".tick{stroke:#dddddd}.label{fill:#222222}</style>\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height, width, height);
  std::string title = XmlEscape(options.title);
  absl::StrAppendFormat(&title, ": %d events, %d module loads, %s", timeline.events.size(),
                        timeline.modules.size(), DurationLabel(t1 - t0));
  if (total_rows > rows.size()) absl::StrAppendFormat(&title, " (first %d rows)", rows.size());
  absl::StrAppendFormat(&chart.svg,
                        "<text class=\"title\" x=\"%.0f\" y=\"18\" font-size=\"14\">%s</text>\n",
                        kMargin, title);
  chart.Legend();
  chart.Axis(height - kMargin);
  double y = kTop;
  for (const Row& r : rows) {
    if (r.event != nullptr) {
      chart.EventRow(timeline, *r.event, r.begin, y);
    } else {
      chart.ModuleRow(*r.module, y);
    }
    y += kRowHeight;
  }
  chart.svg += "</svg>\n";
  return std::move(chart.svg);
}

}  // namespace hotring::hotplug::report

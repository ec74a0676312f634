// `hotring report`: where boot time went, from a running daemon's kept timeline or from a file
// written with `daemon --record-timeline FILE`; text on stdout, a picture with --svg FILE.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/flags.h"
#include "core/status.h"
#include "hotplug/cli/commands.h"
#include "hotplug/client/client.h"
#include "hotplug/report/report.h"
#include "hotplug/report/svg.h"
#include "hotplug/report/timeline_parse.h"
#include "hotplug/timeline.h"
#include "hotplug/wire.h"

namespace hotring::hotplug {
int ReportCommand(const std::vector<std::string>& args) {
  std::string socket(kDefaultSocket);
  std::string from_file;
  std::string svg_file;
  int64_t top = 10;
  FlagSet flags("report",
                "usage: hotring report [--from FILE] [--socket PATH|@NAME] [--svg FILE] [--top N]\n"
                "  the slowest events, handlers and module loads, the time each device waited for "
                "the\n"
                "  event before it, and gaps released by timeout");
  flags
      .String("--from", "FILE", &from_file,
              "a timeline written by `hotring daemon --record-timeline FILE` (default: ask the "
              "running daemon for the lines it kept)")
      .String("--socket", "PATH|@NAME", &socket, "daemon socket (default /run/hotring/control)")
      .String("--svg", "FILE", &svg_file,
              "also draw the timeline: one row per event or module load, like systemd-analyze "
              "plot")
      .Int("--top", "N", &top, 1, 10000, "entries per list (default 10)");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;

  std::string text;
  if (!from_file.empty()) {
    std::ifstream in(from_file, std::ios::binary);
    if (!in) return ReportError("report", absl::NotFoundError(absl::StrCat("cannot read ", from_file)));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  } else {
    absl::StatusOr<std::string> fetched = FetchTimelineLines(socket);
    if (!fetched.ok()) return ReportError("report", fetched.status());
    text = absl::StrCat(kTimelineHeader, "\n", *fetched);
  }
  absl::StatusOr<report::Timeline> timeline = report::ParseTimeline(text);
  if (!timeline.ok()) return ReportError("report", timeline.status());
  const report::Summary summary = report::Summarize(*timeline, static_cast<size_t>(top));
  std::fputs(report::FormatReport(*timeline, summary).c_str(), stdout);
  if (!svg_file.empty()) {
    report::SvgOptions options;
    const size_t slash = from_file.rfind('/');
    options.title = from_file.empty() ? "hotring timeline"
                                      : absl::StrCat("hotring timeline of ",
                                                     slash == std::string::npos
                                                         ? from_file
                                                         : from_file.substr(slash + 1));
    const std::string svg = report::RenderSvg(*timeline, options);
    std::ofstream out(svg_file, std::ios::binary | std::ios::trunc);
    out << svg;
    out.close();
    if (!out) {
      return ReportError("report", absl::InternalError(absl::StrCat("cannot write ", svg_file)));
    }
    std::fprintf(stderr, "hotring report: wrote %s (%zu bytes)\n", svg_file.c_str(), svg.size());
  }
  return 0;
}

}  // namespace hotring::hotplug

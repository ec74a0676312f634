// The timeline as a picture, like `systemd-analyze plot`: one row per event (a device's add,
// change, ...) and one per module load, bars from reception to the end of handling, split into
// held (behind a SEQNUM gap), queued (behind a related event, or for a free handler slot) and
// handler time.
// Pure: data in, SVG text out.
#ifndef HOTRING_HOTPLUG_REPORT_SVG_H_
#define HOTRING_HOTPLUG_REPORT_SVG_H_

#include <cstddef>
#include <string>

#include "hotplug/report/timeline_parse.h"

namespace hotring::hotplug::report {

struct SvgOptions {
  size_t max_rows = 2000;     // events beyond it are left out (and said so in the title)
  double chart_width = 1100;  // pixels for the time axis
  std::string title = "hotring timeline";
};

[[nodiscard]] std::string RenderSvg(const Timeline& timeline, const SvgOptions& options = {});

// `text` with &, <, >, " and ' escaped for XML.
[[nodiscard]] std::string XmlEscape(absl::string_view text);

}  // namespace hotring::hotplug::report

#endif  // HOTRING_HOTPLUG_REPORT_SVG_H_

#include "hotplug/report/report.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hotring::hotplug::report {
namespace {

constexpr int64_t kNoticeUs = 1000;

bool Related(absl::string_view a, absl::string_view b) {
  if (a == b) return true;
  const absl::string_view shorter = a.size() < b.size() ? a : b;
  const absl::string_view longer = a.size() < b.size() ? b : a;
  return absl::StartsWith(longer, shorter) && longer[shorter.size()] == '/';
}

template <typename T, typename Key>
std::vector<T> Top(std::vector<T> items, size_t top, Key key) {
  std::stable_sort(items.begin(), items.end(),
                   [&](const T& a, const T& b) { return key(a) > key(b); });
  if (items.size() > top) items.resize(top);
  return items;
}

std::string Ms(int64_t us) { return absl::StrFormat("%.1f ms", static_cast<double>(us) / 1000.0); }

std::string Name(const EventSpan& e) {
  return absl::StrCat(e.seqnum.has_value() ? absl::StrCat("SEQNUM ", *e.seqnum) : "-", " ",
                      e.action.empty() ? "?" : e.action, " ", e.devpath,
                      e.subsystem.empty() ? "" : absl::StrCat(" (", e.subsystem, ")"));
}

}  // namespace

const EventSpan* FindBlocker(const Timeline& timeline, const EventSpan& span) {
  if (!span.started_us.has_value()) return nullptr;
  const EventSpan* best = nullptr;
  for (const EventSpan& other : timeline.events) {
    if (&other == &span || other.id == 0 || other.id >= span.id || !other.handled_us.has_value() ||
        *other.handled_us > *span.started_us || !Related(other.devpath, span.devpath)) {
      continue;
    }
    if (best == nullptr || *other.handled_us > *best->handled_us) best = &other;
  }
  return best;
}

Summary Summarize(const Timeline& timeline, size_t top) {
  Summary s;
  std::vector<const EventSpan*> complete;
  std::vector<const EventSpan*> ran;
  std::vector<const EventSpan*> held;
  std::vector<const EventSpan*> queued;
  bool first = true;
  for (const EventSpan& e : timeline.events) {
    ++s.events;
    if (e.result == "handled") ++s.handled;
    if (e.result == "failed") ++s.failed;
    if (e.result == "timed_out") ++s.timed_out;
    if (e.result.empty()) ++s.unfinished;
    const std::optional<int64_t> begin = e.received_us.has_value() ? e.received_us : e.released_us;
    if (begin.has_value()) {
      s.first_us = first ? *begin : std::min(s.first_us, *begin);
      first = false;
    }
    if (e.handled_us.has_value()) s.last_us = std::max(s.last_us, *e.handled_us);
    if (e.received_us && e.handled_us) complete.push_back(&e);
    if (e.started_us && e.handled_us) ran.push_back(&e);
    // Waits shorter than kNoticeUs are the daemon's own dispatch time, not waiting.
    if (e.received_us && e.released_us && *e.released_us - *e.received_us >= kNoticeUs) {
      held.push_back(&e);
    }
    if (e.released_us && e.started_us && *e.started_us - *e.released_us >= kNoticeUs) {
      queued.push_back(&e);
    }
  }
  s.slowest_events = Top(complete, top, [](const EventSpan* e) {
    return *e->handled_us - *e->received_us;
  });
  s.slowest_handlers = Top(ran, top, [](const EventSpan* e) {
    return *e->handled_us - *e->started_us;
  });
  s.longest_held = Top(held, top, [](const EventSpan* e) {
    return *e->released_us - *e->received_us;
  });
  for (const EventSpan* e : Top(queued, top, [](const EventSpan* e) {
         return *e->started_us - *e->released_us;
       })) {
    s.longest_waits.push_back(Wait{e, FindBlocker(timeline, *e), *e->started_us - *e->released_us});
  }
  std::vector<const ModuleLoad*> modules;
  for (const ModuleLoad& m : timeline.modules) modules.push_back(&m);
  s.slowest_modules = Top(modules, top, [](const ModuleLoad* m) { return m->took_us; });
  for (const GapRecord& g : timeline.gaps) {
    if (g.why == "timeout") s.timeout_gaps.push_back(&g);
  }
  return s;
}

std::string FormatReport(const Timeline& timeline, const Summary& s) {
  std::string out = absl::StrFormat(
      "%d events in %s (first received at %s, last handled at %s): %d handled, %d failed, "
      "%d timed out, %d unfinished; %d module loads; %d gaps released by timeout\n",
      s.events, Ms(s.last_us - s.first_us), Ms(s.first_us), Ms(s.last_us), s.handled, s.failed,
      s.timed_out, s.unfinished, timeline.modules.size(), s.timeout_gaps.size());
  if (timeline.bad_lines > 0 || timeline.unmatched > 0) {
    absl::StrAppendFormat(&out, "(%d malformed lines skipped, %d records without their start)\n",
                          timeline.bad_lines, timeline.unmatched);
    for (const std::string& e : timeline.errors) absl::StrAppend(&out, "  ", e, "\n");
  }
  auto section = [&](absl::string_view title, bool empty) {
    absl::StrAppend(&out, "\n", title, empty ? ": none\n" : ":\n");
  };
  section("slowest events (received -> handled; held + queued + handler)",
          s.slowest_events.empty());
  for (const EventSpan* e : s.slowest_events) {
    const int64_t held = e->released_us ? *e->released_us - *e->received_us : 0;
    const int64_t queued =
        e->released_us && e->started_us ? *e->started_us - *e->released_us : 0;
    const int64_t run = e->started_us ? *e->handled_us - *e->started_us : 0;
    absl::StrAppendFormat(&out, "  %10s  %s  [%s + %s + %s] %s\n", Ms(*e->handled_us - *e->received_us),
                          Name(*e), Ms(held), Ms(queued), Ms(run), e->result);
  }
  section("slowest handlers (started -> handled)", s.slowest_handlers.empty());
  for (const EventSpan* e : s.slowest_handlers) {
    absl::StrAppendFormat(&out, "  %10s  %s %s\n", Ms(*e->handled_us - *e->started_us), Name(*e),
                          e->result);
  }
  section("slowest module loads", s.slowest_modules.empty());
  for (const ModuleLoad* m : s.slowest_modules) {
    absl::StrAppendFormat(&out, "  %10s  %s%s (for SEQNUM %s)\n", Ms(m->took_us), m->module,
                          m->ok ? "" : " FAILED",
                          m->seqnum.has_value() ? absl::StrCat(*m->seqnum) : "-");
  }
  section("longest waits for the event before (released -> started)", s.longest_waits.empty());
  for (const Wait& w : s.longest_waits) {
    absl::StrAppendFormat(
        &out, "  %10s  %s\n              waited for %s\n", Ms(w.wait_us), Name(*w.event),
        w.blocker != nullptr ? Name(*w.blocker) : std::string("a free handler slot"));
  }
  section("longest held behind a SEQNUM gap (received -> released)", s.longest_held.empty());
  for (const EventSpan* e : s.longest_held) {
    absl::StrAppendFormat(&out, "  %10s  %s\n", Ms(*e->released_us - *e->received_us), Name(*e));
  }
  section("gaps released by timeout", s.timeout_gaps.empty());
  for (const GapRecord* g : s.timeout_gaps) {
    absl::StrAppendFormat(&out, "  at %s: SEQNUM %d-%d never arrived\n", Ms(g->at_us), g->first,
                          g->last);
  }
  return out;
}

}  // namespace hotring::hotplug::report

#include "hotplug/daemon/pending.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug {
namespace {

// "/a/b" and "/a/b/c" (either way round), or equal: the scheduler's blocking relation.
absl::string_view Relation(absl::string_view earlier, absl::string_view later) {
  if (earlier == later) return "same device";
  if (later.size() > earlier.size() && absl::StartsWith(later, earlier) &&
      later[earlier.size()] == '/') {
    return "parent";
  }
  if (earlier.size() > later.size() && absl::StartsWith(earlier, later) &&
      earlier[later.size()] == '/') {
    return "child";
  }
  return "";
}

std::string SeqnumText(const Event& event) {
  return event.seqnum.has_value() ? absl::StrCat(*event.seqnum) : "-";
}

std::string Millis(absl::Duration d) { return absl::StrCat(absl::ToInt64Milliseconds(d), " ms"); }

}  // namespace

ControlReply PendingReport(uint32_t cookie, absl::Span<const LiveEvent> live,
                           const Reorderer& reorderer, const PendingState& state,
                           absl::FunctionRef<std::string(const Event&)> describe, MonoTime now) {
  constexpr size_t kMaxDescribed = 20;
  constexpr size_t kMaxLine = 300;
  ControlReply reply;
  reply.cookie = cookie;
  reply.fields.emplace_back("held", absl::StrCat(reorderer.held()));
  reply.fields.emplace_back("queued", absl::StrCat(state.queued));
  reply.fields.emplace_back("running", absl::StrCat(state.running));
  size_t described = 0;
  size_t total = 0;
  auto add = [&](const Event& event, std::string where) {
    ++total;
    if (described == kMaxDescribed) return;
    ++described;
    std::string line = absl::StrCat(SeqnumText(event), " ", event.devpath, " ", where);
    if (line.size() > kMaxLine) line.resize(kMaxLine);
    reply.fields.emplace_back("event", std::move(line));
  };
  // Release order: the running and queued events, oldest first; then what is held.
  for (const LiveEvent& record : live) {
    if (!record.started_at.has_value()) continue;
    const std::string what = describe(*record.event);
    add(*record.event, absl::StrCat("running for ", Millis(Since(*record.started_at, now)),
                                    what.empty() ? "" : ": ", what));
  }
  for (size_t i = 0; i < live.size(); ++i) {
    const LiveEvent& record = live[i];
    if (record.started_at.has_value()) continue;
    if (described == kMaxDescribed) {
      ++total;
      continue;
    }
    // The latest earlier live event on a related DEVPATH is the one it waits for.
    const LiveEvent* blocker = nullptr;
    absl::string_view relation;
    for (size_t j = 0; j < i; ++j) {
      const absl::string_view rel = Relation(live[j].event->devpath, record.event->devpath);
      if (!rel.empty()) {
        blocker = &live[j];
        relation = rel;
      }
    }
    const std::string queued_for = Millis(Since(record.released_at, now));
    if (blocker != nullptr) {
      add(*record.event,
          absl::StrCat("queued for ", queued_for, " behind SEQNUM ", SeqnumText(*blocker->event),
                       " ", blocker->event->devpath, " (", relation, ", ",
                       blocker->started_at.has_value() ? "running" : "queued", ")"));
    } else {
      add(*record.event, absl::StrCat("queued for ", queued_for, ": all ", state.children_max,
                                      " handler slots busy"));
    }
  }
  const std::optional<uint64_t> expected = reorderer.expected();
  reorderer.VisitHeld([&](const Event& event, MonoTime since) {
    add(event, absl::StrCat("held for ", Millis(Since(since, now)), " behind a gap: SEQNUM ",
                            expected.has_value() ? absl::StrCat(*expected) : "?",
                            " not received (released after ",
                            absl::FormatDuration(state.reorder_timeout), ")"));
    return true;
  });
  if (total > described) reply.fields.emplace_back("more", absl::StrCat(total - described));
  return reply;
}

}  // namespace hotring::hotplug

#include "hotplug/report/timeline_parse.h"

#include <deque>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hotring::hotplug::report {
namespace {

constexpr size_t kMaxErrors = 5;
constexpr absl::string_view kHeaderPrefix = "# hotring timeline ";

// Splits `line` into at most `n` space-separated fields; the last one keeps any spaces.
std::vector<absl::string_view> Fields(absl::string_view line, size_t n) {
  std::vector<absl::string_view> out;
  while (out.size() + 1 < n) {
    const size_t space = line.find(' ');
    if (space == absl::string_view::npos) break;
    out.push_back(line.substr(0, space));
    line.remove_prefix(space + 1);
  }
  out.push_back(line);
  return out;
}

std::optional<uint64_t> ParseSeqnum(absl::string_view text, bool& ok) {
  if (text == "-") return std::nullopt;
  uint64_t v;
  ok = absl::SimpleAtoi(text, &v);
  return v;
}

class Parser {
 public:
  absl::Status Line(size_t number, absl::string_view line) {
    if (line.empty()) return absl::OkStatus();
    if (line[0] == '#') {
      if (absl::StartsWith(line, "# hotring ") && !absl::StartsWith(line, kHeaderPrefix)) {
        return absl::InvalidArgumentError(absl::StrCat("line ", number, ": not a timeline"));
      }
      if (absl::StartsWith(line, kHeaderPrefix) && line.substr(kHeaderPrefix.size()) != "1") {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", number, ": timeline format ", line.substr(kHeaderPrefix.size()),
            ", this reader knows 1"));
      }
      return absl::OkStatus();
    }
    ++t_.lines;
    if (!Record(line)) {
      ++t_.bad_lines;
      if (t_.errors.size() < kMaxErrors) {
        t_.errors.push_back(absl::StrCat("line ", number, ": ", line.substr(0, 120)));
      }
    }
    return absl::OkStatus();
  }

  Timeline Take() { return std::move(t_); }

 private:
  EventSpan* ById(uint64_t id) {
    const auto it = by_id_.find(id);
    if (it == by_id_.end()) {
      ++t_.unmatched;
      return nullptr;
    }
    return &t_.events[it->second];
  }

  // False when malformed.
  bool Record(absl::string_view line) {
    if (line.size() < 3 || line[1] != ' ') return false;
    const char kind = line[0];
    const std::vector<absl::string_view> f = Fields(line.substr(2), 5);
    int64_t t;
    if (f.empty() || !absl::SimpleAtoi(f[0], &t)) return false;
    bool ok = true;
    switch (kind) {
      case 'R': {
        if (f.size() != 5 || f[4].empty() || f[4][0] != '/') return false;
        EventSpan span;
        span.seqnum = ParseSeqnum(f[1], ok);
        if (!ok) return false;
        span.action = std::string(f[2]);
        span.subsystem = f[3] == "-" ? "" : std::string(f[3]);
        span.devpath = std::string(f[4]);
        span.received_us = t;
        const size_t index = t_.events.size();
        if (span.seqnum.has_value()) {
          if (received_by_seqnum_.contains(*span.seqnum)) return true;  // a repeat: first wins
          received_by_seqnum_[*span.seqnum] = index;
        } else {
          received_without_seqnum_[span.devpath].push_back(index);
        }
        t_.events.push_back(std::move(span));
        return true;
      }
      case 'L': {
        const std::vector<absl::string_view> g = Fields(line.substr(2), 4);
        uint64_t id;
        if (g.size() != 4 || !absl::SimpleAtoi(g[1], &id) || g[3].empty() || g[3][0] != '/') {
          return false;
        }
        const std::optional<uint64_t> seqnum = ParseSeqnum(g[2], ok);
        if (!ok || by_id_.contains(id)) return false;
        std::optional<size_t> index;
        if (seqnum.has_value()) {
          if (auto it = received_by_seqnum_.find(*seqnum); it != received_by_seqnum_.end()) {
            if (t_.events[it->second].id == 0) index = it->second;
          }
        } else if (auto it = received_without_seqnum_.find(g[3]);
                   it != received_without_seqnum_.end() && !it->second.empty()) {
          index = it->second.front();
          it->second.pop_front();
        }
        if (!index.has_value()) {
          // Its R line is not in this timeline (kept lines only): start the span here.
          ++t_.unmatched;
          EventSpan span;
          span.seqnum = seqnum;
          span.devpath = std::string(g[3]);
          index = t_.events.size();
          t_.events.push_back(std::move(span));
        }
        EventSpan& span = t_.events[*index];
        span.id = id;
        span.released_us = t;
        by_id_[id] = *index;
        return true;
      }
      case 'S':
      case 'H': {
        uint64_t id;
        if (f.size() < 2 || !absl::SimpleAtoi(f[1], &id)) return false;
        if (kind == 'S' && f.size() != 2) return false;
        if (kind == 'H' && (f.size() != 3 || (f[2] != "handled" && f[2] != "failed" &&
                                              f[2] != "timed_out"))) {
          return false;
        }
        EventSpan* span = ById(id);
        if (span == nullptr) return true;
        if (kind == 'S') {
          span->started_us = t;
        } else {
          span->handled_us = t;
          span->result = std::string(f[2]);
        }
        return true;
      }
      case 'G': {
        GapRecord gap;
        gap.at_us = t;
        if (f.size() != 4 || !absl::SimpleAtoi(f[1], &gap.first) ||
            !absl::SimpleAtoi(f[2], &gap.last) || gap.last < gap.first) {
          return false;
        }
        gap.why = std::string(f[3]);
        t_.gaps.push_back(std::move(gap));
        return true;
      }
      case 'M': {
        const std::vector<absl::string_view> g = Fields(line.substr(2), 5);
        // M <t> <SEQNUM|-> <took_us> <module> <ok|error>: the module name has no spaces.
        ModuleLoad load;
        load.end_us = t;
        if (g.size() != 5 || !absl::SimpleAtoi(g[2], &load.took_us) || load.took_us < 0) {
          return false;
        }
        load.seqnum = ParseSeqnum(g[1], ok);
        if (!ok) return false;
        if (g[3].empty() || (g[4] != "ok" && g[4] != "error")) return false;
        load.module = std::string(g[3]);
        load.ok = g[4] == "ok";
        t_.modules.push_back(std::move(load));
        return true;
      }
      default:
        return false;
    }
  }

  Timeline t_;
  absl::flat_hash_map<uint64_t, size_t> by_id_;
  absl::flat_hash_map<uint64_t, size_t> received_by_seqnum_;
  absl::flat_hash_map<std::string, std::deque<size_t>> received_without_seqnum_;
};

}  // namespace

absl::StatusOr<Timeline> ParseTimeline(absl::string_view text) {
  Parser parser;
  size_t number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    absl::Status s = parser.Line(number, absl::StripTrailingAsciiWhitespace(line));
    if (!s.ok()) return s;
  }
  Timeline timeline = parser.Take();
  if (timeline.lines > 0 && timeline.bad_lines == timeline.lines) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a timeline: no valid record (", timeline.errors.empty() ? "" : timeline.errors[0],
        ")"));
  }
  return timeline;
}

}  // namespace hotring::hotplug::report

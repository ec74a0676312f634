#include "hotplug/rules/regex.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug::rules {
namespace {

bool IsMeta(char c) {
  switch (c) {
    case '.': case '[': case ']': case '(': case ')': case '*': case '+': case '?':
    case '{': case '}': case '^': case '$': case '\\': case '|':
      return true;
    default:
      return false;
  }
}

// The literal text every match of an ERE starts with. Conservative: no prefix at all when the
// pattern has an alternation anywhere; a character followed by '*', '?' or '{' is optional or
// repeated, so the prefix stops before it ('+' keeps it: at least one).
std::string LiteralPrefix(absl::string_view pattern) {
  if (absl::StrContains(pattern, '|')) return "";
  std::string prefix;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (IsMeta(c)) break;
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (next == '*' || next == '?' || next == '{') break;
    prefix.push_back(c);
    if (next == '+') break;
  }
  return prefix;
}

bool HasBackReference(absl::string_view pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      if (pattern[i + 1] >= '1' && pattern[i + 1] <= '9') return true;
      ++i;
    }
  }
  return false;
}

// glibc's regcomp copies a repeated sub-expression once per repetition ({m,n} becomes n
// copies) and stacked or nested repetitions multiply: "a{1,32767}" or "p++++++++++++++++++++"
// take it seconds to minutes, in the daemon's one thread. This bounds that size before regcomp
// sees the pattern: each atom costs the product of the repetitions applying to it ('*', '+' and
// '?' count 2, {m,n} counts n+1), alternatives and sequences add up. Real configurations stay
// far below the limit ("([0-9]+)" costs 2, "[0-9]{1,3}" 4). The limit was 4,096 until a long
// fuzz run found that repetitions of an optional sub-expression grow faster than the copies:
// "(a*){0,2047}" took regcomp 3.7 s and 560 MB here, "a+*+++++++++" 0.25 s, "a{1,4095}" 1 s and
// 134 MB (and several such lines add up). At 256 the worst shapes take under 50 ms and 7 MB.
constexpr uint64_t kMaxRepetitionCost = 256;
constexpr uint64_t kCostCap = uint64_t{1} << 40;

uint64_t Saturate(uint64_t v) { return v > kCostCap ? kCostCap : v; }

// The position after the bracket expression starting at `i` ('['), or the pattern's end.
size_t SkipBracket(absl::string_view p, size_t i) {
  ++i;
  if (i < p.size() && p[i] == '^') ++i;
  if (i < p.size() && p[i] == ']') ++i;
  while (i < p.size() && p[i] != ']') {
    if (p[i] == '[' && i + 1 < p.size() && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
      const char kind = p[i + 1];
      i += 2;
      while (i + 1 < p.size() && !(p[i] == kind && p[i + 1] == ']')) ++i;
      i += 2;
      continue;
    }
    ++i;
  }
  return i < p.size() ? i + 1 : p.size();
}

// What the pattern asks of regcomp (RepetitionScan): the copies its repetitions make, and
// whether a repetition applies to something that can match the empty string.
struct RepetitionScan {
  uint64_t cost = 0;
  bool repeats_empty = false;
  bool unmatched_close = false;  // a ')' without its '(': a literal alone, not once wrapped
};

// A second shape glibc's regcomp takes exponential time over, whatever the copies: a sub-
// expression that can match nothing, repeated ("(a?)+", "a*+", "(a|)*", "(a?){2,9}"). Each such
// repetition is a loop of empty transitions, and regcomp's closure of them grows with every one
// in sequence or nested: "^(a?+b?+c?+d?+e?+f?+g?+h?+i?+j?+k?+)+$" took it 13 s, "^(a?){2,200}$"
// 1.9 s, at copies well below the limit. A repetition of a non-empty one ("(a+)+",
// "([0-9]+)?") stays linear, and an empty match repeated adds nothing a '*' or a '?' would not
// say ("(a?)+" is "a*").
// The characters after a backslash that make one of glibc's word and buffer anchors.
bool IsWordAnchor(char c) {
  return c == 'b' || c == 'B' || c == '<' || c == '>' || c == '`' || c == '\'';
}

// One group of the pattern being scanned (the whole pattern is the outermost).
struct ScanFrame {
  uint64_t sum = 0;   // committed atoms of this group (all alternatives)
  uint64_t last = 0;  // the atom or group the next repetition applies to
  bool has_last = false;
  bool last_empty = false;     // `last` can match the empty string
  bool sequence_empty = true;  // every item of the current alternative can
  bool group_empty = false;    // some finished alternative can
  void Commit() {
    sum = Saturate(sum + last);
    last = 0;
    if (has_last) sequence_empty = sequence_empty && last_empty;
    has_last = false;
    last_empty = false;
  }
  void EndAlternative() {
    Commit();
    group_empty = group_empty || sequence_empty;
    sequence_empty = true;
  }
  void Item(uint64_t copies, bool empty) {
    Commit();
    last = copies;
    has_last = true;
    last_empty = empty;
  }
};

// A repetition's bounds: {m}, {m,}, {m,n}, {,n}.
struct Interval {
  uint64_t least = 0;
  uint64_t most = 0;    // 0: no bound
  uint64_t copies = 0;  // what regcomp makes of it, for the cost
  size_t end = 0;       // the position after '}'
};

// The interval starting at `i` ('{'), or nullopt when it is not one (a literal '{').
std::optional<Interval> ParseInterval(absl::string_view p, size_t i) {
  size_t j = i + 1;
  uint64_t m = 0, n = 0;
  bool comma = false, has_n = false;
  while (j < p.size() && absl::ascii_isdigit(static_cast<unsigned char>(p[j]))) {
    m = Saturate(m * 10 + static_cast<uint64_t>(p[j] - '0'));
    ++j;
  }
  if (j < p.size() && p[j] == ',') {
    comma = true;
    ++j;
    while (j < p.size() && absl::ascii_isdigit(static_cast<unsigned char>(p[j]))) {
      n = Saturate(n * 10 + static_cast<uint64_t>(p[j] - '0'));
      has_n = true;
      ++j;
    }
  }
  if (j >= p.size() || p[j] != '}') return std::nullopt;
  const uint64_t top = has_n ? std::max(m, n) : m;
  return Interval{m, has_n ? top : (comma ? 0 : m), top + 1, j + 1};
}

RepetitionScan ScanRepetitions(absl::string_view p) {
  RepetitionScan scan;
  std::vector<ScanFrame> stack(1);
  // Applies a repetition of `least` to `most` copies (`most` 0: no bound) to the top frame's
  // last item.
  auto repeat = [&](uint64_t factor, uint64_t least, uint64_t most) {
    ScanFrame& top = stack.back();
    if (top.has_last && top.last_empty && (most == 0 || most > 1)) scan.repeats_empty = true;
    const bool had_last = top.has_last;
    top.last = Saturate(std::max<uint64_t>(1, top.last) * factor);
    // A repetition with nothing before it stands for itself (a literal to regcomp).
    top.has_last = true;
    top.last_empty = had_last && (top.last_empty || least == 0);
  };
  auto close_group = [&] {
    stack.back().EndAlternative();
    const uint64_t group = std::max<uint64_t>(1, stack.back().sum);
    const bool empty = stack.back().group_empty;
    stack.pop_back();
    stack.back().Item(group, empty);
  };
  size_t i = 0;
  while (i < p.size()) {
    ScanFrame& top = stack.back();
    const char c = p[i++];
    switch (c) {
      case '(':
        top.Commit();
        stack.emplace_back();
        break;
      case ')':
        if (stack.size() > 1) {
          close_group();
        } else {
          scan.unmatched_close = true;
        }
        break;
      case '|':
        top.EndAlternative();
        break;
      case '*':
        repeat(2, 0, 0);
        break;
      case '+':
        repeat(2, 1, 0);
        break;
      case '?':
        repeat(2, 0, 1);
        break;
      case '{':
        if (const std::optional<Interval> interval = ParseInterval(p, i - 1)) {
          repeat(interval->copies, interval->least, interval->most);
          i = interval->end;
        } else {
          top.Item(1, false);
        }
        break;
      case '[':
        top.Item(1, false);
        i = SkipBracket(p, i - 1);
        break;
      case '\\':
        // glibc's word anchors (\b \B \< \> \` \') match the empty string, as '^' does.
        top.Item(1, i < p.size() && IsWordAnchor(p[i]));
        ++i;
        break;
      case '^':
      case '$':  // anchors match the empty string
        top.Item(1, true);
        break;
      default:
        top.Item(1, false);
        break;
    }
  }
  while (stack.size() > 1) close_group();  // unclosed groups (regcomp refuses them anyway)
  stack.back().Commit();
  scan.cost = stack.back().sum;
  return scan;
}

}  // namespace

void Regex::Free::operator()(regex_t* r) const {
  regfree(r);
  delete r;
}

absl::StatusOr<Regex> Regex::Compile(absl::string_view pattern) {
  std::string text(pattern);
  // glibc matches back-references by backtracking: (a|aa)+\1x or (.*)(.*)\2\1x against a
  // 200-character name runs for minutes, and names come from events. busybox's mdev.txt never
  // uses them; they are refused.
  if (HasBackReference(text)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad regex '", text, "': back-references (\\1 to \\9) are not supported: their matching "
        "time grows exponentially with the name"));
  }
  const RepetitionScan scan = ScanRepetitions(text);
  if (scan.cost > kMaxRepetitionCost) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad regex '", text, "': repetitions too large or too deeply nested (over ",
        kMaxRepetitionCost, " copies)"));
  }
  // regcomp reads a ')' without its '(' as the character, but in the anchored form below it
  // would close the wrapper's group: another pattern, and repetitions after it the scan
  // never saw.
  if (scan.unmatched_close) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad regex '", text, "': unmatched ')' (write '\\)' for the character)"));
  }
  if (scan.repeats_empty) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad regex '", text, "': a repetition of something that can match nothing (as in "
        "'(a?)+' or 'a*+'; write 'a*'): glibc's regcomp takes exponential time over it"));
  }
  auto raw = std::make_unique<regex_t>();
  const int rc = regcomp(raw.get(), text.c_str(), REG_EXTENDED);
  if (rc != 0) {
    char message[256];
    regerror(rc, raw.get(), message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat("bad regex '", text, "': ", message));
  }
  Compiled compiled(raw.release());
  Regex regex(text, std::move(compiled));
  regex.literal_prefix_ = LiteralPrefix(text);
  regex.literal_ = regex.literal_prefix_.size() == text.size();
  regex.match_all_ = text == ".*";
  if (!regex.literal_) {
    auto anchored = std::make_unique<regex_t>();
    const std::string wrapped = absl::StrCat("^(", text, ")$");
    if (regcomp(anchored.get(), wrapped.c_str(), REG_EXTENDED | REG_NOSUB) == 0) {
      regex.anchored_ = Compiled(anchored.release());
    }
  }
  return regex;
}

bool Regex::FullMatch(absl::string_view subject, MatchGroups* groups) const {
  if (literal_) {
    if (subject != pattern_) return false;
    if (groups != nullptr) {
      *groups = MatchGroups();
      groups->group[0] = {true, 0, subject.size()};
    }
    return true;
  }
  if (match_all_) {
    if (groups != nullptr) {
      *groups = MatchGroups();
      groups->group[0] = {true, 0, subject.size()};
    }
    return true;
  }
  if (!absl::StartsWith(subject, literal_prefix_)) return false;
  // glibc reads the subject only within [rm_so, rm_eo) (REG_STARTEND), but wants a pointer.
  const char* data = subject.data() != nullptr ? subject.data() : "";
  regmatch_t match[10];
  match[0].rm_so = 0;
  match[0].rm_eo = static_cast<regoff_t>(subject.size());
  if (anchored_ != nullptr) {
    if (regexec(anchored_.get(), data, 1, match, REG_STARTEND) != 0) return false;
    if (groups == nullptr) return true;
    match[0].rm_so = 0;
    match[0].rm_eo = static_cast<regoff_t>(subject.size());
  }
  if (regexec(compiled_.get(), data, 10, match, REG_STARTEND) != 0) return false;
  if (match[0].rm_so != 0 || static_cast<size_t>(match[0].rm_eo) != subject.size()) return false;
  if (groups != nullptr) {
    for (int i = 0; i < 10; ++i) {
      MatchGroups::Group& g = groups->group[i];
      g.matched = match[i].rm_so >= 0;
      g.begin = g.matched ? static_cast<size_t>(match[i].rm_so) : 0;
      g.end = g.matched ? static_cast<size_t>(match[i].rm_eo) : 0;
    }
  }
  return true;
}

bool Regex::Search(absl::string_view subject) const {
  if (literal_) return absl::StrContains(subject, pattern_);
  if (match_all_) return true;
  regmatch_t match[1];
  match[0].rm_so = 0;
  match[0].rm_eo = static_cast<regoff_t>(subject.size());
  const char* data = subject.data() != nullptr ? subject.data() : "";
  return regexec(compiled_.get(), data, 1, match, REG_STARTEND) == 0;
}

}  // namespace hotring::hotplug::rules

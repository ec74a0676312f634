#include "hotplug/rules/regex.h"

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

}  // namespace

void Regex::Free::operator()(regex_t* r) const {
  regfree(r);
  delete r;
}

absl::StatusOr<Regex> Regex::Compile(absl::string_view pattern) {
  std::string text(pattern);
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
  if (!regex.literal_ && !HasBackReference(text)) {
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

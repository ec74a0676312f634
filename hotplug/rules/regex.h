// Regex: one POSIX extended regular expression, compiled once (regcomp REG_EXTENDED) and
// matched many times without compiling again. Owns the compiled regex_t; move-only.
#ifndef HOTRING_HOTPLUG_RULES_REGEX_H_
#define HOTRING_HOTPLUG_RULES_REGEX_H_

#include <regex.h>

#include <array>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::rules {

// The capture groups of one match: group 0 is the whole match, 1..9 the parenthesised groups.
// A group that did not take part in the match is empty with `matched` false (busybox then
// leaves "%N" in a path as it is).
struct MatchGroups {
  struct Group {
    bool matched = false;
    size_t begin = 0;  // offsets into the subject
    size_t end = 0;
  };
  std::array<Group, 10> group;
  // The text of group `n` in `subject` (empty when it did not take part).
  [[nodiscard]] absl::string_view Text(absl::string_view subject, int n) const {
    const Group& g = group[n];
    return g.matched ? subject.substr(g.begin, g.end - g.begin) : absl::string_view();
  }
};

class Regex {
 public:
  // Compiles `pattern` as an extended regex. The error is regerror's text.
  static absl::StatusOr<Regex> Compile(absl::string_view pattern);

  Regex(Regex&&) noexcept = default;
  Regex& operator=(Regex&&) noexcept = default;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex() = default;

  // True when the regex matches the WHOLE subject (match starts at 0 and ends at its end), as
  // mdev's device and $ENVVAR matchers require. `groups` (optional) receives the captures.
  // `subject` need not be NUL-terminated (REG_STARTEND); no allocation of ours.
  [[nodiscard]] bool FullMatch(absl::string_view subject, MatchGroups* groups = nullptr) const;
  // True when the regex matches anywhere in the subject, as mdev's ENVVAR=regex; prefixes do.
  [[nodiscard]] bool Search(absl::string_view subject) const;

  [[nodiscard]] const std::string& pattern() const { return pattern_; }
  // The text every match must start with ("ttyS" for "ttyS[0-9]*"); empty when unknown.
  [[nodiscard]] const std::string& literal_prefix() const { return literal_prefix_; }

 private:
  struct Free {
    void operator()(regex_t* r) const;
  };
  using Compiled = std::unique_ptr<regex_t, Free>;
  Regex(std::string pattern, Compiled compiled)
      : pattern_(std::move(pattern)), compiled_(std::move(compiled)) {}
  std::string pattern_;
  Compiled compiled_;
  // Shortcuts that keep glibc's regexec (the bulk of a rule's cost) off most rules: a pattern
  // without metacharacters is compared as a string; otherwise a subject must start with the
  // literal prefix, and "^(pattern)$" compiled REG_NOSUB decides the whole match before the
  // captures are computed (only for the rule that matched).
  bool literal_ = false;
  bool match_all_ = false;  // ".*": every subject matches whole (no REG_NEWLINE)
  std::string literal_prefix_;
  Compiled anchored_;  // null when the pattern has back-references
};

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_REGEX_H_

#include "hotplug/rules/regex.h"

#include "absl/strings/str_cat.h"

namespace hotring::hotplug::rules {

void Regex::Free::operator()(regex_t* r) const {
  regfree(r);
  delete r;
}

absl::StatusOr<Regex> Regex::Compile(absl::string_view pattern) {
  std::string text(pattern);
  std::unique_ptr<regex_t, Free> compiled(new regex_t);
  const int rc = regcomp(compiled.get(), text.c_str(), REG_EXTENDED);
  if (rc != 0) {
    char message[256];
    regerror(rc, compiled.get(), message, sizeof(message));
    // regcomp failed: nothing to regfree.
    delete compiled.release();
    return absl::InvalidArgumentError(absl::StrCat("bad regex '", text, "': ", message));
  }
  return Regex(std::move(text), std::move(compiled));
}

bool Regex::FullMatch(absl::string_view subject, MatchGroups* groups) const {
  regmatch_t match[10];
  // REG_STARTEND: the subject is [rm_so, rm_eo) and need not end in NUL.
  match[0].rm_so = 0;
  match[0].rm_eo = static_cast<regoff_t>(subject.size());
  // glibc reads the subject only within the range, but wants a non-null pointer.
  const char* data = subject.data() != nullptr ? subject.data() : "";
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
  regmatch_t match[1];
  match[0].rm_so = 0;
  match[0].rm_eo = static_cast<regoff_t>(subject.size());
  const char* data = subject.data() != nullptr ? subject.data() : "";
  return regexec(compiled_.get(), data, 1, match, REG_STARTEND) == 0;
}

}  // namespace hotring::hotplug::rules

#include "hotplug/udevrules/format.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "core/utf8.h"

namespace hotring::hotplug::udevrules {
namespace {

struct SubstEntry {
  absl::string_view name;
  char letter;
  Subst subst;
};

// udev-event.c's table, in its order: "$" names are matched as prefixes in this order.
constexpr SubstEntry kSubsts[] = {
    {"devnode", 'N', Subst::kDevnode}, {"tempnode", 'N', Subst::kDevnode},
    {"attr", 's', Subst::kAttr},       {"sysfs", 's', Subst::kAttr},
    {"env", 'E', Subst::kEnv},         {"kernel", 'k', Subst::kKernel},
    {"number", 'n', Subst::kNumber},   {"driver", 'd', Subst::kDriver},
    {"devpath", 'p', Subst::kDevpath}, {"id", 'b', Subst::kId},
    {"major", 'M', Subst::kMajor},     {"minor", 'm', Subst::kMinor},
    {"result", 'c', Subst::kResult},   {"parent", 'P', Subst::kParent},
    {"name", 'D', Subst::kName},       {"links", 'L', Subst::kLinks},
    {"root", 'r', Subst::kRoot},       {"sys", 'S', Subst::kSys},
};

// udev's UDEV_PATH_SIZE bound on a {attribute}.
constexpr size_t kMaxAttributeLength = 1024;

// What get_subst_type finds at s[i]: nothing (an ordinary character, maybe the second of "$$"
// or "%%"), a substitution, or a malformed one.
enum class Found : uint8_t { kChar, kSubst, kInvalid };

struct Scan {
  Found found = Found::kChar;
  size_t next = 0;   // where scanning goes on (kChar: the character to copy is s[next - 1])
  size_t start = 0;  // kChar: the character to copy
  Subst subst = Subst::kKernel;
  absl::string_view attribute;
  bool known = true;  // false: '$'/'%' not followed by a known name (kept as a character)
};

Scan ScanAt(absl::string_view s, size_t i) {
  Scan scan;
  const char c = s[i];
  if (c != '$' && c != '%') {
    scan.start = i;
    scan.next = i + 1;
    return scan;
  }
  const size_t p = i + 1;
  if (p < s.size() && s[p] == c) {  // "$$", "%%"
    scan.start = p;
    scan.next = p + 1;
    return scan;
  }
  const SubstEntry* entry = nullptr;
  size_t q = p;
  for (const SubstEntry& e : kSubsts) {
    if (c == '$' ? s.substr(p, e.name.size()) == e.name : (p < s.size() && s[p] == e.letter)) {
      entry = &e;
      q = p + (c == '$' ? e.name.size() : 1);
      break;
    }
  }
  if (entry == nullptr) {
    scan.known = false;
    scan.start = i;
    scan.next = i + 1;
    return scan;
  }
  if (q < s.size() && s[q] == '{') {
    const size_t close = s.find('}', q + 1);
    if (close == absl::string_view::npos) {
      scan.found = Found::kInvalid;
      scan.next = q;
      return scan;
    }
    const size_t length = close - (q + 1);
    if (length == 0 || length >= kMaxAttributeLength) {
      scan.found = Found::kInvalid;
      scan.next = q;
      return scan;
    }
    scan.attribute = s.substr(q + 1, length);
    q = close + 1;
  }
  scan.found = Found::kSubst;
  scan.subst = entry->subst;
  scan.next = q;
  return scan;
}

// "N" or "N+", as udev's safe_atou_optional_plus.
bool ParseResultIndex(absl::string_view attr) {
  if (!attr.empty() && attr.back() == '+') attr.remove_suffix(1);
  unsigned n = 0;
  return !attr.empty() && absl::ascii_isdigit(static_cast<unsigned char>(attr[0])) &&
         absl::SimpleAtoi(attr, &n);
}

bool IsSpace(char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }

bool AllowedForDevnode(char c, absl::string_view allow) {
  const unsigned char u = static_cast<unsigned char>(c);
  return absl::ascii_isalnum(u) || std::strchr("#+-.:=@_", c) != nullptr ||
         allow.find(c) != absl::string_view::npos;
}

}  // namespace

absl::string_view SubstName(Subst subst) {
  for (const SubstEntry& e : kSubsts) {
    if (e.subst == subst) return e.name;
  }
  return "?";
}

Format Format::Compile(absl::string_view source) {
  Format f;
  f.source_ = std::string(source);
  std::string literal;
  size_t i = 0;
  while (i < source.size()) {
    const Scan scan = ScanAt(source, i);
    if (scan.found == Found::kChar) {
      literal.push_back(source[scan.start]);
      if (scan.start != i) f.plain_ = false;  // "$$", "%%": the value is not the source
      i = scan.next;
      continue;
    }
    f.plain_ = false;
    if (!literal.empty()) {
      f.parts_.push_back(FormatPart{FormatPart::Kind::kLiteral, Subst::kKernel, std::move(literal)});
      literal.clear();
    }
    if (scan.found == Found::kInvalid) {
      f.parts_.push_back(FormatPart{FormatPart::Kind::kInvalid, Subst::kKernel, ""});
      return f;  // udevd stops expanding at a malformed substitution
    }
    f.parts_.push_back(
        FormatPart{FormatPart::Kind::kSubst, scan.subst, std::string(scan.attribute)});
    i = scan.next;
  }
  if (!literal.empty()) {
    f.parts_.push_back(FormatPart{FormatPart::Kind::kLiteral, Subst::kKernel, std::move(literal)});
  }
  return f;
}

ExpandResult ExpandFormat(const Format& format, FormatSource& source, size_t buffer_size,
                          bool fold_whitespace, std::string* out) {
  ExpandResult result;
  out->clear();
  const size_t limit = buffer_size > 0 ? buffer_size - 1 : 0;
  if (format.plain()) {
    out->assign(format.source());
  } else {
    for (const FormatPart& part : format.parts()) {
      if (out->size() >= limit) {
        result.truncated = true;
        break;
      }
      switch (part.kind) {
        case FormatPart::Kind::kLiteral:
          out->append(part.text);
          break;
        case FormatPart::Kind::kInvalid:
          result.complete = false;
          break;
        case FormatPart::Kind::kSubst: {
          const size_t start = out->size();
          if (!source.Substitute(part.subst, part.text, out)) {
            out->resize(start);
            result.complete = false;
            break;
          }
          if (fold_whitespace && part.subst != Subst::kResult) FoldWhitespace(out, start);
          break;
        }
      }
      if (!result.complete) break;
    }
  }
  if (out->size() > limit) {
    out->resize(limit);
    result.truncated = true;
  }
  return result;
}

std::optional<FormatProblem> CheckFormat(absl::string_view value) {
  size_t i = 0;
  while (i < value.size()) {
    const Scan scan = ScanAt(value, i);
    if (scan.found == Found::kInvalid) return FormatProblem{i + 1, "invalid substitution type"};
    if (scan.found == Found::kChar) {
      if (!scan.known) return FormatProblem{i + 1, "invalid substitution type"};
      i = scan.next;
      continue;
    }
    if ((scan.subst == Subst::kAttr || scan.subst == Subst::kEnv) && scan.attribute.empty()) {
      return FormatProblem{scan.next + 1, "attribute value missing"};
    }
    if (scan.subst == Subst::kResult && !scan.attribute.empty() && !ParseResultIndex(scan.attribute)) {
      return FormatProblem{scan.next + 1, "attribute value not a valid number"};
    }
    i = scan.next;
  }
  return std::nullopt;
}

size_t ReplaceChars(std::string* s, absl::string_view allow, size_t from) {
  size_t replaced = 0;
  const bool space_allowed = allow.find(' ') != absl::string_view::npos;
  for (size_t i = from; i < s->size();) {
    const char c = (*s)[i];
    if (AllowedForDevnode(c, allow)) {
      ++i;
      continue;
    }
    if (c == '\\' && i + 1 < s->size() && (*s)[i + 1] == 'x') {
      i += 2;
      continue;
    }
    const size_t len = Utf8SequenceLength(absl::string_view(*s).substr(i));
    if (len > 1) {
      i += len;
      continue;
    }
    (*s)[i] = IsSpace(c) && space_allowed ? ' ' : '_';
    ++replaced;
    ++i;
  }
  return replaced;
}

size_t ReplaceIfnameChars(std::string* s) {
  size_t replaced = 0;
  for (char& c : *s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 127 || u <= 32 || c == ':' || c == '/' || c == '%') {
      c = '_';
      ++replaced;
    }
  }
  return replaced;
}

void FoldWhitespace(std::string* s, size_t from) {
  size_t i = from;
  while (i < s->size() && IsSpace((*s)[i])) ++i;
  size_t j = from;
  bool space = false;
  for (; i < s->size(); ++i) {
    if (IsSpace((*s)[i])) {
      space = true;
      continue;
    }
    if (space) {
      (*s)[j++] = '_';
      space = false;
    }
    (*s)[j++] = (*s)[i];
  }
  s->resize(j);
}

std::vector<std::string> SplitCommand(absl::string_view command) {
  std::vector<std::string> argv;
  SplitCommandInto(command, &argv);
  return argv;
}

void SplitCommandInto(absl::string_view command, std::vector<std::string>* argv) {
  argv->resize(SplitCommandWords(command, argv));
}

size_t SplitCommandWords(absl::string_view command, std::vector<std::string>* argv) {
  size_t words = 0;
  size_t i = 0;
  const auto separator = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (true) {
    while (i < command.size() && separator(command[i])) ++i;
    if (i >= command.size()) break;
    if (words == argv->size()) argv->emplace_back();
    std::string& word = (*argv)[words++];
    word.clear();
    char quote = 0;
    for (; i < command.size(); ++i) {
      const char c = command[i];
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else {
          word.push_back(c);
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (separator(c)) {
        break;
      } else {
        word.push_back(c);
      }
    }
  }
  return words;
}

}  // namespace hotring::hotplug::udevrules

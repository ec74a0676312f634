#include "hotplug/udevrules/glob.h"

#include <cstddef>
#include <cstdint>

#include "absl/strings/ascii.h"

namespace hotring::hotplug::udevrules {
namespace {

// How one pattern element fares against one subject character.
enum class Element : uint8_t {
  kMatch,    // the element matches the character
  kNoMatch,  // it does not (the attempt at this position fails)
};

// glibc's longest character class name.
constexpr size_t kMaxClassName = 256;

// The pattern as glibc reads it: NUL-terminated, so reading past the end gives '\0'.
class Pattern {
 public:
  explicit Pattern(absl::string_view text) : text_(text) {}
  [[nodiscard]] unsigned char At(size_t i) const {
    return i < text_.size() ? static_cast<unsigned char>(text_[i]) : '\0';
  }
  [[nodiscard]] size_t size() const { return text_.size(); }

 private:
  absl::string_view text_;
};

// The C locale's character classes; false for an unknown name.
bool InClass(absl::string_view name, unsigned char c, bool* known) {
  *known = true;
  if (name == "alnum") return absl::ascii_isalnum(c);
  if (name == "alpha") return absl::ascii_isalpha(c);
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return absl::ascii_iscntrl(c);
  if (name == "digit") return absl::ascii_isdigit(c);
  if (name == "graph") return absl::ascii_isgraph(c);
  if (name == "lower") return absl::ascii_islower(c);
  if (name == "print") return absl::ascii_isprint(c);
  if (name == "punct") return absl::ascii_ispunct(c);
  if (name == "space") return absl::ascii_isspace(c);
  if (name == "upper") return absl::ascii_isupper(c);
  if (name == "xdigit") return absl::ascii_isxdigit(c);
  *known = false;
  return false;
}

// How the rest of a bracket expression that already matched reads.
enum class Rest : uint8_t { kClosed, kUnterminated, kMalformed };

// Skips the rest of a bracket expression that already matched, as glibc does (its rules for
// what ends the expression differ slightly from the matching pass). `p` is just after the item
// that matched.
Rest SkipRestOfBracket(const Pattern& pat, size_t* p) {
  unsigned char c;
  do {
    c = pat.At((*p)++);
    if (c == '\0') return Rest::kUnterminated;
    if (c == '\\') {
      if (pat.At(*p) == '\0') return Rest::kMalformed;
      ++*p;
    } else if (c == '[' && pat.At(*p) == ':') {
      size_t c1 = 0;
      const size_t startp = *p;
      bool restart = false;
      for (;;) {
        c = pat.At(++*p);
        if (++c1 == kMaxClassName) return Rest::kMalformed;
        if (pat.At(*p) == ':' && pat.At(*p + 1) == ']') break;
        if (c < 'a' || c >= 'z') {
          // Not a class name: the '[' was an ordinary character.
          *p = startp;
          c = '[';
          restart = true;
          break;
        }
      }
      if (restart) continue;
      *p += 2;
    } else if (c == '[' && pat.At(*p) == '=') {
      c = pat.At(++*p);
      if (c == '\0') return Rest::kMalformed;
      c = pat.At(++*p);
      if (c != '=' || pat.At(*p + 1) != ']') return Rest::kMalformed;
      *p += 2;
    } else if (c == '[' && pat.At(*p) == '.') {
      for (;;) {
        c = pat.At(++*p);
        if (c == '\0') return Rest::kMalformed;
        if (c == '.' && pat.At(*p + 1) == ']') break;
      }
      *p += 2;
    }
  } while (c != ']');
  return Rest::kClosed;
}

// A collating symbol "[.c.]" whose "[." is at p - 1: reads through ".]". Only one-character
// symbols exist in the C locale; false for any other (the element then fails).
bool ReadCollatingSymbol(const Pattern& pat, size_t* p, unsigned char* symbol) {
  const size_t start = *p;
  size_t length = 0;
  for (;;) {
    const unsigned char c = pat.At(++*p);
    if (c == '.' && pat.At(*p + 1) == ']') break;
    if (c == '\0') return false;
    ++length;
  }
  *p += 2;
  *symbol = pat.At(start + 1);
  return length == 1;
}

// A bracket expression starting at `open` (the '[') against the subject character `ch`, as
// glibc's fnmatch reads it in the C locale. On return *next is where the pattern goes on (just
// after the '[' when it is unterminated and stands for itself).
Element MatchBracket(const Pattern& pat, size_t open, unsigned char ch, size_t* next) {
  size_t p = open + 1;
  const bool negate = pat.At(p) == '!' || pat.At(p) == '^';
  if (negate) ++p;
  unsigned char c = pat.At(p++);
  bool matched = false;
  // Reaching the end of the pattern inside the brackets: the '[' is an ordinary character.
  const auto unterminated = [&] {
    *next = open + 1;
    return ch == '[' ? Element::kMatch : Element::kNoMatch;
  };
  // `first`: a ']' right after '[' or '[!' is an ordinary character.
  for (bool first = true; !matched; first = false) {
    // An item that may start a range "a-z": its character, then c is the one after it.
    bool may_start_range = false;
    unsigned char low = 0;
    if (c == ']' && !first) break;
    if (c == '\0') return unterminated();
    if (c == '[' && pat.At(p) == ':') {
      const size_t startp = p;
      char name[kMaxClassName + 1];
      size_t length = 0;
      bool is_class = true;
      for (;;) {
        if (length == kMaxClassName) return Element::kNoMatch;
        c = pat.At(++p);
        if (c == ':' && pat.At(p + 1) == ']') {
          p += 2;
          break;
        }
        if (c < 'a' || c >= 'z') {  // glibc's test: no class name holds a 'z'
          is_class = false;
          break;
        }
        name[length++] = static_cast<char>(c);
      }
      if (is_class) {
        bool known = false;
        matched = InClass(absl::string_view(name, length), ch, &known);
        if (!known) return Element::kNoMatch;
        if (!matched) c = pat.At(p++);
        continue;
      }
      p = startp;  // the '[' is an ordinary character
      c = '[';
    } else if (c == '[' && pat.At(p) == '=') {
      const size_t startp = p;
      const unsigned char equiv = pat.At(p + 1);
      if (equiv != '\0' && pat.At(p + 2) == '=' && pat.At(p + 3) == ']') {
        p += 4;
        matched = ch == equiv;
        if (!matched) c = pat.At(p++);
        continue;
      }
      p = startp;  // the '[' is an ordinary character
      c = '[';
    } else if (c == '[' && pat.At(p) == '.') {
      unsigned char symbol = 0;
      if (!ReadCollatingSymbol(pat, &p, &symbol)) return Element::kNoMatch;
      const bool is_range = pat.At(p) == '-' && pat.At(p + 1) != '\0';
      if (!is_range && ch == symbol) {
        matched = true;
        break;
      }
      low = symbol;
      c = pat.At(p++);
      may_start_range = true;
    } else if (c == '\\') {
      if (pat.At(p) == '\0') return unterminated();
      c = pat.At(p++);
    }
    if (!may_start_range) {
      const bool is_range = pat.At(p) == '-' && pat.At(p + 1) != '\0' && pat.At(p + 1) != ']';
      if (!is_range && c == ch) {
        matched = true;
        break;
      }
      low = c;
      c = pat.At(p++);
    }
    if (c == '-' && pat.At(p) != ']') {
      unsigned char high = pat.At(p++);
      if (high == '\\') high = pat.At(p++);
      if (high == '\0') return Element::kNoMatch;
      if (high == '[' && pat.At(p) == '.' && !ReadCollatingSymbol(pat, &p, &high)) {
        return Element::kNoMatch;
      }
      if (low <= ch && ch <= high) {
        matched = true;
        break;
      }
      c = pat.At(p++);
    }
  }
  if (!matched) {
    *next = p;
    return negate ? Element::kMatch : Element::kNoMatch;
  }
  switch (SkipRestOfBracket(pat, &p)) {
    case Rest::kClosed:
      break;
    case Rest::kUnterminated:
      return unterminated();
    case Rest::kMalformed:
      return Element::kNoMatch;
  }
  *next = p;
  return negate ? Element::kNoMatch : Element::kMatch;
}

// One non-star element at `p` against `ch`; *next is where the pattern goes on.
Element MatchOne(const Pattern& pat, size_t p, unsigned char ch, size_t* next) {
  const unsigned char c = pat.At(p);
  switch (c) {
    case '?':
      *next = p + 1;
      return Element::kMatch;
    case '\\':
      // A trailing backslash matches nothing.
      if (p + 1 >= pat.size()) return Element::kNoMatch;
      *next = p + 2;
      return pat.At(p + 1) == ch ? Element::kMatch : Element::kNoMatch;
    case '[':
      return MatchBracket(pat, p, ch, next);
    default:
      *next = p + 1;
      return c == ch ? Element::kMatch : Element::kNoMatch;
  }
}

}  // namespace

bool GlobMatch(absl::string_view pattern, absl::string_view subject) {
  const Pattern pat(pattern);
  size_t p = 0;
  size_t s = 0;
  // The last '*' seen: where the pattern resumes after it, and the subject position it has
  // absorbed up to. Only the last star needs revisiting: every other element takes exactly one
  // character, so trying a later split of an earlier star can never succeed where the last
  // star's cannot.
  bool have_star = false;
  size_t star_p = 0;
  size_t star_s = 0;
  while (true) {
    if (p < pat.size() && pattern[p] == '*') {
      while (p < pat.size() && pattern[p] == '*') ++p;
      if (p == pat.size()) return true;
      have_star = true;
      star_p = p;
      star_s = s;
      continue;
    }
    if (s == subject.size()) {
      if (p == pat.size()) return true;
    } else if (p < pat.size()) {
      size_t next = 0;
      if (MatchOne(pat, p, static_cast<unsigned char>(subject[s]), &next) == Element::kMatch) {
        p = next;
        ++s;
        continue;
      }
    }
    if (!have_star || star_s >= subject.size()) return false;
    ++star_s;
    p = star_p;
    s = star_s;
  }
}

bool HasGlobCharacters(absl::string_view text) {
  return text.find_first_of("*?[") != absl::string_view::npos;
}

}  // namespace hotring::hotplug::udevrules

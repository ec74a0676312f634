#include "hotplug/udev/hwdb_glob.h"

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/strings/ascii.h"

namespace hotring::hotplug::udev {
namespace {

// A set of bytes (one bit each).
class ByteSet {
 public:
  void Add(unsigned char c) { bits_[c >> 6] |= uint64_t{1} << (c & 63); }
  void AddRange(unsigned char from, unsigned char to) {
    for (unsigned c = from; c <= to; ++c) Add(static_cast<unsigned char>(c));
  }
  [[nodiscard]] bool Has(unsigned char c) const { return (bits_[c >> 6] >> (c & 63)) & 1; }

 private:
  std::array<uint64_t, 4> bits_{};
};

// The C locale's character classes; false when `name` is none of them.
bool AddClass(absl::string_view name, ByteSet& set) {
  bool (*test)(unsigned char) = nullptr;
  if (name == "alnum") test = absl::ascii_isalnum;
  if (name == "alpha") test = absl::ascii_isalpha;
  if (name == "blank") test = [](unsigned char c) { return c == ' ' || c == '\t'; };
  if (name == "cntrl") test = absl::ascii_iscntrl;
  if (name == "digit") test = absl::ascii_isdigit;
  if (name == "graph") test = absl::ascii_isgraph;
  if (name == "lower") test = absl::ascii_islower;
  if (name == "print") test = absl::ascii_isprint;
  if (name == "punct") test = absl::ascii_ispunct;
  if (name == "space") test = absl::ascii_isspace;
  if (name == "upper") test = absl::ascii_isupper;
  if (name == "xdigit") test = absl::ascii_isxdigit;
  if (test == nullptr) return false;
  for (unsigned c = 0; c < 256; ++c) {
    if (test(static_cast<unsigned char>(c))) set.Add(static_cast<unsigned char>(c));
  }
  return true;
}

// glibc's longest class name.
constexpr size_t kMaxClassName = 256;

// One element of a pattern.
struct Element {
  enum class Kind : uint8_t { kByte, kAny, kStar, kSet, kNever } kind;
  unsigned char byte = 0;
  bool negated = false;
  ByteSet set;

  [[nodiscard]] bool Matches(unsigned char c) const {
    switch (kind) {
      case Kind::kByte:
        return c == byte;
      case Kind::kAny:
        return true;
      case Kind::kSet:
        return set.Has(c) != negated;
      case Kind::kStar:
      case Kind::kNever:
        return false;
    }
    return false;
  }
};

// Reads the pattern one element at a time, as glibc reads it.
class Reader {
 public:
  explicit Reader(absl::string_view pattern) : p_(pattern) {}
  [[nodiscard]] bool Done() const { return i_ >= p_.size(); }
  [[nodiscard]] size_t position() const { return i_; }
  void Seek(size_t i) { i_ = i; }

  Element Next() {
    const unsigned char c = At(i_++);
    if (c == '*') return {.kind = Element::Kind::kStar};
    if (c == '?') return {.kind = Element::Kind::kAny};
    if (c == '\\') {
      // A trailing backslash matches nothing.
      if (Done()) return {.kind = Element::Kind::kNever};
      return {.kind = Element::Kind::kByte, .byte = At(i_++)};
    }
    if (c == '[') {
      const size_t after = i_;
      Element set{.kind = Element::Kind::kSet};
      if (ReadBracket(set)) return set;
      // An unterminated '[' is a plain character.
      i_ = after;
      if (set.kind == Element::Kind::kNever) return set;
      return {.kind = Element::Kind::kByte, .byte = '['};
    }
    return {.kind = Element::Kind::kByte, .byte = c};
  }

 private:
  [[nodiscard]] unsigned char At(size_t i) const {
    return i < p_.size() ? static_cast<unsigned char>(p_[i]) : '\0';
  }

  // The bracket expression after '['. False when it is unterminated (then `set.kind` may be
  // kNever: glibc gives up on the whole match for a backslash at the very end).
  bool ReadBracket(Element& set) {
    if (At(i_) == '!' || At(i_) == '^') {
      set.negated = true;
      ++i_;
    }
    bool first = true;
    for (;;) {
      if (Done()) return false;
      unsigned char c = At(i_++);
      if (c == ']' && !first) return true;
      first = false;
      if (c == '\\') {
        if (Done()) {
          set.kind = Element::Kind::kNever;
          return false;
        }
        c = At(i_++);
      } else if (c == '[' && At(i_) == ':') {
        // A class name is lower-case letters a-y (glibc's test) up to ":]"; anything else
        // makes the '[' a plain member.
        size_t end = i_ + 1;
        while (end < p_.size() && At(end) >= 'a' && At(end) < 'z' && end - i_ <= kMaxClassName) ++end;
        if (end - i_ > kMaxClassName) {
          set.kind = Element::Kind::kNever;
          return false;
        }
        if (At(end) == ':' && At(end + 1) == ']' && end + 1 < p_.size()) {
          if (!AddClass(p_.substr(i_ + 1, end - i_ - 1), set.set)) set.kind = Element::Kind::kNever;
          i_ = end + 2;
          continue;
        }
      } else if (c == '[' && At(i_) == '=' && i_ + 3 < p_.size() + 0 && At(i_ + 2) == '=' &&
                 At(i_ + 3) == ']') {
        // [=c=]: in the C locale, the character itself.
        c = At(i_ + 1);
        i_ += 4;
        set.set.Add(c);
        continue;
      }
      // A range "c-d" (a '-' before the closing ']' is a plain character).
      if (At(i_) == '-' && At(i_ + 1) != ']' && i_ + 1 < p_.size()) {
        ++i_;
        unsigned char end = At(i_++);
        if (end == '\\') {
          if (Done()) {
            set.kind = Element::Kind::kNever;
            return false;
          }
          end = At(i_++);
        }
        if (c <= end) set.set.AddRange(c, end);
        continue;
      }
      set.set.Add(c);
    }
  }

  absl::string_view p_;
  size_t i_ = 0;
};

absl::string_view UpToNul(absl::string_view s) {
  const size_t nul = s.find('\0');
  return nul == s.npos ? s : s.substr(0, nul);
}

}  // namespace

bool HwdbGlobMatch(absl::string_view pattern_text, absl::string_view subject_text) {
  const absl::string_view pattern = UpToNul(pattern_text);
  const absl::string_view subject = UpToNul(subject_text);
  Reader reader(pattern);
  size_t s = 0;
  // Where to go back to: the pattern just after the last '*' and the subject position it
  // was tried at.
  bool have_star = false;
  size_t star_pattern = 0;
  size_t star_subject = 0;
  for (;;) {
    if (reader.Done()) {
      if (s == subject.size()) return true;
    } else {
      const size_t before = reader.position();
      const Element e = reader.Next();
      if (e.kind == Element::Kind::kNever) return false;
      if (e.kind == Element::Kind::kStar) {
        have_star = true;
        star_pattern = reader.position();
        star_subject = s;
        continue;
      }
      if (s < subject.size() && e.Matches(static_cast<unsigned char>(subject[s]))) {
        ++s;
        continue;
      }
      (void)before;
    }
    // A mismatch: let the last '*' take one more character.
    if (!have_star || star_subject >= subject.size()) return false;
    ++star_subject;
    s = star_subject;
    reader.Seek(star_pattern);
  }
}

}  // namespace hotring::hotplug::udev

#include "hotplug/udevrules/rules_parser.h"

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug::udevrules {
namespace {

constexpr absl::string_view kWhitespace = " \t\n\r";

bool IsWhitespace(char c) { return kWhitespace.find(c) != absl::string_view::npos; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The operator at the start of `s` and its length; false when there is none.
bool ParseOperator(absl::string_view s, Op* op, size_t* length) {
  struct Entry {
    absl::string_view text;
    Op op;
  };
  static constexpr Entry kOps[] = {{"==", Op::kMatch}, {"!=", Op::kNoMatch}, {"+=", Op::kAdd},
                                   {"-=", Op::kRemove}, {"=", Op::kAssign},  {":=", Op::kAssignFinal}};
  for (const Entry& e : kOps) {
    if (s.substr(0, e.text.size()) == e.text) {
      *op = e.op;
      *length = e.text.size();
      return true;
    }
  }
  return false;
}

// Splits one rule (held in `buf`, which is rewritten in place by unescaping) into pairs.
bool SplitPairs(std::string& buf, std::vector<KeyValue>* pairs) {
  pairs->clear();
  char* const base = buf.data();
  const size_t size = buf.size();
  size_t i = 0;
  while (true) {
    while (i < size && (IsWhitespace(base[i]) || base[i] == ',')) ++i;
    if (i >= size) return true;
    const size_t key_begin = i;
    size_t key_end = i;
    for (;; ++key_end) {
      if (key_end >= size) return false;
      const char c = base[key_end];
      if (IsWhitespace(c) || c == '=' || c == '{') break;
      if (std::strchr("+-!:", c) != nullptr && key_end + 1 < size && base[key_end + 1] == '=') break;
    }
    KeyValue kv;
    kv.key = absl::string_view(base + key_begin, key_end - key_begin);
    size_t p = key_end;
    if (base[key_end] == '{') {
      const size_t attr_begin = key_end + 1;
      const void* close = std::memchr(base + attr_begin, '}', size - attr_begin);
      if (close == nullptr) return false;
      const size_t attr_end = static_cast<const char*>(close) - base;
      kv.attr = absl::string_view(base + attr_begin, attr_end - attr_begin);
      p = attr_end + 1;
    }
    while (p < size && IsWhitespace(base[p])) ++p;
    size_t op_length = 0;
    if (!ParseOperator(absl::string_view(base + p, size - p), &kv.op, &op_length)) return false;
    p += op_length;
    while (p < size && IsWhitespace(base[p])) ++p;
    // The value: "..." or e"...".
    const bool escaped = p < size && base[p] == 'e';
    if (escaped) ++p;
    if (p >= size || base[p] != '"') return false;
    ++p;
    const size_t value_begin = p;
    if (!escaped) {
      size_t out = p;
      for (;; ++p, ++out) {
        if (p >= size) return false;
        if (base[p] == '"') break;
        if (base[p] == '\\' && p + 1 < size && base[p + 1] == '"') ++p;
        base[out] = base[p];
      }
      kv.value = absl::string_view(base + value_begin, out - value_begin);
    } else {
      for (; p < size && base[p] != '"'; ++p) {
        if (base[p] == '\\') ++p;
      }
      if (p >= size) return false;
      std::string unescaped;
      if (!CUnescape(absl::string_view(base + value_begin, p - value_begin), &unescaped)) {
        return false;
      }
      // Never longer than its escaped form: rewrite in place.
      std::memcpy(base + value_begin, unescaped.data(), unescaped.size());
      kv.value = absl::string_view(base + value_begin, unescaped.size());
    }
    i = p + 1;
    pairs->push_back(kv);
  }
}

}  // namespace

absl::string_view OpText(Op op) {
  switch (op) {
    case Op::kMatch:
      return "==";
    case Op::kNoMatch:
      return "!=";
    case Op::kAdd:
      return "+=";
    case Op::kRemove:
      return "-=";
    case Op::kAssign:
      return "=";
    case Op::kAssignFinal:
      return ":=";
  }
  return "?";
}

std::string Diagnostic::Format() const { return absl::StrCat(file, ":", line, ": ", message); }

void Diagnostics::Add(absl::string_view file, unsigned line, Severity severity, std::string message) {
  if (severity == Severity::kError) ++errors_;
  if (severity == Severity::kWarning) ++warnings_;
  if (kept_.size() >= max_kept_) {
    ++dropped_;
    return;
  }
  kept_.push_back(Diagnostic{std::string(file), line, severity, std::move(message)});
}

bool CUnescape(absl::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\') {
      out->push_back(in[i]);
      continue;
    }
    if (++i >= in.size()) return false;
    const char c = in[i];
    switch (c) {
      case 'a': out->push_back('\a'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'v': out->push_back('\v'); break;
      case '\\': out->push_back('\\'); break;
      case '"': out->push_back('"'); break;
      case '\'': out->push_back('\''); break;
      case 's': out->push_back(' '); break;
      case 'x': {
        if (i + 2 >= in.size()) return false;
        const int a = HexValue(in[i + 1]);
        const int b = HexValue(in[i + 2]);
        if (a < 0 || b < 0) return false;
        const int v = a * 16 + b;
        if (v == 0) return false;  // no NUL in a value
        out->push_back(static_cast<char>(v));
        i += 2;
        break;
      }
      case 'u':
      case 'U': {
        const size_t digits = c == 'u' ? 4 : 8;
        if (i + digits >= in.size()) return false;
        uint32_t cp = 0;
        for (size_t k = 1; k <= digits; ++k) {
          const int h = HexValue(in[i + k]);
          if (h < 0) return false;
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        AppendUtf8(cp, out);
        i += digits;
        break;
      }
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
        if (i + 2 >= in.size()) return false;
        int v = 0;
        for (size_t k = 0; k < 3; ++k) {
          const char d = in[i + k];
          if (d < '0' || d > '7') return false;
          v = v * 8 + (d - '0');
        }
        if (v == 0 || v > 0377) return false;
        out->push_back(static_cast<char>(v));
        i += 2;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

FileEnd ForEachRule(absl::string_view file_name, absl::string_view text, Diagnostics& diagnostics,
                    absl::FunctionRef<void(const RuleText&)> rule) {
  std::string continuation;
  bool in_continuation = false;
  bool ignore_line = false;
  unsigned line_nr = 0;
  std::string buf;
  RuleText parsed;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = pos;
    while (eol < text.size() && text[eol] != '\n' && text[eol] != '\r' && text[eol] != '\0') ++eol;
    absl::string_view physical = text.substr(pos, eol - pos);
    pos = eol;
    if (pos < text.size()) {
      if (text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ++pos;
      ++pos;
    }
    if (physical.size() >= kUdevLineSize) {
      diagnostics.Add(file_name, line_nr + 1, Severity::kError,
                      absl::StrCat("Line longer than ", kUdevLineSize - 1,
                                   " bytes: the rest of the file is ignored, as udevd does"));
      return FileEnd::kLineTooLong;
    }
    ++line_nr;
    absl::string_view line = physical;
    while (!line.empty() && IsWhitespace(line.front())) line.remove_prefix(1);
    if (!line.empty() && line.front() == '#') continue;

    bool line_is_continuation = false;
    if (in_continuation && !ignore_line) {
      if (continuation.size() + line.size() >= kUdevLineSize) ignore_line = true;
      continuation.append(line.data(), line.size());
      if (!ignore_line) line_is_continuation = true;
    }
    absl::string_view current = line_is_continuation ? absl::string_view(continuation) : line;
    if (!current.empty() && current.back() == '\\') {
      if (ignore_line) continue;
      if (line_is_continuation) {
        continuation.pop_back();
      } else {
        continuation.assign(current.data(), current.size() - 1);
        in_continuation = true;
      }
      continue;
    }
    if (ignore_line) {
      diagnostics.Add(file_name, line_nr, Severity::kError, "Line is too long, ignored");
    } else if (!current.empty()) {
      buf.assign(current.data(), current.size());
      if (!SplitPairs(buf, &parsed.pairs)) {
        diagnostics.Add(file_name, line_nr, Severity::kError, "Invalid key/value pair, ignoring.");
      } else {
        parsed.line = line_nr;
        rule(parsed);
      }
    }
    continuation.clear();
    in_continuation = false;
    ignore_line = false;
  }
  return FileEnd::kComplete;
}

}  // namespace hotring::hotplug::udevrules

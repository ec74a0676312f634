#include "hotplug/replay/line_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hotring::hotplug::replay {
namespace {

bool IsBareChar(unsigned char c) {
  return c > 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '#';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string QuoteField(absl::string_view value) {
  bool bare = !value.empty();
  for (const char c : value) bare &= IsBareChar(static_cast<unsigned char>(c));
  if (bare) return std::string(value);
  std::string out = "\"";
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u >= 0x7f) {
          absl::StrAppendFormat(&out, "\\x%02x", u);
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

absl::StatusOr<std::vector<std::string>> SplitFields(absl::string_view line, size_t max_fields) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    if (fields.size() == max_fields) {
      return absl::InvalidArgumentError(absl::StrCat("more than ", max_fields, " fields"));
    }
    std::string field;
    if (line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          field += c;
          continue;
        }
        if (i == line.size()) break;
        const char e = line[i++];
        switch (e) {
          case '\\': field += '\\'; break;
          case '"': field += '"'; break;
          case 'n': field += '\n'; break;
          case 't': field += '\t'; break;
          case 'r': field += '\r'; break;
          case 'x': {
            const int hi = i < line.size() ? HexValue(line[i]) : -1;
            const int lo = i + 1 < line.size() ? HexValue(line[i + 1]) : -1;
            if (hi < 0 || lo < 0) return absl::InvalidArgumentError("\\x needs two hex digits");
            field += static_cast<char>(hi * 16 + lo);
            i += 2;
            break;
          }
          default:
            return absl::InvalidArgumentError(absl::StrCat("unknown escape \\", std::string(1, e)));
        }
      }
      if (!closed) return absl::InvalidArgumentError("unterminated quoted field");
      if (i < line.size() && line[i] != ' ' && line[i] != '\t') {
        return absl::InvalidArgumentError("no blank after a quoted field");
      }
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
        const auto c = static_cast<unsigned char>(line[i]);
        if (!IsBareChar(c)) {
          return absl::InvalidArgumentError(
              absl::StrFormat("character 0x%02x in a bare field (quote it)", c));
        }
        field += line[i++];
      }
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

std::vector<absl::string_view> SplitLines(absl::string_view text) {
  std::vector<absl::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace hotring::hotplug::replay

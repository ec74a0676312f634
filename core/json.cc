#include "core/json.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hotring {

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

void JsonObject::Key(absl::string_view key) {
  if (!body_.empty()) body_ += ", ";
  absl::StrAppend(&body_, JsonQuote(key), ": ");
}

JsonObject& JsonObject::String(absl::string_view key, absl::string_view value) {
  Key(key);
  body_ += JsonQuote(value);
  return *this;
}

JsonObject& JsonObject::Int(absl::string_view key, int64_t value) {
  Key(key);
  absl::StrAppend(&body_, value);
  return *this;
}

JsonObject& JsonObject::Uint(absl::string_view key, uint64_t value) {
  Key(key);
  absl::StrAppend(&body_, value);
  return *this;
}

JsonObject& JsonObject::Double(absl::string_view key, double value) {
  Key(key);
  if (std::isfinite(value)) {
    absl::StrAppend(&body_, absl::StrFormat("%.9g", value));
  } else {
    body_ += "null";
  }
  return *this;
}

JsonObject& JsonObject::Bool(absl::string_view key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::Raw(absl::string_view key, absl::string_view json) {
  Key(key);
  absl::StrAppend(&body_, json);
  return *this;
}

std::string JsonObject::Build() const { return absl::StrCat("{", body_, "}"); }

absl::StatusOr<double> JsonNumberField(absl::string_view json, absl::string_view key) {
  const std::string needle = absl::StrCat(JsonQuote(key), ":");
  const size_t at = json.find(needle);
  if (at == absl::string_view::npos) {
    return absl::NotFoundError(absl::StrCat("no field '", key, "' in: ", json));
  }
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(json.substr(at + needle.size()));
  size_t end = 0;
  while (end < rest.size() && (absl::ascii_isdigit(rest[end]) || rest[end] == '-' ||
                               rest[end] == '+' || rest[end] == '.' || rest[end] == 'e' ||
                               rest[end] == 'E')) {
    ++end;
  }
  double value;
  if (end == 0 || !absl::SimpleAtod(rest.substr(0, end), &value)) {
    return absl::InvalidArgumentError(absl::StrCat("field '", key, "' is not a number in: ", json));
  }
  return value;
}

}  // namespace hotring

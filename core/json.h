// The benchmarks' machine-readable output: a flat JSON object writer, and a reader for the
// numeric fields of such an object (the all-in-one `uds` bench reads its children's reports).
#ifndef HOTRING_CORE_JSON_H_
#define HOTRING_CORE_JSON_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring {

// Owns the text of one JSON object under construction; keys keep their insertion order.
class JsonObject {
 public:
  JsonObject& String(absl::string_view key, absl::string_view value);
  JsonObject& Int(absl::string_view key, int64_t value);
  JsonObject& Uint(absl::string_view key, uint64_t value);
  // Non-finite numbers are written as null (JSON has no NaN or infinity).
  JsonObject& Double(absl::string_view key, double value);
  JsonObject& Bool(absl::string_view key, bool value);
  // `json` must already be valid JSON (a nested object or array).
  JsonObject& Raw(absl::string_view key, absl::string_view json);

  // The object, on one line, without a trailing newline.
  [[nodiscard]] std::string Build() const;

 private:
  void Key(absl::string_view key);
  std::string body_;
};

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(absl::string_view text);

// The number stored under the top-level `key` of a flat object written by JsonObject.
absl::StatusOr<double> JsonNumberField(absl::string_view json, absl::string_view key);

}  // namespace hotring

#endif  // HOTRING_CORE_JSON_H_

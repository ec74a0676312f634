// The syntax of udev rules files, as systemd-udevd 252 reads them: physical lines end at '\n',
// '\r', "\r\n" or a NUL; leading whitespace is dropped; a line starting with '#' is a comment
// (also in the middle of a continued rule); a trailing '\' joins the next line (the rule then
// carries the number of its last line); a rule is a list of KEY[{ATTR}] OP "VALUE" pairs
// separated by whitespace and/or commas, VALUE in double quotes ('\"' for a quote, other
// backslashes kept) or e"..." with C escapes. A rule with a malformed pair is dropped whole and
// reported "FILE:LINE: Invalid key/value pair, ignoring."; the rest of the file still loads.
// What the keys mean is the compiler's business (compiled_rules.h).
#ifndef HOTRING_HOTPLUG_UDEVRULES_RULES_PARSER_H_
#define HOTRING_HOTPLUG_UDEVRULES_RULES_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udevrules {

// udev's buffer sizes, which bound lines and substituted values (udev-util.h).
inline constexpr size_t kUdevLineSize = 16384;
inline constexpr size_t kUdevPathSize = 1024;
inline constexpr size_t kUdevNameSize = 512;

enum class Op : uint8_t {
  kMatch,        // ==
  kNoMatch,      // !=
  kAdd,          // +=
  kRemove,       // -=
  kAssign,       // =
  kAssignFinal,  // :=
};

[[nodiscard]] absl::string_view OpText(Op op);

// How bad a problem is: udevd logs errors and warnings of rules files at these levels.
enum class Severity : uint8_t { kError, kWarning, kNotice };

// One problem in a rules file. Owns its strings.
struct Diagnostic {
  std::string file;
  unsigned line = 0;
  Severity severity = Severity::kError;
  std::string message;
  // "FILE:LINE: message".
  [[nodiscard]] std::string Format() const;
};

// Problems of a load, with a bound on how many are kept (a file of a million bad lines must not
// keep a million messages): the first `max_kept` are kept, the rest only counted.
class Diagnostics {
 public:
  explicit Diagnostics(size_t max_kept = 1000) : max_kept_(max_kept) {}
  void Add(absl::string_view file, unsigned line, Severity severity, std::string message);
  [[nodiscard]] const std::vector<Diagnostic>& kept() const { return kept_; }
  [[nodiscard]] size_t errors() const { return errors_; }
  [[nodiscard]] size_t warnings() const { return warnings_; }
  [[nodiscard]] size_t dropped() const { return dropped_; }

 private:
  size_t max_kept_;
  std::vector<Diagnostic> kept_;
  size_t errors_ = 0;
  size_t warnings_ = 0;
  size_t dropped_ = 0;
};

// One KEY{ATTR}OP"VALUE" of a rule, borrowing from the rule's text.
struct KeyValue {
  absl::string_view key;
  std::optional<absl::string_view> attr;  // present (maybe empty) when the key had braces
  Op op = Op::kMatch;
  absl::string_view value;  // quotes removed, escapes applied
};

// One rule: its line number (the last physical line of a continued rule) and its pairs, which
// borrow from a buffer valid only during the callback.
struct RuleText {
  unsigned line = 0;
  std::vector<KeyValue> pairs;
};

// What a file's reading stopped at, if anything.
enum class FileEnd : uint8_t {
  kComplete,
  // A physical line of kUdevLineSize bytes or more: udevd stops reading the file there (and
  // resolves none of its GOTOs); so does this reader, with an error.
  kLineTooLong,
};

// Reads `text` (the contents of `file_name`) and calls `rule` for each well-formed rule in
// order. Problems go to `diagnostics`.
FileEnd ForEachRule(absl::string_view file_name, absl::string_view text, Diagnostics& diagnostics,
                    absl::FunctionRef<void(const RuleText&)> rule);

// systemd's cunescape (the content of e"..."): \a \b \f \n \r \t \v \\ \" \' \s, \xHH, \ooo,
// \uHHHH, \UHHHHHHHH (as UTF-8). False on an unknown escape or one that makes a NUL.
[[nodiscard]] bool CUnescape(absl::string_view in, std::string* out);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_RULES_PARSER_H_

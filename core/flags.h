// FlagReader: walks a subcommand's `--name value`, `--name=value`, `--flag` and positional
// arguments. Every parse error is InvalidArgument naming the command and the flag; the CLI
// turns it into exit code 2.
#ifndef HOTRING_CORE_FLAGS_H_
#define HOTRING_CORE_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hotring {

// Borrows the argument list for the duration of the parse; owns the current flag's name.
class FlagReader {
 public:
  // `command` prefixes errors, e.g. "daemon" or "bench uds".
  FlagReader(absl::string_view command, const std::vector<std::string>& args)
      : command_(command), args_(args) {}

  // Advances to the next argument; false when none is left.
  [[nodiscard]] bool Next();
  // The current argument, without any "=value" part.
  [[nodiscard]] const std::string& flag() const { return flag_; }
  // True when the current argument is not a --flag (a positional argument, or "-").
  [[nodiscard]] bool positional() const { return positional_; }

  // The current flag's value (from "=value" or the next argument).
  absl::StatusOr<std::string> String();
  absl::StatusOr<int64_t> Int();
  // Int() within [min, max].
  absl::StatusOr<int64_t> IntInRange(int64_t min, int64_t max);
  absl::StatusOr<double> Double();
  // A duration in seconds (fractions allowed, not negative): "5", "0.25".
  absl::StatusOr<absl::Duration> Seconds();
  // Only an "=value" counts ("--wait" or "--wait=10"); nullopt when there is none.
  [[nodiscard]] std::optional<std::string> InlineValue();
  // A flag that takes no value must not be given one ("--json=1").
  absl::Status NoValue() const;

  // The error for an argument this command does not know.
  [[nodiscard]] absl::Status Unknown() const;
  // An InvalidArgument error prefixed with the command's name.
  [[nodiscard]] absl::Status Error(absl::string_view message) const;

 private:
  std::string command_;
  const std::vector<std::string>& args_;
  size_t next_ = 0;
  std::string flag_;
  bool positional_ = false;
  std::optional<std::string> inline_value_;
};

}  // namespace hotring

#endif  // HOTRING_CORE_FLAGS_H_

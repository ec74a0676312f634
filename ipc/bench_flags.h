// FlagReader: walks a bench command's `--name value`, `--name=value` and `--flag` arguments.
// Every parse error is InvalidArgument naming the command and the flag, which the CLI turns
// into exit code 2.
#ifndef HOTRING_IPC_BENCH_FLAGS_H_
#define HOTRING_IPC_BENCH_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::ipc {

// Borrows the argument list for the duration of the parse; owns the current flag's name.
class FlagReader {
 public:
  FlagReader(absl::string_view command, const std::vector<std::string>& args)
      : command_(command), args_(args) {}

  // Advances to the next argument; false when none is left. An argument that does not start
  // with "--" is reported by Unknown() like an unknown flag.
  [[nodiscard]] bool Next();
  // The current flag, without any "=value" part.
  [[nodiscard]] const std::string& flag() const { return flag_; }

  // The current flag's value (from "=value" or the next argument).
  absl::StatusOr<std::string> String();
  absl::StatusOr<int64_t> Int();
  absl::StatusOr<double> Double();
  // A flag that takes no value must not be given one ("--json=1").
  absl::Status NoValue() const;

  // The error for a flag this command does not know.
  [[nodiscard]] absl::Status Unknown() const;
  // An InvalidArgument error prefixed with the command's name.
  [[nodiscard]] absl::Status Error(absl::string_view message) const;

 private:
  std::string command_;
  const std::vector<std::string>& args_;
  size_t next_ = 0;
  std::string flag_;
  std::optional<std::string> inline_value_;
};

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_BENCH_FLAGS_H_

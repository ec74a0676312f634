#include "ipc/bench_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hotring::ipc {

bool FlagReader::Next() {
  if (next_ >= args_.size()) return false;
  const std::string& arg = args_[next_++];
  inline_value_.reset();
  const size_t eq = arg.find('=');
  if (absl::StartsWith(arg, "--") && eq != std::string::npos) {
    flag_ = arg.substr(0, eq);
    inline_value_ = arg.substr(eq + 1);
  } else {
    flag_ = arg;
  }
  return true;
}

absl::StatusOr<std::string> FlagReader::String() {
  if (inline_value_.has_value()) return *std::exchange(inline_value_, std::nullopt);
  if (next_ >= args_.size()) return Error(absl::StrCat(flag_, " needs a value"));
  return args_[next_++];
}

absl::StatusOr<int64_t> FlagReader::Int() {
  absl::StatusOr<std::string> text = String();
  if (!text.ok()) return text.status();
  int64_t value;
  if (!absl::SimpleAtoi(*text, &value)) {
    return Error(absl::StrCat(flag_, " needs an integer, got '", *text, "'"));
  }
  return value;
}

absl::StatusOr<double> FlagReader::Double() {
  absl::StatusOr<std::string> text = String();
  if (!text.ok()) return text.status();
  double value;
  if (!absl::SimpleAtod(*text, &value) || value != value) {
    return Error(absl::StrCat(flag_, " needs a number, got '", *text, "'"));
  }
  return value;
}

absl::Status FlagReader::NoValue() const {
  if (inline_value_.has_value()) return Error(absl::StrCat(flag_, " takes no value"));
  return absl::OkStatus();
}

absl::Status FlagReader::Unknown() const {
  return Error(absl::StrCat("unknown argument '", flag_, "' (try --help)"));
}

absl::Status FlagReader::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat("bench ", command_, ": ", message));
}

}  // namespace hotring::ipc

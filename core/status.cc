#include "core/status.h"

#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hotring {
namespace {
constexpr absl::string_view kErrnoPayload = "hotring/errno";
}  // namespace

absl::Status ErrnoStatus(absl::string_view call, int err) {
  absl::Status status = absl::ErrnoToStatus(err, call);
  status.SetPayload(kErrnoPayload, absl::Cord(absl::StrCat(err)));
  return status;
}

int StatusErrno(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrnoPayload);
  int err = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &err)) return 0;
  return err;
}

}  // namespace hotring

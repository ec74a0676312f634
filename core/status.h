// Errors are values: helpers that turn errno into absl::Status naming the failed call, and the
// two early-return forms that C++ cannot express as functions.
#ifndef HOTRING_CORE_STATUS_H_
#define HOTRING_CORE_STATUS_H_

#include <cerrno>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring {

// Status for a failed system call: "<call>: <strerror> (errno N)", with the code mapped from
// errno (ENOENT -> NotFound, EACCES -> PermissionDenied, ...).
[[nodiscard]] absl::Status ErrnoStatus(absl::string_view call, int err);

// Same, reading errno.
[[nodiscard]] inline absl::Status ErrnoStatus(absl::string_view call) {
  return ErrnoStatus(call, errno);
}

// For io_uring results: a negative result is -errno.
[[nodiscard]] inline absl::Status ResultStatus(absl::string_view call, int result) {
  return result < 0 ? ErrnoStatus(call, -result) : absl::OkStatus();
}

// The errno a Status was made from by ErrnoStatus, or 0.
[[nodiscard]] int StatusErrno(const absl::Status& status);

}  // namespace hotring

#define HOTRING_STATUS_CONCAT_INNER(a, b) a##b
#define HOTRING_STATUS_CONCAT(a, b) HOTRING_STATUS_CONCAT_INNER(a, b)

// Early return of a non-OK Status. A macro because a function cannot return from its caller.
#define HOTRING_RETURN_IF_ERROR(expr)              \
  do {                                             \
    ::absl::Status hotring_status_ = (expr);       \
    if (!hotring_status_.ok()) return hotring_status_; \
  } while (false)

// `HOTRING_ASSIGN_OR_RETURN(auto x, F());` declares x from a StatusOr or returns its error.
#define HOTRING_ASSIGN_OR_RETURN(lhs, expr)                                          \
  auto HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__) = (expr);                  \
  if (!HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__).ok())                      \
    return HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__).status();              \
  lhs = std::move(*HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__))

// The same two forms for coroutines, which must co_return.
#define HOTRING_CO_RETURN_IF_ERROR(expr)              \
  do {                                                \
    ::absl::Status hotring_status_ = (expr);          \
    if (!hotring_status_.ok()) co_return hotring_status_; \
  } while (false)

#define HOTRING_CO_ASSIGN_OR_RETURN(lhs, expr)                                       \
  auto HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__) = (expr);                  \
  if (!HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__).ok())                      \
    co_return HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__).status();           \
  lhs = std::move(*HOTRING_STATUS_CONCAT(hotring_statusor_, __LINE__))

#endif  // HOTRING_CORE_STATUS_H_

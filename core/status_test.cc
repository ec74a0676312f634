#include "core/status.h"

#include "gtest/gtest.h"

namespace hotring {
namespace {

TEST(StatusTest, ErrnoStatusNamesTheCallAndKeepsErrno) {
  const absl::Status s = ErrnoStatus("open(/nonexistent)", ENOENT);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("open(/nonexistent)"), absl::string_view::npos);
  EXPECT_EQ(StatusErrno(s), ENOENT);
  EXPECT_EQ(StatusErrno(absl::InternalError("x")), 0);
  EXPECT_EQ(ErrnoStatus("bind", EACCES).code(), absl::StatusCode::kPermissionDenied);
}

TEST(StatusTest, ResultStatus) {
  EXPECT_TRUE(ResultStatus("recv", 5).ok());
  EXPECT_EQ(StatusErrno(ResultStatus("recv", -EAGAIN)), EAGAIN);
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  HOTRING_ASSIGN_OR_RETURN(const int h, Half(x));
  HOTRING_ASSIGN_OR_RETURN(const int q, Half(h));
  return q;
}

absl::Status CheckEven(int x) {
  HOTRING_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusTest, EarlyReturnForms) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(3).ok());
}

}  // namespace
}  // namespace hotring

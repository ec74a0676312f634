#include "core/unique_fd.h"

#include <fcntl.h>

#include "gtest/gtest.h"

namespace hotring {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFdTest, ClosesOnDestructionAndMoves) {
  int raw;
  {
    UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = a.get();
    ASSERT_TRUE(IsOpen(raw));
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(UniqueFdTest, ReleaseGivesUpOwnership) {
  UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = a.Release();
  EXPECT_FALSE(a.valid());
  EXPECT_TRUE(IsOpen(raw));
  ::close(raw);
}

TEST(UniqueFdTest, MoveAssignClosesThePrevious) {
  UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int first = a.get();
  a = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_FALSE(IsOpen(first) && first != a.get());
}

}  // namespace
}  // namespace hotring

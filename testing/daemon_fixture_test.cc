// ScaledForEmulation: the factor the emulated guests set, and what an unusable value does.
#include <stdlib.h>

#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "testing/daemon_fixture.h"

namespace hotring::testing {
namespace {

// Each case sets the variable (nullptr: unset) and restores the process's own value after.
absl::Duration ScaledWith(const char* value, absl::Duration timeout) {
  const char* saved = std::getenv("HOTRING_TEST_TIME_SCALE");
  const std::string restore = saved != nullptr ? saved : "";
  if (value != nullptr) {
    ::setenv("HOTRING_TEST_TIME_SCALE", value, 1);
  } else {
    ::unsetenv("HOTRING_TEST_TIME_SCALE");
  }
  const absl::Duration scaled = ScaledForEmulation(timeout);
  if (saved != nullptr) {
    ::setenv("HOTRING_TEST_TIME_SCALE", restore.c_str(), 1);
  } else {
    ::unsetenv("HOTRING_TEST_TIME_SCALE");
  }
  return scaled;
}

TEST(ScaledForEmulationTest, MultipliesByTheGuestsFactor) {
  EXPECT_EQ(ScaledWith("10", absl::Seconds(120)), absl::Seconds(1200));
  EXPECT_EQ(ScaledWith("2.5", absl::Milliseconds(500)), absl::Milliseconds(1250));
}

// Only longer, never shorter: a factor below 1 or one that is not a number leaves it as it is.
TEST(ScaledForEmulationTest, UnsetOrUnusableIsOne) {
  EXPECT_EQ(ScaledWith(nullptr, absl::Seconds(30)), absl::Seconds(30));
  EXPECT_EQ(ScaledWith("", absl::Seconds(30)), absl::Seconds(30));
  EXPECT_EQ(ScaledWith("0.1", absl::Seconds(30)), absl::Seconds(30));
  EXPECT_EQ(ScaledWith("-3", absl::Seconds(30)), absl::Seconds(30));
  EXPECT_EQ(ScaledWith("ten", absl::Seconds(30)), absl::Seconds(30));
  EXPECT_EQ(ScaledWith("nan", absl::Seconds(30)), absl::Seconds(30));
}

}  // namespace
}  // namespace hotring::testing

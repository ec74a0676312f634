#include "core/flags.h"

#include "gtest/gtest.h"
#include "core/json.h"

namespace hotring::ipc {
namespace {

TEST(FlagReaderTest, ReadsSeparateAndInlineValues) {
  const std::vector<std::string> args = {"--queues", "3", "--seconds=0.5", "--json"};
  FlagReader flags("bench sysv", args);
  ASSERT_TRUE(flags.Next());
  EXPECT_EQ(flags.flag(), "--queues");
  absl::StatusOr<int64_t> queues = flags.Int();
  ASSERT_TRUE(queues.ok());
  EXPECT_EQ(*queues, 3);
  ASSERT_TRUE(flags.Next());
  EXPECT_EQ(flags.flag(), "--seconds");
  absl::StatusOr<double> seconds = flags.Double();
  ASSERT_TRUE(seconds.ok());
  EXPECT_DOUBLE_EQ(*seconds, 0.5);
  ASSERT_TRUE(flags.Next());
  EXPECT_EQ(flags.flag(), "--json");
  EXPECT_TRUE(flags.NoValue().ok());
  EXPECT_FALSE(flags.Next());
}

TEST(FlagReaderTest, MissingOrMalformedValuesAreInvalidArgument) {
  {
    const std::vector<std::string> args = {"--queues"};
    FlagReader flags("bench sysv", args);
    ASSERT_TRUE(flags.Next());
    const absl::StatusOr<int64_t> value = flags.Int();
    EXPECT_TRUE(absl::IsInvalidArgument(value.status()));
    EXPECT_NE(value.status().message().find("--queues needs a value"), absl::string_view::npos);
  }
  {
    const std::vector<std::string> args = {"--queues", "three"};
    FlagReader flags("bench sysv", args);
    ASSERT_TRUE(flags.Next());
    EXPECT_TRUE(absl::IsInvalidArgument(flags.Int().status()));
  }
  {
    const std::vector<std::string> args = {"--seconds", "nan"};
    FlagReader flags("bench sysv", args);
    ASSERT_TRUE(flags.Next());
    EXPECT_TRUE(absl::IsInvalidArgument(flags.Double().status()));
  }
  {
    const std::vector<std::string> args = {"--json=yes"};
    FlagReader flags("bench sysv", args);
    ASSERT_TRUE(flags.Next());
    EXPECT_TRUE(absl::IsInvalidArgument(flags.NoValue()));
  }
}

TEST(FlagReaderTest, UnknownNamesTheCommandAndTheArgument) {
  const std::vector<std::string> args = {"stray"};
  FlagReader flags("bench uds", args);
  ASSERT_TRUE(flags.Next());
  const absl::Status status = flags.Unknown();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_NE(status.message().find("bench uds"), absl::string_view::npos);
  EXPECT_NE(status.message().find("'stray'"), absl::string_view::npos);
}

TEST(JsonTest, ObjectRoundTripsNumbers) {
  const std::string json = JsonObject()
                               .String("bench", "sysv \"quoted\"\n")
                               .Int("queues", -2)
                               .Uint("total", 123456789012ull)
                               .Double("seconds", 0.25)
                               .Bool("pinned", true)
                               .Raw("list", "[1, 2]")
                               .Build();
  EXPECT_EQ(json,
            "{\"bench\": \"sysv \\\"quoted\\\"\\n\", \"queues\": -2, \"total\": 123456789012, "
            "\"seconds\": 0.25, \"pinned\": true, \"list\": [1, 2]}");
  absl::StatusOr<double> total = JsonNumberField(json, "total");
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(*total, 123456789012.0);
  absl::StatusOr<double> queues = JsonNumberField(json, "queues");
  ASSERT_TRUE(queues.ok());
  EXPECT_EQ(*queues, -2);
  EXPECT_TRUE(absl::IsNotFound(JsonNumberField(json, "missing").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(JsonNumberField(json, "bench").status()));
}

TEST(JsonTest, NonFiniteNumbersBecomeNull) {
  EXPECT_EQ(JsonObject().Double("x", 1.0 / 0.0).Build(), "{\"x\": null}");
}

}  // namespace
}  // namespace hotring::ipc

#include <string>

#include "absl/strings/str_cat.h"
#include "core/command_table.h"
#include "core/json.h"
#include "gtest/gtest.h"
#include "ipc/bench_cli.h"

namespace hotring::ipc {
namespace {

// Each bench's flag table answers --help (exit 0, nothing run) and refuses what it does not
// know (exit 2); the parsing itself is FlagSet's (core/flags_test.cc).
TEST(IpcBenchFlagsTest, EveryBenchAnswersHelpAndRefusesUnknownFlags) {
  ASSERT_EQ(IpcBenches().size(), 5u);
  for (const Command& bench : IpcBenches()) {
    EXPECT_EQ(bench.group, "bench");
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(bench.run({"--help"}), 0) << bench.name;
    const std::string help = ::testing::internal::GetCapturedStdout();
    EXPECT_NE(help.find(absl::StrCat("usage: hotring bench ", bench.name, " ")), std::string::npos)
        << help;
    EXPECT_NE(help.find("--json"), std::string::npos) << help;
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(bench.run({"--bogus"}), 2) << bench.name;
    const std::string error = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(error.find(absl::StrCat("bench ", bench.name, ": unknown argument '--bogus'")),
              std::string::npos)
        << error;
  }
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

#include "hotplug/replay/line_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(QuoteField, BareWhenSafeQuotedOtherwise) {
  EXPECT_EQ(QuoteField("/devices/pci0000:00"), "/devices/pci0000:00");
  EXPECT_EQ(QuoteField(""), "\"\"");
  EXPECT_EQ(QuoteField("a b"), "\"a b\"");
  EXPECT_EQ(QuoteField("x#y"), "\"x#y\"");
  EXPECT_EQ(QuoteField("MAJOR=8\nMINOR=0\n"), "\"MAJOR=8\\nMINOR=0\\n\"");
  EXPECT_EQ(QuoteField(std::string("\x01\"\\\xff", 4)), "\"\\x01\\\"\\\\\\xff\"");
}

TEST(SplitFields, RoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string line = "kw " + QuoteField(all) + " " + QuoteField("") + " bare";
  absl::StatusOr<std::vector<std::string>> f = SplitFields(line, 10);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(*f, ElementsAre("kw", all, "", "bare"));
}

TEST(SplitFields, RejectsMalformedLines) {
  EXPECT_THAT(SplitFields("a \"open", 5).status().message(), HasSubstr("unterminated"));
  EXPECT_THAT(SplitFields("a \"\\q\"", 5).status().message(), HasSubstr("unknown escape"));
  EXPECT_THAT(SplitFields("a \"\\x4\"", 5).status().message(), HasSubstr("two hex digits"));
  EXPECT_THAT(SplitFields("a\"b\"", 5).status().message(), HasSubstr("bare field"));
  EXPECT_THAT(SplitFields("\"a\"b", 5).status().message(), HasSubstr("no blank"));
  EXPECT_THAT(SplitFields("a b c", 2).status().message(), HasSubstr("more than 2 fields"));
}

TEST(SplitLines, LastLineWithoutNewline) {
  EXPECT_THAT(SplitLines("a\n\nb"), ElementsAre("a", "", "b"));
  EXPECT_THAT(SplitLines("a\n"), ElementsAre("a"));
  EXPECT_TRUE(SplitLines("").empty());
}

}  // namespace
}  // namespace hotring::hotplug::replay

#include "hotplug/replay/diff.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::replay {
namespace {

using ::testing::HasSubstr;

TEST(UnifiedDiff, EqualTextsHaveNoDiff) { EXPECT_EQ(UnifiedDiff("a", "x\ny\n", "b", "x\ny\n"), ""); }

TEST(UnifiedDiff, ChangedLineWithContext) {
  const std::string old_text = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  const std::string new_text = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
  EXPECT_EQ(UnifiedDiff("golden", old_text, "replay", new_text),
            "--- golden\n+++ replay\n"
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST(UnifiedDiff, AddedAndRemovedLinesInTwoHunks) {
  std::string old_text, new_text;
  for (int i = 0; i < 20; ++i) {
    if (i != 2) absl::StrAppend(&old_text, i, "\n");
    absl::StrAppend(&new_text, i, "\n");
    if (i == 15) absl::StrAppend(&old_text, "gone\n");
  }
  const std::string diff = UnifiedDiff("a", old_text, "b", new_text);
  EXPECT_THAT(diff, HasSubstr("@@ -1,5 +1,6 @@\n 0\n 1\n+2\n 3\n 4\n"));
  EXPECT_THAT(diff, HasSubstr(" 15\n-gone\n 16\n"));
}

TEST(UnifiedDiff, OnlyTheLastNewline) {
  EXPECT_THAT(UnifiedDiff("a", "x\n", "b", "x"), HasSubstr("last newline"));
}

TEST(UnifiedDiff, LargeDifferencesStayBounded) {
  std::string old_text, new_text;
  for (int i = 0; i < 10000; ++i) {
    absl::StrAppend(&old_text, "o", i, "\n");
    absl::StrAppend(&new_text, "n", i, "\n");
  }
  const std::string diff = UnifiedDiff("a", old_text, "b", new_text);
  EXPECT_THAT(diff, HasSubstr("-o9999\n"));
  EXPECT_THAT(diff, HasSubstr("+n0\n"));
}

}  // namespace
}  // namespace hotring::hotplug::replay

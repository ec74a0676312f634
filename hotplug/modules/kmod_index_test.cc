#include "hotplug/modules/kmod_index.h"

#include <fnmatch.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/modules/kmod_index_writer.h"

namespace hotring::hotplug::modules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<std::string> Wild(const KmodIndex& index, const std::string& key) {
  std::vector<IndexValue> values;
  index.SearchWild(key, &values);
  std::vector<std::string> out;
  for (const IndexValue& v : values) out.emplace_back(v.value);
  return out;
}

KmodIndex Build(const std::vector<std::tuple<std::string, std::string, uint32_t>>& entries) {
  KmodIndexWriter writer;
  for (const auto& [k, v, p] : entries) EXPECT_TRUE(writer.Insert(k, v, p));
  absl::StatusOr<KmodIndex> index = KmodIndex::FromBytes(writer.Serialize());
  EXPECT_TRUE(index.ok()) << index.status();
  return std::move(*index);
}

TEST(KmodIndexTest, ExactLookupReturnsTheFirstValue) {
  const KmodIndex index = Build({{"ext4", "kernel/fs/ext4.ko: a.ko", 0},
                                 {"ext2", "kernel/fs/ext2.ko:", 1},
                                 {"ext", "kernel/fs/ext.ko:", 2},
                                 {"ext4", "second", 5}});
  EXPECT_EQ(index.Find("ext4"), "kernel/fs/ext4.ko: a.ko");
  EXPECT_EQ(index.Find("ext"), "kernel/fs/ext.ko:");
  EXPECT_EQ(index.Find("ext3"), std::nullopt);
  EXPECT_EQ(index.Find("ex"), std::nullopt);
  EXPECT_EQ(index.Find("ext44"), std::nullopt);
}

TEST(KmodIndexTest, WildcardSearchFindsEveryMatchInPriorityOrder) {
  const KmodIndex index = Build({{"pci:v00008086d*sv*sd*bc*sc*i*", "e1000e", 3},
                                 {"pci:v*d*sv*sd*bc02sc00i*", "netclass", 1},
                                 {"pci:v00008086d00001234sv*", "exact", 2},
                                 {"pci:v0000808?d*", "question", 4},
                                 {"pci:v0000808[0-5]d*", "bracket", 5},
                                 {"pci:v0000808[!6]d*", "negated", 6},
                                 {"usb:*", "usb", 0}});
  EXPECT_THAT(Wild(index, "pci:v00008086d00001234sv00000000sd00000000bc02sc00i00"),
              ElementsAre("netclass", "exact", "e1000e", "question"));
  EXPECT_THAT(Wild(index, "pci:v00008085d00000000sv0sd0bc03sc00i00"),
              ElementsAre("question", "bracket", "negated"));
  EXPECT_THAT(Wild(index, "acpi:PNP0A03:"), IsEmpty());
  EXPECT_THAT(Wild(index, "usb:v1d6b"), ElementsAre("usb"));
}

// The walk drops subtrees that cannot match; it must never drop a match fnmatch would make.
// Random patterns over a small alphabet (literals, '*', '?', brackets with ranges and
// negation, backslashes, unclosed brackets) against random keys, checked by brute force.
TEST(KmodIndexTest, WildcardSearchAgreesWithFnmatchOnRandomPatterns) {
  std::mt19937 rng(12345);
  const std::string atoms[] = {"a", "b", "c", "-", ":", "*", "?", "[ab]", "[!a]", "[a-c]",
                               "[]a]", "\\*", "[", "ab", "*c", "[^b]"};
  auto random_pattern = [&]() {
    std::string p;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) p += atoms[rng() % std::size(atoms)];
    return p;
  };
  for (int round = 0; round < 40; ++round) {
    KmodIndexWriter writer;
    std::vector<std::string> patterns;
    for (int i = 0; i < 60; ++i) {
      patterns.push_back(random_pattern());
      ASSERT_TRUE(writer.Insert(patterns.back(), std::to_string(i), static_cast<uint32_t>(i)));
    }
    absl::StatusOr<KmodIndex> index = KmodIndex::FromBytes(writer.Serialize());
    ASSERT_TRUE(index.ok());
    for (int k = 0; k < 200; ++k) {
      std::string key;
      const int n = static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) key += "abc-:*[]"[rng() % 8];
      std::vector<std::string> expected;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (::fnmatch(patterns[i].c_str(), key.c_str(), 0) == 0) expected.push_back(std::to_string(i));
      }
      std::vector<std::string> got = Wild(*index, key);
      std::sort(got.begin(), got.end());
      std::sort(expected.begin(), expected.end());
      // kmod's walk matches literally up to the first wildcard, so a key containing pattern
      // characters may be matched differently from plain fnmatch; only plain keys compare.
      if (key.find_first_of("*[]") != std::string::npos) continue;
      ASSERT_EQ(got, expected) << "key " << key;
    }
  }
}

TEST(KmodIndexTest, EqualPrioritiesComeOutInReverseDiscoveryOrder) {
  // modules.builtin.alias.bin gives every value priority 0.
  const KmodIndex index = Build({{"platform:a*", "first", 0}, {"platform:ab*", "second", 0}});
  EXPECT_THAT(Wild(index, "platform:abc"), ElementsAre("second", "first"));
}

TEST(KmodIndexTest, RejectsBadHeadersAndSurvivesCorruptNodes) {
  EXPECT_FALSE(KmodIndex::FromBytes("short").ok());
  EXPECT_FALSE(KmodIndex::FromBytes(std::string(16, 'x')).ok());
  KmodIndexWriter writer;
  ASSERT_TRUE(writer.Insert("pci:v*d*", "m", 0));
  ASSERT_TRUE(writer.Insert("pci:v1234", "n", 1));
  EXPECT_FALSE(writer.Insert("caf\xc3\xa9", "m", 0));  // 7-bit keys only
  const std::string good = writer.Serialize();
  // Every truncation is refused at open: the root is written last, so a file cut anywhere has
  // lost it (or its child table).
  for (size_t len = 0; len < good.size(); ++len) {
    absl::StatusOr<KmodIndex> index = KmodIndex::FromBytes(good.substr(0, len));
    EXPECT_TRUE(absl::IsInvalidArgument(index.status())) << "cut at " << len;
  }
  // Every single-byte corruption: refused, or no crash and no read outside the image.
  size_t refused = 0;
  for (size_t at = 8; at < good.size(); ++at) {
    for (const char byte : {'\0', '\x7f', '\xff', '*'}) {
      std::string bad = good;
      bad[at] = byte;
      absl::StatusOr<KmodIndex> index = KmodIndex::FromBytes(bad);
      if (!index.ok()) {
        ++refused;
        continue;
      }
      (void)Wild(*index, "pci:v1234d5");
      (void)index->Find("pci:v1234");
      std::string dump;
      index->Dump("alias ", &dump);
    }
  }
  EXPECT_GT(refused, 0u);  // a root offset out of the file is caught at open
  // A node whose child points back at itself: the walk stops.
  const std::string cyclic = std::string("\xb0\x07\xf4\x57\x00\x02\x00\x01", 8) +
                             std::string("\x20\x00\x00\x0c", 4) +  // root: children at 12
                             std::string("**", 2) + std::string("\x20\x00\x00\x0c", 4);
  absl::StatusOr<KmodIndex> loop = KmodIndex::FromBytes(cyclic);
  ASSERT_TRUE(loop.ok());
  EXPECT_THAT(Wild(*loop, "anything"), IsEmpty());
  EXPECT_EQ(loop->Find("****"), std::nullopt);
  std::string dump;
  loop->Dump("", &dump);  // ends: the walk's budgets and its depth bound it
  EXPECT_EQ(dump, "");
}

// A node of many values shared by every entry of a child table: a corrupt image that would print
// each value once per path. The dump prints no more value bytes than the image holds.
TEST(KmodIndexTest, DumpOfASharedValueNodeStaysWithinTheImage) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  constexpr uint32_t kChildren = 0x20000000;
  constexpr uint32_t kValues = 0x40000000;
  const uint32_t shared = 12 + 2 + 255 * 4;
  std::string image = std::string("\xb0\x07\xf4\x57\x00\x02\x00\x01", 8) + be32(kChildren | 12);
  image += "\x01\xff";
  for (int i = 0; i < 255; ++i) image += be32(kValues | shared);
  image += be32(200);
  const std::string value(20, 'v');
  for (int i = 0; i < 200; ++i) image += be32(0) + value + std::string(1, '\0');
  absl::StatusOr<KmodIndex> index = KmodIndex::FromBytes(image);
  ASSERT_TRUE(index.ok()) << index.status();
  std::string dump;
  index->Dump("", &dump);
  const std::vector<absl::string_view> lines = absl::StrSplit(dump, '\n', absl::SkipEmpty());
  // The first path's 200 values come out whole; then the image's value bytes are spent.
  ASSERT_GE(lines.size(), 200u);
  EXPECT_LE(lines.size() * value.size(), image.size());
  EXPECT_EQ(lines[0], "\x01 " + value);
  EXPECT_EQ(lines[199], "\x01 " + value);
  EXPECT_EQ(lines[200], "\x02 " + value);
}

// Child tables '*' and '+' that both point back at the root: a query of '+'s has a number of
// matching paths exponential in the pattern's length. The search ends within its budgets.
TEST(KmodIndexTest, WildSearchOfACyclicWildcardTableEnds) {
  const std::string root = std::string("\x60\x00\x00\x0c", 4);  // values and children, at 12
  const std::string image = std::string("\xb0\x07\xf4\x57\x00\x02\x00\x01", 8) + root +
                            std::string("*+", 2) + root + root +
                            std::string("\x00\x00\x00\x01\x00\x00\x00\x00v\0", 10);
  absl::StatusOr<KmodIndex> index = KmodIndex::FromBytes(image);
  ASSERT_TRUE(index.ok()) << index.status();
  // Ends, with what the budgets let it find.
  const std::vector<std::string> values = Wild(*index, "++++++++");
  EXPECT_LE(values.size(), image.size() / 5 + 1);
}

// Corrupt images of 1 MB whose every visit would read the whole of something again: before the
// walker's budget of bytes, each took hours (the work grew with the square of the size).
TEST(KmodIndexTest, CorruptImagesCostTimeLinearInTheirSize) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  const std::string header("\xb0\x07\xf4\x57\x00\x02\x00\x01", 8);
  constexpr uint32_t kPrefix = 0x80000000;
  constexpr uint32_t kValues = 0x40000000;
  constexpr uint32_t kChildren = 0x20000000;
  constexpr size_t kRecords = 200000;  // empty values: a priority and a NUL each
  auto records = [&] {
    std::string r = be32(kRecords);
    for (size_t i = 0; i < kRecords; ++i) r += be32(0) + std::string(1, '\0');
    return r;
  };
  // A node of many values whose children '*' and '+' are itself: every path re-reads them.
  const uint32_t self = kValues | kChildren | 12;
  const std::string looped = header + be32(self) + "*+" + be32(self) + be32(self) + records();
  absl::StatusOr<KmodIndex> index = KmodIndex::FromBytes(looped);
  ASSERT_TRUE(index.ok()) << index.status();
  std::string dump;
  index->Dump("", &dump);
  EXPECT_LE(static_cast<size_t>(std::count(dump.begin(), dump.end(), '\n')),
            looped.size() / 5 + 1);
  const std::vector<std::string> found = Wild(*index, "++++++++");
  EXPECT_THAT(found, Not(IsEmpty()));
  // A node whose '*' and '?' are itself and whose other 253 children are one leaf with a
  // prefix of half the image: every visit decodes that prefix again.
  const uint32_t leaf_at = 12 + 2 + 255 * 4;
  std::string table;
  for (unsigned ch = 1; ch <= 255; ++ch) {
    table += (ch == '*' || ch == '?') ? be32(kChildren | 12) : be32(kPrefix | leaf_at);
  }
  const std::string wide = header + be32(kChildren | 12) + "\x01\xff" + table +
                           std::string(500000, 'p') + std::string(1, '\0');
  absl::StatusOr<KmodIndex> wide_index = KmodIndex::FromBytes(wide);
  ASSERT_TRUE(wide_index.ok()) << wide_index.status();
  EXPECT_THAT(Wild(*wide_index, "abc"), IsEmpty());
  std::string wide_dump;
  wide_index->Dump("", &wide_dump);
  EXPECT_EQ(wide_dump, "");
}

// What each damaged file says: the module index logs it with the path.
TEST(KmodIndexTest, SaysWhyAnIndexIsRefused) {
  KmodIndexWriter writer;
  ASSERT_TRUE(writer.Insert("ext4", "kernel/fs/ext4.ko:", 0));
  const std::string good = writer.Serialize();
  auto problem = [](std::string bytes) {
    return std::string(KmodIndex::FromBytes(std::move(bytes)).status().message());
  };
  EXPECT_EQ(problem(""), "empty file");
  EXPECT_EQ(problem(good.substr(0, 7)), "shorter than its header (7 bytes)");
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_EQ(problem(magic), "not a kmod index (magic 5807f457)");
  std::string version = good;
  version[5] = 3;
  EXPECT_EQ(problem(version), "unsupported kmod index version 3");
  EXPECT_THAT(problem(good.substr(0, good.size() - 1)), ::testing::StartsWith("truncated"));
  // depmod's index of nothing: the header and a root of no bytes at the end of the file.
  absl::StatusOr<KmodIndex> empty = KmodIndex::FromBytes(KmodIndexWriter().Serialize());
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->size(), 12u);
  EXPECT_EQ(empty->Find("ext4"), std::nullopt);
}

TEST(KmodIndexTest, DumpListsEveryValueInKmodsOrder) {
  // A node's values before its children, children in byte order, values as stored (depmod
  // keeps them by priority): kmod_dump_index's order, which `modprobe -c` prints.
  const KmodIndex index = Build({{"pci:v2*", "two", 5},
                                 {"pci:v1*", "one_b", 3},
                                 {"pci:v1*", "one_a", 1},
                                 {"pci:v", "short", 0},
                                 {"acpi:X", "acpi", 9}});
  std::string dump;
  index.Dump("alias ", &dump);
  EXPECT_EQ(dump,
            "alias acpi:X acpi\n"
            "alias pci:v short\n"
            "alias pci:v1* one_a\n"
            "alias pci:v1* one_b\n"
            "alias pci:v2* two\n");
}

// kmod takes keys of any length; the bounds never shorten a good index's answers. Keys of
// 1,450 characters that branch after 1,400 (the dump and the search once stopped at 1,024).
TEST(KmodIndexTest, LongKeysAreDumpedAndFoundWhole) {
  const std::string key(2000, 'k');
  const std::string common(1400, 'p');
  const KmodIndex index = Build({{key, "long", 0},
                                 {"short", "s", 0},
                                 {common + "a" + std::string(49, 'x'), "a", 0},
                                 {common + "b" + std::string(49, 'y'), "b", 0},
                                 {common + "c*", "c", 0}});
  std::string dump;
  index.Dump("alias ", &dump);
  EXPECT_EQ(dump, "alias " + key + " long\n" + "alias " + common + "a" + std::string(49, 'x') +
                      " a\n" + "alias " + common + "b" + std::string(49, 'y') + " b\n" +
                      "alias " + common + "c* c\n" + "alias short s\n");
  EXPECT_THAT(Wild(index, common + "c" + std::string(300, 'z')), ElementsAre("c"));
  EXPECT_THAT(Wild(index, common + "b" + std::string(49, 'y')), ElementsAre("b"));
}

TEST(KmodIndexTest, OpenMapsAFileAndReportsMissingOnes) {
  EXPECT_TRUE(absl::IsNotFound(KmodIndex::Open("/nonexistent/modules.alias.bin").status()));
}

}  // namespace
}  // namespace hotring::hotplug::modules

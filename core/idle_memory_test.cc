#include "core/idle_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace hotring {
namespace {

TEST(ReleaseIfEmptyTest, GivesBackWhatADrainedContainerKept) {
  absl::flat_hash_map<uint64_t, uint64_t> table;
  std::vector<std::string> list;
  for (uint64_t i = 0; i < 5000; ++i) {
    table.emplace(i, i);
    list.push_back("x");
  }
  EXPECT_FALSE(ReleaseIfEmpty(table));  // not empty: kept as it is
  EXPECT_FALSE(ReleaseIfEmpty(list));
  EXPECT_EQ(table.size(), 5000u);
  EXPECT_EQ(list.size(), 5000u);
  for (uint64_t i = 0; i < 5000; ++i) table.erase(i);
  list.clear();
  EXPECT_GE(table.capacity(), 5000u);  // drained, but the room stays
  EXPECT_GE(list.capacity(), 5000u);
  EXPECT_TRUE(ReleaseIfEmpty(table));
  EXPECT_TRUE(ReleaseIfEmpty(list));
  EXPECT_EQ(table.capacity(), 0u);
  EXPECT_EQ(list.capacity(), 0u);
  table.emplace(1, 2);  // and usable again
  EXPECT_EQ(table.at(1), 2u);
}

TEST(ExecutableMappingsOfTest, KeepsOnlyTheFilesExecutablePrivateMappings) {
  const std::string maps =
      "00400000-007c9000 r-xp 00000000 fe:00 10996604   /bin/hotring\n"
      "007c9000-007d5000 r--p 003c8000 fe:00 10996604   /bin/hotring\n"
      "007d5000-007d8000 rw-p 003d4000 fe:00 10996604   /bin/hotring\n"
      "39578000-395bf000 rw-p 00000000 00:00 0          [heap]\n"
      "7f0000000000-7f0000010000 r-xp 00000000 fe:00 42 /lib/other.so\n"
      "7f0000020000-7f0000030000 r-xs 00000000 fe:00 10996604 /bin/hotring\n"
      "7f0000040000-7f0000050000 r-xp 00001000 fe:01 10996604 /other-device\n"
      "garbage line\n"
      "\n";
  EXPECT_EQ(ExecutableMappingsOf(maps, 0xfe, 0, 10996604),
            (std::vector<AddressRange>{{0x400000, 0x7c9000}}));
  EXPECT_TRUE(ExecutableMappingsOf(maps, 0xfe, 0, 7).empty());
}

// Resident KiB of the mappings of our own text, from /proc/self/smaps.
int64_t TextResidentKib(const IdleMemory& memory) {
  const int fd = ::open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  std::string smaps;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) smaps.append(buffer, n);
  ::close(fd);
  int64_t total = 0;
  bool in_text = false;
  for (absl::string_view line : absl::StrSplit(smaps, '\n')) {
    const absl::string_view first = line.substr(0, line.find(' '));
    if (!first.empty() && first.back() != ':' && first.find('-') != absl::string_view::npos) {
      uint64_t start = 0;
      (void)absl::SimpleHexAtoi(first.substr(0, first.find('-')), &start);
      in_text = false;
      for (const AddressRange& r : memory.text()) in_text = in_text || r.start == start;
    } else if (in_text && absl::ConsumePrefix(&line, "Rss:")) {
      int64_t kib = 0;
      (void)absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kib);
      total += kib;
    }
  }
  return total;
}

TEST(IdleMemoryTest, DropsTheTextMappingsAndTheProgramStillRuns) {
  const IdleMemory memory = IdleMemory::ForThisProgram();
  ASSERT_FALSE(memory.text().empty());
  const int64_t before = TextResidentKib(memory);
  ASSERT_GT(before, 0);
  EXPECT_GT(memory.Release(), 0u);
  const int64_t after = TextResidentKib(memory);
  // What runs between the release and the reading (the reading itself) faults some back in.
  EXPECT_LT(after, before);
  // And the code is all still there.
  EXPECT_EQ(ExecutableMappingsOf("00400000-00401000 r-xp 0 01:02 3 x\n", 1, 2, 3).size(), 1u);
}

}  // namespace
}  // namespace hotring

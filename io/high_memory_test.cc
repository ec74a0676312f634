#include "io/high_memory.h"

#include "gtest/gtest.h"

namespace hotring::io {
namespace {

// Excerpts of /proc/meminfo as kernels print them.
constexpr absl::string_view kArmHighMem =
    "MemTotal:        1030436 kB\n"
    "MemFree:          981304 kB\n"
    "HighTotal:        270336 kB\n"
    "HighFree:         262108 kB\n"
    "LowTotal:         760100 kB\n";
constexpr absl::string_view kArmLowOnly =
    "MemTotal:         738604 kB\n"
    "HighTotal:             0 kB\n"
    "HighFree:              0 kB\n"
    "LowTotal:         738604 kB\n";
constexpr absl::string_view kNoHighMemConfig =
    "MemTotal:        4018232 kB\n"
    "MemFree:         1203344 kB\n"
    "SwapTotal:             0 kB\n";

TEST(HighMemoryTest, A32BitKernelWithHighMemoryIsUnsafe) {
  EXPECT_TRUE(PinnedPagesMayBeHighMemory(kArmHighMem, 4));
}

TEST(HighMemoryTest, A32BitKernelWhoseRamFitsTheDirectMapIsSafe) {
  EXPECT_FALSE(PinnedPagesMayBeHighMemory(kArmLowOnly, 4));
}

TEST(HighMemoryTest, AKernelWithoutHighMemorySupportIsSafe) {
  // A 32-bit process on a 64-bit kernel, or a 32-bit kernel without CONFIG_HIGHMEM.
  EXPECT_FALSE(PinnedPagesMayBeHighMemory(kNoHighMemConfig, 4));
}

TEST(HighMemoryTest, A64BitProcessNeverSeesHighMemory) {
  // Even a meminfo saying otherwise cannot come from the kernel a 64-bit process runs on.
  EXPECT_FALSE(PinnedPagesMayBeHighMemory(kArmHighMem, 8));
  EXPECT_FALSE(PinnedPagesMayBeHighMemory(std::nullopt, 8));
}

TEST(HighMemoryTest, WhatCannotBeReadOrParsedOn32BitIsUnsafe) {
  EXPECT_TRUE(PinnedPagesMayBeHighMemory(std::nullopt, 4));
  EXPECT_TRUE(PinnedPagesMayBeHighMemory("HighTotal: lots\n", 4));
  EXPECT_TRUE(PinnedPagesMayBeHighMemory("HighTotal: 12 MB\n", 4));
  EXPECT_TRUE(PinnedPagesMayBeHighMemory("HighTotal:\n", 4));
}

TEST(HighMemoryTest, OnlyTheHighTotalLineCounts) {
  EXPECT_FALSE(PinnedPagesMayBeHighMemory("HighFree: 5 kB\nHighTotal: 0 kB", 4));
  EXPECT_TRUE(PinnedPagesMayBeHighMemory("HighFree: 0 kB\nHighTotal: 1 kB", 4));
}

}  // namespace
}  // namespace hotring::io

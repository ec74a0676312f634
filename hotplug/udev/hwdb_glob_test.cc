// HwdbGlobMatch against glibc's fnmatch(pattern, subject, 0): every pattern of up to four
// characters over an alphabet of glob syntax and two letters against every subject of up to
// three letters, and random longer ones; plus the cases hwdb keys use.
#include "hotplug/udev/hwdb_glob.h"

#include <fnmatch.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hotring::hotplug::udev {
namespace {

bool Glibc(const std::string& pattern, const std::string& subject) {
  return ::fnmatch(pattern.c_str(), subject.c_str(), 0) == 0;
}

std::vector<std::string> AllStrings(const std::string& alphabet, size_t max_len) {
  std::vector<std::string> out{""};
  size_t begin = 0;
  for (size_t len = 1; len <= max_len; ++len) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

TEST(HwdbGlobTest, AgreesWithGlibcOnEveryShortPattern) {
  const std::vector<std::string> patterns = AllStrings("ab*?[]!^-\\", 4);
  const std::vector<std::string> subjects = AllStrings("ab-]", 3);
  size_t checked = 0;
  for (const std::string& p : patterns) {
    for (const std::string& s : subjects) {
      ASSERT_EQ(HwdbGlobMatch(p, s), Glibc(p, s)) << "pattern '" << p << "' subject '" << s << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 900000u);
}

TEST(HwdbGlobTest, AgreesWithGlibcOnRandomLongerPatterns) {
  std::mt19937 rng(42);
  const std::string pattern_alphabet = "ab:*?[]!-\\0";
  const std::string subject_alphabet = "ab:-0";
  for (int n = 0; n < 200000; ++n) {
    std::string p, s;
    const size_t plen = rng() % 12, slen = rng() % 12;
    for (size_t i = 0; i < plen; ++i) p += pattern_alphabet[rng() % pattern_alphabet.size()];
    for (size_t i = 0; i < slen; ++i) s += subject_alphabet[rng() % subject_alphabet.size()];
    ASSERT_EQ(HwdbGlobMatch(p, s), Glibc(p, s)) << "pattern '" << p << "' subject '" << s << "'";
  }
}

TEST(HwdbGlobTest, KeysOfTheHwdb) {
  EXPECT_TRUE(HwdbGlobMatch("usb:v0627p0001*", "usb:v0627p0001:QEMU USB Tablet"));
  EXPECT_FALSE(HwdbGlobMatch("usb:v0627p0002*", "usb:v0627p0001:QEMU USB Tablet"));
  EXPECT_TRUE(HwdbGlobMatch("evdev:atkbd:dmi:bvn*:bvr*:bd*:svnDell*:pn*", "evdev:atkbd:dmi:bvnX:bvr1:bd2:svnDell Inc.:pnXPS:"));
  EXPECT_TRUE(HwdbGlobMatch("pci:v00008086d0000[1-2]*", "pci:v00008086d00001E10"));
  EXPECT_FALSE(HwdbGlobMatch("pci:v00008086d0000[3-4]*", "pci:v00008086d00001E10"));
  EXPECT_TRUE(HwdbGlobMatch("x[[:digit:]]y", "x5y"));
  EXPECT_FALSE(HwdbGlobMatch("x[[:digit:]]y", "xay"));
  EXPECT_EQ(HwdbGlobMatch("x[[:bogus:]]y", "xay"), Glibc("x[[:bogus:]]y", "xay"));
  EXPECT_EQ(HwdbGlobMatch("x[[:Digit:]]y", "x:y"), Glibc("x[[:Digit:]]y", "x:y"));
  EXPECT_EQ(HwdbGlobMatch("x[[=a=]]y", "xay"), Glibc("x[[=a=]]y", "xay"));
  // Stops at a NUL, as C strings do.
  EXPECT_TRUE(HwdbGlobMatch(std::string("ab\0c", 4), "ab"));
}

TEST(HwdbGlobTest, ManyStarsStayFast) {
  // glibc needs time exponential in the stars here; the element walk is quadratic.
  std::string pattern;
  for (int i = 0; i < 200; ++i) pattern += "*a";
  pattern += "b";
  const std::string subject(2000, 'a');
  EXPECT_FALSE(HwdbGlobMatch(pattern, subject));
}

}  // namespace
}  // namespace hotring::hotplug::udev

#include "hotplug/udevrules/glob.h"

#include <fnmatch.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hotring::hotplug::udevrules {
namespace {

bool Fnmatch(const std::string& pattern, const std::string& subject) {
  return ::fnmatch(pattern.c_str(), subject.c_str(), 0) == 0;
}

// Every string of length <= max_len over `alphabet`.
std::vector<std::string> AllStrings(const std::string& alphabet, size_t max_len) {
  std::vector<std::string> out = {""};
  std::vector<std::string> layer = {""};
  for (size_t len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const std::string& prefix : layer) {
      for (char c : alphabet) next.push_back(prefix + c);
    }
    out.insert(out.end(), next.begin(), next.end());
    layer = std::move(next);
  }
  return out;
}

TEST(GlobTest, PlainStarsAndQuestionMarks) {
  EXPECT_TRUE(GlobMatch("ttyUSB*", "ttyUSB0"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "a/b/.c"));
  EXPECT_FALSE(GlobMatch("", "a"));
  EXPECT_TRUE(GlobMatch("sd?[0-9]", "sda1"));
  EXPECT_FALSE(GlobMatch("sd?[0-9]", "sda"));
  EXPECT_TRUE(GlobMatch("*/input*", "/devices/x/input/input3"));
  EXPECT_TRUE(GlobMatch("[!a]", "b"));
  EXPECT_FALSE(GlobMatch("[^a]", "a"));
  EXPECT_TRUE(GlobMatch("a\\*", "a*"));
  EXPECT_FALSE(GlobMatch("a\\*", "ab"));
  EXPECT_FALSE(GlobMatch("a\\", "a\\"));  // a trailing backslash matches nothing
  EXPECT_TRUE(GlobMatch("[[:digit:]]x", "7x"));
  EXPECT_TRUE(GlobMatch("a[", "a["));     // an unterminated bracket is a literal
}

// The same answers as glibc's fnmatch(p, s, 0) for every pattern of up to 5 characters over the
// characters that mean something in a pattern, against every short subject.
TEST(GlobTest, AgreesWithGlibcFnmatchExhaustively) {
  const std::vector<std::string> patterns = AllStrings("a]*[!?\\-:", 5);
  const std::vector<std::string> subjects = AllStrings("a]-[\\!", 3);
  size_t mismatches = 0;
  for (const std::string& p : patterns) {
    for (const std::string& s : subjects) {
      if (GlobMatch(p, s) != Fnmatch(p, s)) {
        if (++mismatches < 20) {
          ADD_FAILURE() << "pattern \"" << p << "\" subject \"" << s << "\": fnmatch says "
                        << Fnmatch(p, s);
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(GlobTest, AgreesWithGlibcOnClassesAndCollatingElements) {
  const std::vector<std::string> patterns = {
      "[[:alpha:]]", "[[:alpha:]", "[[:bogus:]]", "[[:Alpha:]]", "[[.a.]]", "[[.ab.]]",
      "[[=a=]]",     "[[=a]",      "[[.a.]-c]",   "[a-[.c.]]",   "[[:z:]]", "[]a]",
      "[!]a]",       "[]-a]",      "[a-]",        "[--a]",       "[\\]]",   "[a\\-c]",
      "[[:digit:]-z]", "[z-a]",   "[[]",          "[[:]",        "x[[:alpha:][:digit:]]y"};
  const std::vector<std::string> subjects = AllStrings("ab]-[.c:=z7", 1);
  for (const std::string& p : patterns) {
    for (const std::string& s : subjects) {
      EXPECT_EQ(GlobMatch(p, s), Fnmatch(p, s)) << "pattern \"" << p << "\" subject \"" << s << "\"";
      const std::string longer = "x" + s + "y";
      EXPECT_EQ(GlobMatch("x" + p + "y", longer), Fnmatch("x" + p + "y", longer))
          << "pattern \"x" << p << "y\" subject \"" << longer << "\"";
    }
  }
}

// Many stars against a long subject that almost matches: glibc's recursion is slow on this
// shape, ours takes at most pattern * subject steps.
TEST(GlobTest, ManyStarsStayBounded) {
  std::string pattern;
  for (int i = 0; i < 2000; ++i) pattern += "*a";
  pattern += "*b";
  const std::string subject(60000, 'a');
  EXPECT_FALSE(GlobMatch(pattern, subject));
  EXPECT_TRUE(GlobMatch(pattern, subject + "b"));
}

TEST(GlobTest, HasGlobCharacters) {
  EXPECT_TRUE(HasGlobCharacters("tty*"));
  EXPECT_TRUE(HasGlobCharacters("a?"));
  EXPECT_TRUE(HasGlobCharacters("[ab]"));
  EXPECT_FALSE(HasGlobCharacters("ttyS0|ttyS1"));
  EXPECT_FALSE(HasGlobCharacters("a\\b"));
}

}  // namespace
}  // namespace hotring::hotplug::udevrules

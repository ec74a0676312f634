#include "hotplug/rules/regex.h"

#include <regex.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::rules {
namespace {

// busybox's test, done the slow way: one regexec, then "match at 0 spanning the subject".
bool ReferenceFullMatch(const std::string& pattern, const std::string& subject,
                        MatchGroups* groups) {
  regex_t re;
  if (regcomp(&re, pattern.c_str(), REG_EXTENDED) != 0) return false;
  regmatch_t m[10];
  const bool ok = regexec(&re, subject.c_str(), 10, m, 0) == 0 && m[0].rm_so == 0 &&
                  static_cast<size_t>(m[0].rm_eo) == subject.size();
  if (ok) {
    for (int i = 0; i < 10; ++i) {
      groups->group[i].matched = m[i].rm_so >= 0;
      groups->group[i].begin = m[i].rm_so >= 0 ? m[i].rm_so : 0;
      groups->group[i].end = m[i].rm_so >= 0 ? m[i].rm_eo : 0;
    }
  }
  regfree(&re);
  return ok;
}

TEST(RegexTest, LiteralPrefixIsConservative) {
  auto prefix = [](const char* p) { return Regex::Compile(p)->literal_prefix(); };
  EXPECT_EQ(prefix("ttyS[0-9]*"), "ttyS");
  EXPECT_EQ(prefix("vcsa*[0-9]*"), "vcs");
  EXPECT_EQ(prefix("ab?c"), "a");
  EXPECT_EQ(prefix("ab{2}"), "a");
  EXPECT_EQ(prefix("ab+c"), "ab");
  EXPECT_EQ(prefix("sda|sdb"), "");
  EXPECT_EQ(prefix("(sda)"), "");
  EXPECT_EQ(prefix("snd/.*"), "snd/");
  EXPECT_EQ(prefix("null"), "null");
}

TEST(RegexTest, FastPathsAgreeWithBusyboxsWholeMatchIncludingCaptures) {
  const std::vector<std::string> patterns = {
      "sda", "sd[a-z]", "sd[a-z][0-9]*", "s([0-9])*d([a-z]+)", "capi([0-9]*)", "capi([0-9])",
      "(tun|tap)", "sda|sda1", "a*", "", "vcsa*[0-9]*", ".*", "(a)(b)?(c)", "^sda$", "x+y",
      "mmcblk([0-9]+)p([0-9]+)", "snd/.*", "[[:alpha:]]+[0-9]{1,2}", ".*"};
  const std::vector<std::string> subjects = {
      "", "sda", "sda1", "sdb", "xsda", "capi", "capi20", "capi1", "tun", "tap", "tunx", "aaa",
      "vcs", "vcsa", "vcsa12", "ac", "abc", "xxy", "y", "mmcblk0p12", "snd/pcm", "aa", "ab",
      "hd12", "hd123", "a\nb"};
  for (const std::string& p : patterns) {
    absl::StatusOr<Regex> regex = Regex::Compile(p);
    ASSERT_TRUE(regex.ok()) << p;
    for (const std::string& s : subjects) {
      MatchGroups fast;
      MatchGroups reference;
      const bool want = ReferenceFullMatch(p, s, &reference);
      ASSERT_EQ(regex->FullMatch(s, &fast), want) << "'" << p << "' on '" << s << "'";
      EXPECT_EQ(regex->FullMatch(s), want) << "'" << p << "' on '" << s << "'";
      if (!want) continue;
      for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(fast.group[i].matched, reference.group[i].matched) << p << " " << s << " " << i;
        EXPECT_EQ(fast.Text(s, i), reference.Text(s, i)) << p << " " << s << " " << i;
      }
    }
  }
}

TEST(RegexTest, SearchFindsAnywhere) {
  EXPECT_TRUE(Regex::Compile("block")->Search("xblocky"));
  EXPECT_FALSE(Regex::Compile("block")->Search("blk"));
  EXPECT_TRUE(Regex::Compile("^bl.ck$")->Search("block"));
  EXPECT_FALSE(Regex::Compile("^bl.ck$")->Search("blocks"));
}

TEST(RegexTest, NotNulTerminatedSubjects) {
  const std::string text = "sda1";
  absl::string_view sda = absl::string_view(text).substr(0, 3);
  EXPECT_TRUE(Regex::Compile("sd[a-z]")->FullMatch(sda));
  EXPECT_TRUE(Regex::Compile("sda")->FullMatch(sda));
  EXPECT_FALSE(Regex::Compile("sda1")->FullMatch(sda));
  EXPECT_FALSE(Regex::Compile("sd.1")->FullMatch(sda));
}

TEST(RegexTest, CompileErrorsSayWhy) {
  absl::StatusOr<Regex> bad = Regex::Compile("sd[a");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().substr(0, 15), "bad regex 'sd[a");
}

// Found by mdev_conf_fuzz: a device regex with stacked repetitions kept glibc's regcomp busy
// for over ten seconds (each further '+' doubles its time), and "a{1,32767}" for longer: a
// configuration line could stall the daemon's only thread at start-up and on every reload.
// Such patterns are refused before regcomp, with the reason.
TEST(RegexTest, PatternsGlibcTakesUnboundedTimeOverAreRefused) {
  const std::string stacked =
      "p\xff\xff\xff\xff\xff\xff+++++++++++++++++++++++++++++++++++++++++++\xff\x06tmx";
  for (const std::string& pattern :
       {stacked, std::string("a{1,32767}"), std::string("(a{1,100}){1,100}"),
        std::string("((((((((((((((a)+)+)+)+)+)+)+)+)+)+)+)+)+)+"), std::string("x*************"),
        // A long fuzz run: repeated optional sub-expressions cost regcomp seconds and hundreds
        // of MB below the first limit (4,096 copies).
        std::string("(a*){0,2047}"), std::string("a{1,4095}"), std::string("a+*+++++++++"),
        std::string("p\xff\xff\xff\xff\xff\xff+*+++++++++\xd5\xd4\xd4\xd6;")}) {
    absl::StatusOr<Regex> regex = Regex::Compile(pattern);
    ASSERT_FALSE(regex.ok()) << pattern;
    EXPECT_THAT(std::string(regex.status().message()),
                ::testing::HasSubstr("repetitions too large or too deeply nested"));
  }
  // Back-references: matching them backtracks without bound on a long name.
  for (const char* pattern : {"(.)\\1", "(a|aa)+\\1x", "(.*)(.*)\\2\\1x"}) {
    absl::StatusOr<Regex> regex = Regex::Compile(pattern);
    ASSERT_FALSE(regex.ok()) << pattern;
    EXPECT_THAT(std::string(regex.status().message()),
                ::testing::HasSubstr("back-references (\\1 to \\9) are not supported"));
  }
  // Found by mdev_conf_fuzz: "4??+++++" costs 128 copies, but a repeated sub-expression that
  // can match nothing makes regcomp's closure exponential ("^(4?+++++)$", the anchored form
  // Compile makes, took over 10 s); so do sequences of them at fewer copies. Refused, whatever
  // their copies.
  for (const char* pattern :
       {"4??+++++\xff" "0-9]+", "(a?)+", "a*+", "(a*)*", "(a|)*", "(|a)+", "(a?){2,100}",
        "(a?){2,}", "^(4?+5?+6?+7?+8?+9?+a?+b?+c?+d?+e?+)+$", "((((4?)+)+)+)+", "(()+)+",
        "(^)+", "(a+?)+"}) {
    absl::StatusOr<Regex> regex = Regex::Compile(pattern);
    ASSERT_FALSE(regex.ok()) << pattern;
    EXPECT_THAT(std::string(regex.status().message()),
                ::testing::HasSubstr("a repetition of something that can match nothing"))
        << pattern;
  }
  // glibc's word anchors match nothing, as '^' does: "(\b){2,40}" took regcomp 11 s.
  for (const char* pattern : {"(\\b){2,40}", "(((\\B)+)+)+", "(\\<)*", "x(\\>|y)+"}) {
    absl::StatusOr<Regex> regex = Regex::Compile(pattern);
    ASSERT_FALSE(regex.ok()) << pattern;
    EXPECT_THAT(std::string(regex.status().message()),
                ::testing::HasSubstr("a repetition of something that can match nothing"))
        << pattern;
  }
  // A ')' without its '(' would close the group of the anchored form: "|a)+++++" became
  // "^(|a)+++++)$" (16 s in regcomp), and "a|b)" stopped matching "a".
  for (const char* pattern : {"|a)+++++", "a|b)", "x)"}) {
    absl::StatusOr<Regex> regex = Regex::Compile(pattern);
    ASSERT_FALSE(regex.ok()) << pattern;
    EXPECT_THAT(std::string(regex.status().message()), ::testing::HasSubstr("unmatched ')'"))
        << pattern;
  }
  // What real configurations write stays accepted.
  for (const char* pattern :
       {"([0-9]+)", "(.*)", "[0-9]{1,3}", "sd[a-z]+([0-9]+)?", "(tun|tap)[0-9]*", "[[:alnum:]]+",
        "a{1,200}", "(a+)+", "[+*?{]+", "\\+\\*x{2}", "[0-9]{1,3}(p[0-9]{1,3})?",
        // Empty matches repeated at most once, and repetitions of what cannot be empty.
        "(a?)?", "(a*)?", "a??", "(a?){0,1}", "(a?b)+", "((a?b)+c?)+", "(a|b?c)*", "x{0}",
        "(a?){1}", "ram([0-9]*)", "(tty|pty)[a-z]?[0-9]*", "\\(a?\\)+",
        "\\bsd[a-z]\\b", "x\\)"}) {
    EXPECT_TRUE(Regex::Compile(pattern).ok()) << pattern;
  }
}

}  // namespace
}  // namespace hotring::hotplug::rules

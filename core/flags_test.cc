#include "core/flags.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace hotring {
namespace {

// A command's table as commands declare theirs: every kind of flag, and where each value goes.
struct Parsed {
  std::string socket = "/run/default";
  bool json = false;
  int verbosity = 0;
  size_t children = 0;
  std::optional<uint64_t> seqnum;
  absl::Duration timeout = absl::Seconds(180);
  double ratio = 0;
  std::vector<std::string> matches;
  std::optional<std::string> wait;  // "" for a bare --wait
  std::string query;
  std::vector<std::string> rest;
};

void Declare(FlagSet& flags, Parsed& p) {
  flags.String("--socket", "PATH", &p.socket, "control socket (default /run/default)")
      .Bool("--json", &p.json, "print JSON")
      .Switch("--verbose|-v", "say more (repeat for even more)",
              [&p] {
                ++p.verbosity;
                return absl::OkStatus();
              })
      .Int("--children-max|-c", "N", &p.children, 1, 4096, "events handled at once")
      .Int("--expect-seqnum", "N", &p.seqnum, 0, INT64_MAX, "first SEQNUM")
      .Seconds("--timeout|-t", "S", &p.timeout, "give up after S seconds")
      .Double("--ratio", "X", &p.ratio, "a ratio")
      .Strings("--subsystem-match|-s", "GLOB", &p.matches, "only these (repeatable)")
      .OptionalValue("--wait", "S", "wait for the ack",
                     [&p](std::optional<absl::string_view> v) {
                       p.wait = std::string(v.value_or(""));
                       return absl::OkStatus();
                     })
      .NonEmpty("--query|-q", "WHAT", &p.query, "what to print")
      .Int("--ring-entries", "N", &p.children, 1, 4096, "test knob")
      .Hidden()
      .Text("")
      .Text("Serving means the socket is bound.")
      .Positionals(&p.rest);
}

absl::StatusOr<FlagsParsed> Parse(const std::vector<std::string>& args, Parsed& p) {
  FlagSet flags("daemon", "usage: hotring daemon [options]");
  Declare(flags, p);
  return flags.Parse(args);
}

TEST(FlagSetTest, LongFlagsTakeSeparateAndInlineValues) {
  Parsed p;
  ASSERT_EQ(*Parse({"--socket", "@x", "--children-max=7", "--json", "--timeout", "0.25",
                    "--expect-seqnum=12", "--ratio", "1.5"},
                   p),
            FlagsParsed::kRun);
  EXPECT_EQ(p.socket, "@x");
  EXPECT_EQ(p.children, 7u);
  EXPECT_TRUE(p.json);
  EXPECT_EQ(p.timeout, absl::Milliseconds(250));
  ASSERT_TRUE(p.seqnum.has_value());
  EXPECT_EQ(*p.seqnum, 12u);
  EXPECT_DOUBLE_EQ(p.ratio, 1.5);
  EXPECT_TRUE(p.rest.empty());
}

TEST(FlagSetTest, ShortFlagsCombineAndTakeAttachedOrSeparateValues) {
  Parsed p;
  ASSERT_EQ(*Parse({"-vv", "-c3", "-s", "block", "-vsnet", "-qproperty", "-t", "2"}, p),
            FlagsParsed::kRun);
  EXPECT_EQ(p.verbosity, 3);
  EXPECT_EQ(p.children, 3u);
  EXPECT_EQ(p.matches, (std::vector<std::string>{"block", "net"}));
  EXPECT_EQ(p.query, "property");
  EXPECT_EQ(p.timeout, absl::Seconds(2));
}

TEST(FlagSetTest, PositionalsKeepTheirOrderAndDoubleDashEndsFlags) {
  Parsed p;
  ASSERT_EQ(*Parse({"first", "--json", "-", "second", "--", "--socket", "-v"}, p),
            FlagsParsed::kRun);
  EXPECT_EQ(p.rest, (std::vector<std::string>{"first", "-", "second", "--socket", "-v"}));
  EXPECT_TRUE(p.json);
  EXPECT_EQ(p.verbosity, 0);
  EXPECT_EQ(p.socket, "/run/default");
}

TEST(FlagSetTest, OptionalValuesAreOnlyInline) {
  Parsed bare;
  ASSERT_EQ(*Parse({"--wait", "later"}, bare), FlagsParsed::kRun);
  EXPECT_EQ(bare.wait, "");
  EXPECT_EQ(bare.rest, std::vector<std::string>{"later"});
  Parsed given;
  ASSERT_EQ(*Parse({"--wait=10"}, given), FlagsParsed::kRun);
  EXPECT_EQ(given.wait, "10");
}

TEST(FlagSetTest, ErrorsNameTheCommandAndTheArgument) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--socket"}, "daemon: --socket needs a value"},
      {{"-c"}, "daemon: -c needs a value"},
      {{"--children-max", "0"}, "daemon: --children-max must be between 1 and 4096, got 0"},
      {{"-c", "x"}, "daemon: -c needs an integer, got 'x'"},
      {{"--timeout", "-1"}, "daemon: --timeout needs a number of seconds >= 0, got -1"},
      {{"--ratio", "nan"}, "daemon: --ratio needs a number, got 'nan'"},
      {{"--json=1"}, "daemon: --json takes no value"},
      {{"--query="}, "daemon: --query needs a non-empty value"},
      {{"--nope"}, "daemon: unknown argument '--nope' (try --help)"},
      {{"-x"}, "daemon: unknown argument '-x' (try --help)"},
      {{"-vx"}, "daemon: unknown argument '-x' (try --help)"},
  };
  for (const auto& [args, message] : cases) {
    Parsed p;
    const absl::StatusOr<FlagsParsed> parsed = Parse(args, p);
    ASSERT_FALSE(parsed.ok()) << args[0];
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()));
    EXPECT_EQ(parsed.status().message(), message);
  }
}

TEST(FlagSetTest, WithoutPositionalsAStrayArgumentIsAnError) {
  FlagSet flags("bench uds", "usage: hotring bench uds");
  bool json = false;
  flags.Bool("--json", &json, "");
  const absl::StatusOr<FlagsParsed> parsed = flags.Parse({"stray"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "bench uds: unexpected argument 'stray' (try --help)");
}

TEST(FlagSetTest, HelpPrintsTheTableAndStopsBeforeLaterArguments) {
  Parsed p;
  FlagSet flags("daemon", "usage: hotring daemon [options]");
  Declare(flags, p);
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  // --help wins over a bad argument after it: nothing after it is parsed.
  const absl::StatusOr<FlagsParsed> parsed = flags.Parse({"--json", "--help", "--nope"}, out);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, FlagsParsed::kHelpShown);
  std::rewind(out);
  std::string text;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), out)) text.append(buffer, n);
  std::fclose(out);
  EXPECT_EQ(text, flags.Usage());
  EXPECT_TRUE(absl::StartsWith(text, "usage: hotring daemon [options]\n"));
  EXPECT_TRUE(absl::StrContains(
      text, "\n  --socket PATH              control socket (default /run/default)\n"));
  EXPECT_TRUE(absl::StrContains(text, "\n  --verbose, -v              say more"));
  EXPECT_TRUE(absl::StrContains(text, "\n  --wait[=S]                 wait for the ack\n"));
  EXPECT_TRUE(absl::StrContains(text, "\n\nServing means the socket is bound.\n"));
  EXPECT_FALSE(absl::StrContains(text, "--ring-entries"));  // hidden
}

TEST(FlagSetTest, HiddenFlagsAreStillAccepted) {
  Parsed p;
  ASSERT_EQ(*Parse({"--ring-entries", "8"}, p), FlagsParsed::kRun);
  EXPECT_EQ(p.children, 8u);
}

TEST(FlagSetTest, AbbreviatedLongNamesOnlyWhenAskedAndUnambiguous) {
  Parsed plain;
  EXPECT_FALSE(Parse({"--sock", "@x"}, plain).ok());
  Parsed p;
  FlagSet flags("monitor", "");
  Declare(flags, p);
  flags.AbbreviatedLongNames();
  ASSERT_EQ(*flags.Parse({"--sock", "@x", "--js", "--subsystem=block", "--t", "2"}), FlagsParsed::kRun);
  EXPECT_EQ(p.socket, "@x");
  EXPECT_TRUE(p.json);
  EXPECT_EQ(p.matches, (std::vector<std::string>{"block"}));
  EXPECT_EQ(p.timeout, absl::Seconds(2));
  // An exact name wins over the longer ones it begins ("--wait" is also no prefix of another).
  ASSERT_EQ(*flags.Parse({"--wait"}), FlagsParsed::kRun);
  EXPECT_EQ(p.wait, "");
  // "--r" begins --ratio and --ring-entries.
  const absl::StatusOr<FlagsParsed> ambiguous = flags.Parse({"--r", "1"});
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.status().message(), "monitor: option '--r' is ambiguous");
  EXPECT_FALSE(flags.Parse({"--nosuch"}).ok());
}

TEST(FlagSetTest, LongHelpWrapsBeneathItsColumn) {
  FlagSet flags("x", "usage: x");
  bool b = false;
  flags.Bool("--a-very-long-flag-name-indeed", &b,
             "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
             "fifteen sixteen seventeen eighteen nineteen twenty");
  const std::string usage = flags.Usage();
  for (absl::string_view line : absl::StrSplit(usage, '\n')) {
    EXPECT_LE(line.size(), 98u) << line;
  }
  EXPECT_TRUE(absl::StrContains(usage, "  --a-very-long-flag-name-indeed\n" +
                                           std::string(29, ' ') + "one two"));
}

TEST(FlagSetTest, ParseIntAndSecondsCheckRanges) {
  EXPECT_EQ(*FlagSet::ParseInt("42", 0, 100), 42);
  EXPECT_FALSE(FlagSet::ParseInt("101", 0, 100).ok());
  EXPECT_FALSE(FlagSet::ParseInt("4x", 0, 100).ok());
  EXPECT_EQ(*FlagSet::ParseSeconds("1.5"), absl::Milliseconds(1500));
  EXPECT_FALSE(FlagSet::ParseSeconds("-0.5").ok());
}

TEST(FlagSetTest, StoreSetsAValueOfAnyType) {
  enum class Mode { kSync, kAsync };
  Mode mode = Mode::kSync;
  bool netlink = true;
  FlagSet flags("bench uds", "usage: hotring bench uds");
  flags.Store("--sync", &mode, Mode::kSync, "")
      .Store("--async", &mode, Mode::kAsync, "")
      .Store("--no-netlink", &netlink, false, "");
  ASSERT_EQ(*flags.Parse({"--async", "--no-netlink"}), FlagsParsed::kRun);
  EXPECT_EQ(mode, Mode::kAsync);
  EXPECT_FALSE(netlink);
  ASSERT_EQ(*flags.Parse({"--sync"}), FlagsParsed::kRun);  // the last one given wins
  EXPECT_EQ(mode, Mode::kSync);
  EXPECT_FALSE(flags.Parse({"--async=1"}).ok());
}

TEST(FlagSetTest, ParseForCommandGivesTheExitCode) {
  Parsed p;
  FlagSet flags("daemon", "usage: hotring daemon [options]");
  Declare(flags, p);
  EXPECT_EQ(flags.ParseForCommand({"--json"}), std::nullopt);
  EXPECT_TRUE(p.json);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(flags.ParseForCommand({"--children-max", "0"}), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "hotring daemon: --children-max must be between 1 and 4096, got 0\n");
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(flags.ParseForCommand({"--help"}), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), flags.Usage());
}

TEST(ReportErrorTest, NamesTheCommandOnceAndSaysTwoForBadArguments) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ReportError("send", absl::InvalidArgumentError("send: --env needs a value")), 2);
  EXPECT_EQ(ReportError("send", absl::UnavailableError("no daemon")), 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "hotring send: --env needs a value\nhotring send: no daemon\n");
}

}  // namespace
}  // namespace hotring

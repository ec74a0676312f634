#include "hotplug/event_parser.h"

#include <time.h>

#include <cstdio>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/drop_reason.h"

namespace hotring::hotplug {
namespace {

using ::testing::HasSubstr;

// Every part followed by a NUL, like the kernel builds it.
std::string Nulstr(std::initializer_list<absl::string_view> parts) {
  std::string out;
  for (const absl::string_view p : parts) {
    out.append(p.data(), p.size());
    out.push_back('\0');
  }
  return out;
}

std::string Typical() {
  return Nulstr({"add@/devices/pci0000:00/0000:00:14.0/usb1/1-1", "ACTION=add",
                 "DEVPATH=/devices/pci0000:00/0000:00:14.0/usb1/1-1", "SUBSYSTEM=usb",
                 "MAJOR=189", "MINOR=1", "DEVNAME=bus/usb/001/002", "DEVTYPE=usb_device",
                 "PRODUCT=1d6b/2/515", "SEQNUM=4711"});
}

// The reason of a failed parse, asserting the message names it too.
std::optional<DropReason> ReasonOf(const absl::StatusOr<Event>& result) {
  if (result.ok()) return std::nullopt;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  const std::optional<DropReason> reason = DropReasonOf(result.status());
  if (reason.has_value()) {
    EXPECT_THAT(result.status().message(), HasSubstr(DropReasonName(*reason)));
  }
  return reason;
}

TEST(DropReasonTest, NamesAreUniqueSnakeCaseAndRoundTrip) {
  std::set<std::string> names;
  for (const DropReason r : AllDropReasons()) {
    const absl::string_view name = DropReasonName(r);
    EXPECT_TRUE(names.insert(std::string(name)).second) << name;
    for (const char c : name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_') << name;
    EXPECT_EQ(DropReasonFromName(name), r);
  }
  EXPECT_EQ(names.size(), 20u);
  EXPECT_EQ(DropReasonFromName("no_such_reason"), std::nullopt);
  EXPECT_EQ(DropReasonOf(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(DropReasonOf(absl::InternalError("x")), std::nullopt);
  const absl::Status s = DropError(DropReason::kBadSeqnum, "detail");
  EXPECT_EQ(s.message(), "bad_seqnum: detail");
  EXPECT_EQ(DropReasonOf(s), DropReason::kBadSeqnum);
}

TEST(DropReasonTest, QuoteForLogEscapesAndCuts) {
  EXPECT_EQ(QuoteForLog(absl::string_view("a\nb\0", 4)), "'a\\nb\\x00'");
  EXPECT_EQ(QuoteForLog(std::string(100, 'x'), 3), "'xxx...'");
}

TEST(ParseKernelUeventTest, TypicalEventFillsFieldsAndKeepsOrder) {
  const absl::StatusOr<Event> e = ParseKernelUevent(Typical());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->action, "add");
  EXPECT_EQ(e->devpath, "/devices/pci0000:00/0000:00:14.0/usb1/1-1");
  EXPECT_EQ(e->subsystem, "usb");
  EXPECT_EQ(e->seqnum, 4711u);
  EXPECT_EQ(e->major, "189");
  EXPECT_EQ(e->minor, "1");
  EXPECT_EQ(e->devname, "bus/usb/001/002");
  EXPECT_EQ(e->modalias, "");
  EXPECT_EQ(e->source, EventSource::kKernel);
  ASSERT_EQ(e->env.size(), 9u);
  EXPECT_EQ(e->env[0].first, "ACTION");
  EXPECT_EQ(e->env[7].first, "PRODUCT");
  EXPECT_EQ(e->env[7].second, "1d6b/2/515");
  EXPECT_EQ(e->Get("DEVTYPE"), "usb_device");
}

TEST(ParseKernelUeventTest, EncodeRoundTrips) {
  const absl::StatusOr<Event> e = ParseKernelUevent(Typical());
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(EncodeKernelUevent(*e), Typical());
  const absl::StatusOr<Event> again = ParseKernelUevent(EncodeKernelUevent(*e));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->env, e->env);
}

TEST(ParseKernelUeventTest, AcceptsNoSeqnumEqualsInValueAndAtInDevpath) {
  const absl::StatusOr<Event> e = ParseKernelUevent(
      Nulstr({"bind@/devices/platform/soc@0/gpio@ff", "ACTION=bind",
              "DEVPATH=/devices/platform/soc@0/gpio@ff", "X=a=b", "EMPTY="}));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->seqnum, std::nullopt);
  EXPECT_EQ(e->devpath, "/devices/platform/soc@0/gpio@ff");
  EXPECT_EQ(e->Get("X"), "a=b");
  EXPECT_EQ(e->Get("EMPTY"), "");
}

TEST(ParseKernelUeventTest, ValueCutAtNewlineLikeSystemd) {
  const absl::StatusOr<Event> e = ParseKernelUevent(
      Nulstr({"change@/devices/x", "ACTION=change", "DEVPATH=/devices/x", "NAME=eth0\ngarbage",
              "SEQNUM=7\r"}));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->Get("NAME"), "eth0");
  EXPECT_EQ(e->seqnum, 7u);
}

TEST(ParseKernelUeventTest, SeqnumLimits) {
  auto with_seqnum = [](absl::string_view s) {
    return ParseKernelUevent(Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a",
                                     absl::StrCat("SEQNUM=", s)}));
  };
  ASSERT_TRUE(with_seqnum("0").ok());
  EXPECT_EQ(with_seqnum("0")->seqnum, 0u);
  ASSERT_TRUE(with_seqnum("18446744073709551615").ok());
  EXPECT_EQ(with_seqnum("18446744073709551615")->seqnum, 18446744073709551615u);
  EXPECT_EQ(ReasonOf(with_seqnum("18446744073709551616")), DropReason::kBadSeqnum);
  EXPECT_EQ(ReasonOf(with_seqnum("abc")), DropReason::kBadSeqnum);
  EXPECT_EQ(ReasonOf(with_seqnum("")), DropReason::kBadSeqnum);
  EXPECT_EQ(ReasonOf(with_seqnum("-1")), DropReason::kBadSeqnum);
  EXPECT_EQ(ReasonOf(with_seqnum("+1")), DropReason::kBadSeqnum);
  EXPECT_EQ(ReasonOf(with_seqnum(" 1")), DropReason::kBadSeqnum);
  EXPECT_EQ(ReasonOf(with_seqnum("12x")), DropReason::kBadSeqnum);
  EXPECT_THAT(with_seqnum("abc").status().message(), HasSubstr("SEQNUM 'abc'"));
}

struct RejectCase {
  const char* name;
  std::string datagram;
  DropReason reason;
  const char* message_part;
};

TEST(ParseKernelUeventTest, EveryRejectionHasItsReasonAndAClearMessage) {
  const std::string ok_tail = Nulstr({"ACTION=add", "DEVPATH=/a"});
  const std::vector<RejectCase> cases = {
      {"empty", "", DropReason::kTruncated, "empty datagram"},
      {"header not terminated", "add@/a", DropReason::kTruncated, "not NUL-terminated"},
      {"last variable not terminated", Nulstr({"add@/a", "ACTION=add"}) + "DEVPATH=/a",
       DropReason::kTruncated, "last variable 'DEVPATH=/a'"},
      {"libudev", std::string("libudev\0\xfe\xed\xca\xfe", 12) + ok_tail,
       DropReason::kLibudevHeader, "libudev"},
      {"oversize datagram", Nulstr({"add@/a"}) + std::string(kMaxDatagramBytes, 'x'),
       DropReason::kOversize, "datagram of"},
      {"oversize env", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a",
                               absl::StrCat("BIG=", std::string(kMaxKernelEnvBytes, 'x'))}),
       DropReason::kOversize, "env block of"},
      {"no at", Nulstr({"add/a", "ACTION=add", "DEVPATH=/a"}), DropReason::kBadHeader,
       "has no '@'"},
      {"empty header action", Nulstr({"@/a", "ACTION=add", "DEVPATH=/a"}),
       DropReason::kBadHeader, "empty action"},
      {"header devpath relative", Nulstr({"add@a", "ACTION=add", "DEVPATH=/a"}),
       DropReason::kBadHeader, "no '@/'"},
      {"action mismatch", Nulstr({"remove@/a", "ACTION=add", "DEVPATH=/a"}),
       DropReason::kHeaderMismatch, "header action 'remove' but ACTION 'add'"},
      {"devpath mismatch", Nulstr({"add@/b", "ACTION=add", "DEVPATH=/a"}),
       DropReason::kHeaderMismatch, "header devpath '/b' but DEVPATH '/a'"},
      {"missing action", Nulstr({"add@/a", "DEVPATH=/a"}), DropReason::kBadAction,
       "ACTION missing"},
      {"empty action", Nulstr({"add@/a", "ACTION=", "DEVPATH=/a"}), DropReason::kBadAction,
       "ACTION empty"},
      {"bad action byte", Nulstr({"a d@/a", "ACTION=a d", "DEVPATH=/a"}),
       DropReason::kBadAction, "outside [A-Za-z0-9_-]"},
      {"missing devpath", Nulstr({"add@/a", "ACTION=add"}), DropReason::kBadDevpath,
       "DEVPATH missing"},
      {"relative devpath", Nulstr({"add@/a", "ACTION=add", "DEVPATH=a"}),
       DropReason::kBadDevpath, "does not start with '/'"},
      {"dotdot devpath", Nulstr({"add@/a/../b", "ACTION=add", "DEVPATH=/a/../b"}),
       DropReason::kBadDevpath, "'..' component"},
      {"double slash devpath", Nulstr({"add@/a//b", "ACTION=add", "DEVPATH=/a//b"}),
       DropReason::kBadDevpath, "empty"},
      {"trailing slash devpath", Nulstr({"add@/a/", "ACTION=add", "DEVPATH=/a/"}),
       DropReason::kBadDevpath, "ends with '/'"},
      {"root devpath", Nulstr({"add@/", "ACTION=add", "DEVPATH=/"}), DropReason::kBadDevpath,
       "ends with '/'"},
      {"no equals", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a", "JUNK"}),
       DropReason::kBadVariable, "variable 'JUNK' has no '='"},
      {"empty key", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a", "=v"}),
       DropReason::kBadVariable, "empty key"},
      {"NUL inside (empty entry)", Nulstr({"add@/a", "ACTION=add", "", "DEVPATH=/a"}),
       DropReason::kBadVariable, "NUL inside the env block at offset 18"},
      {"space in key", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a", "A B=1"}),
       DropReason::kBadVariable, "key 'A B'"},
      {"duplicate key", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a", "ACTION=remove"}),
       DropReason::kBadVariable, "key 'ACTION' appears twice"},
      {"bad major", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a", "MAJOR=eight"}),
       DropReason::kBadVariable, "MAJOR 'eight'"},
      {"minor too big", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a", "MINOR=4294967296"}),
       DropReason::kBadVariable, "MINOR '4294967296'"},
      {"bad seqnum", Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a", "SEQNUM=1e3"}),
       DropReason::kBadSeqnum, "SEQNUM '1e3'"},
  };
  for (const RejectCase& c : cases) {
    const absl::StatusOr<Event> e = ParseKernelUevent(c.datagram);
    EXPECT_EQ(ReasonOf(e), c.reason) << c.name << ": " << e.status();
    EXPECT_THAT(e.status().message(), HasSubstr(c.message_part)) << c.name;
  }
}

TEST(ParseKernelUeventTest, SixtyFourVariablesPassSixtyFiveDoNot) {
  std::string d = Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a"});
  for (int i = 0; i < 62; ++i) d += Nulstr({absl::StrCat("V", i, "=1")});
  const absl::StatusOr<Event> ok = ParseKernelUevent(d);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->env.size(), 64u);
  d += Nulstr({"ONE_MORE=1"});
  const absl::StatusOr<Event> bad = ParseKernelUevent(d);
  EXPECT_EQ(ReasonOf(bad), DropReason::kTooManyVariables);
  EXPECT_THAT(bad.status().message(), HasSubstr("more than 64 variables"));
}

TEST(ParseKernelUeventTest, EnvExactlyAtKernelLimitPasses) {
  std::string d = Nulstr({"add@/a", "ACTION=add", "DEVPATH=/a"});
  const size_t used = d.size() - Nulstr({"add@/a"}).size();
  const size_t pad = kMaxKernelEnvBytes - used - std::string("PAD=").size() - 1;
  d += Nulstr({absl::StrCat("PAD=", std::string(pad, 'p'))});
  ASSERT_EQ(d.size() - Nulstr({"add@/a"}).size(), kMaxKernelEnvBytes);
  EXPECT_TRUE(ParseKernelUevent(d).ok());
  d.insert(d.size() - 1, "p");
  EXPECT_EQ(ReasonOf(ParseKernelUevent(d)), DropReason::kOversize);
}

TEST(EventFromEnvTest, ValidatesLikeTheKernelParser) {
  const absl::StatusOr<Event> e = EventFromEnv(
      {{"ACTION", "add"}, {"DEVPATH", "/devices/x"}, {"SEQNUM", "3"}, {"MODALIAS", "pci:v1"}},
      EventSource::kSend);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, EventSource::kSend);
  EXPECT_EQ(e->seqnum, 3u);
  EXPECT_EQ(e->modalias, "pci:v1");

  EnvVars with_nul = {{"ACTION", "add"}, {"DEVPATH", "/a"}, {"K", std::string("a\0b", 3)}};
  const absl::StatusOr<Event> nul = EventFromEnv(with_nul, EventSource::kSend);
  EXPECT_EQ(ReasonOf(nul), DropReason::kBadVariable);
  EXPECT_THAT(nul.status().message(), HasSubstr("NUL inside the value of 'K'"));

  const absl::StatusOr<Event> nul_key = EventFromEnv(
      {{"ACTION", "add"}, {"DEVPATH", "/a"}, {std::string("K\0", 2), "v"}}, EventSource::kSend);
  EXPECT_EQ(ReasonOf(nul_key), DropReason::kBadVariable);
  EXPECT_THAT(nul_key.status().message(), HasSubstr("NUL inside key"));

  const absl::StatusOr<Event> eq_key =
      EventFromEnv({{"ACTION", "add"}, {"DEVPATH", "/a"}, {"A=B", "v"}}, EventSource::kSend);
  EXPECT_EQ(ReasonOf(eq_key), DropReason::kBadVariable);

  const absl::StatusOr<Event> big = EventFromEnv(
      {{"ACTION", "add"}, {"DEVPATH", "/a"}, {"BIG", std::string(kMaxEventEnvBytes, 'b')}},
      EventSource::kSend);
  EXPECT_EQ(ReasonOf(big), DropReason::kOversize);
}

// The key check works eight bytes at a time: every byte value, at every position of keys that
// fill a word, cross one, or end inside one, must get the byte-by-byte verdict.
TEST(ValidateEnvKeyTest, EveryByteAtEveryPositionMatchesTheRule) {
  auto rule = [](unsigned char c) { return c > ' ' && c < 0x7f && c != '='; };
  for (size_t length = 1; length <= 19; ++length) {
    for (size_t position = 0; position < length; ++position) {
      for (int b = 0; b < 256; ++b) {
        std::string key(length, 'K');
        key[position] = static_cast<char>(b);
        const absl::Status status = ValidateEnvKey(key);
        ASSERT_EQ(status.ok(), rule(static_cast<unsigned char>(b)))
            << "byte " << b << " at " << position << " of " << length;
        if (!status.ok()) {
          EXPECT_EQ(DropReasonOf(status), DropReason::kBadVariable);
          EXPECT_THAT(status.message(), HasSubstr(b == 0 ? "NUL inside key" : "contains '='"));
        }
      }
    }
  }
  EXPECT_FALSE(ValidateEnvKey("").ok());
  EXPECT_TRUE(ValidateEnvKey("!~09AZaz_.:-#").ok());
  // A bad byte after a NUL names the NUL; a bad byte before it names the byte.
  EXPECT_THAT(ValidateEnvKey(absl::string_view("A\0 B", 4)).message(), HasSubstr("NUL inside"));
  EXPECT_THAT(ValidateEnvKey(absl::string_view("A \0B", 4)).message(), HasSubstr("contains '='"));
}

TEST(ParseDecimalU64Test, StrictDigitsOnly) {
  EXPECT_EQ(ParseDecimalU64("0"), 0u);
  EXPECT_EQ(ParseDecimalU64("007"), 7u);
  EXPECT_EQ(ParseDecimalU64("18446744073709551615"), 18446744073709551615u);
  EXPECT_EQ(ParseDecimalU64("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseDecimalU64("99999999999999999999"), std::nullopt);
  EXPECT_EQ(ParseDecimalU64("000000000000000000001"), std::nullopt);  // 21 digits
  EXPECT_EQ(ParseDecimalU64(""), std::nullopt);
  EXPECT_EQ(ParseDecimalU64("1 "), std::nullopt);
}

// Every prefix of a valid datagram and every single-byte corruption parses or fails cleanly
// (the sanitizer build turns any out-of-bounds read into a failure).
TEST(ParseKernelUeventTest, PrefixesAndCorruptionsNeverCrash) {
  const std::string d = Typical();
  for (size_t n = 0; n < d.size(); ++n) {
    const absl::StatusOr<Event> e = ParseKernelUevent(absl::string_view(d).substr(0, n));
    if (!e.ok()) {
      EXPECT_TRUE(DropReasonOf(e.status()).has_value()) << e.status();
    }
  }
  for (size_t i = 0; i < d.size(); ++i) {
    for (const char c : {'\0', '=', '@', '/', '\n', '\xff'}) {
      std::string m = d;
      m[i] = c;
      const absl::StatusOr<Event> e = ParseKernelUevent(m);
      if (!e.ok()) {
      EXPECT_TRUE(DropReasonOf(e.status()).has_value()) << e.status();
    }
    }
  }
}

// Prints the CPU cost of a typical parse (asserts only the result): the daemon's budget is
// about 2 us per event for everything.
TEST(ParseKernelUeventTest, CostOfATypicalParse) {
  const std::string d = Typical();
  constexpr int kN = 100000;
  timespec t0, t1;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  size_t vars = 0;
  for (int i = 0; i < kN; ++i) {
    const absl::StatusOr<Event> e = ParseKernelUevent(d);
    ASSERT_TRUE(e.ok());
    vars += e->env.size();
  }
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  EXPECT_EQ(vars, 9u * kN);
  const double ns = (static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e9 +
                     static_cast<double>(t1.tv_nsec - t0.tv_nsec)) / kN;
  std::printf("ParseKernelUevent: %zu-byte, 9-variable datagram: %.0f CPU ns\n", d.size(), ns);
}

}  // namespace
}  // namespace hotring::hotplug

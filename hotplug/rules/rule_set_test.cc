#include "hotplug/rules/rule_set.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::rules {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const UserDb& Users() {
  static const UserDb* const db = new UserDb(UserDb::FromText(
      "root:x:0:0:root:/root:/bin/sh\n"
      "daemon:x:1:1::/:/bin/false\n"
      "alice:x:1000:100::/home/alice:/bin/sh\n"
      "broken line\n",
      "root:x:0:\n"
      "disk:x:6:\n"
      "audio:x:29:alice\n"
      "users:x:100:\n"));
  return *db;
}

RuleSet Parse(absl::string_view text) {
  absl::StatusOr<RuleSet> rules = ParseRules(text, "mdev.conf", Users());
  EXPECT_TRUE(rules.ok()) << rules.status();
  return rules.ok() ? std::move(*rules) : RuleSet();
}

std::string ParseError(absl::string_view text) {
  absl::StatusOr<RuleSet> rules = ParseRules(text, "mdev.conf", Users());
  EXPECT_FALSE(rules.ok()) << "parsed: " << text;
  return rules.ok() ? "" : std::string(rules.status().message());
}

// The env of a test device.
struct TestDevice {
  std::vector<std::pair<std::string, std::string>> env;
  std::string name;
  Device device;

  explicit TestDevice(std::string devname,
                      std::vector<std::pair<std::string, std::string>> vars = {},
                      std::optional<DevNumber> number = std::nullopt)
      : env(std::move(vars)), name(std::move(devname)) {
    device.action = DeviceAction::kAdd;
    device.name = name;
    device.number = number;
    device.env = env;
  }
};

// The origins ("FILE:LINE") of the rules that apply to `device`, in order.
std::vector<std::string> Applied(const RuleSet& rules, const Device& device) {
  std::vector<std::string> out;
  rules.Match(device, [&](const Rule& rule, absl::string_view, const MatchGroups&) {
    out.push_back(rule.Origin());
  });
  return out;
}

TEST(UserDbTest, ResolvesLikeBusyboxGetUidGid) {
  auto owner = Users().ResolveOwner("alice:audio");
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(*owner, (Owner{1000, 29}));
  owner = Users().ResolveOwner("alice");  // the user's primary group
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(*owner, (Owner{1000, 100}));
  owner = Users().ResolveOwner("500");  // no passwd entry: gid = uid
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(*owner, (Owner{500, 500}));
  owner = Users().ResolveOwner("1");  // passwd entry: its group
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(*owner, (Owner{1, 1}));
  owner = Users().ResolveOwner("0:disk");
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(*owner, (Owner{0, 6}));
  EXPECT_EQ(Users().ResolveOwner("bob:disk").status().message(), "unknown user 'bob'");
  EXPECT_EQ(Users().ResolveOwner("root:wheel").status().message(), "unknown group 'wheel'");
  EXPECT_FALSE(Users().ResolveOwner("root:").ok());
}

TEST(UserDbTest, LoadReadsEtcUnderRootAndMissingFilesAreEmpty) {
  const std::string root = absl::StrCat(getenv("TEST_TMPDIR"), "/userdb");
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/etc").c_str(), 0755), 0);
  std::ofstream(root + "/etc/group") << "video:x:44:\n";
  absl::StatusOr<UserDb> db = UserDb::Load(root);
  ASSERT_TRUE(db.ok()) << db.status();
  auto owner = db->ResolveOwner("0:video");
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(owner->gid, 44u);
  EXPECT_FALSE(db->ResolveOwner("root").ok());  // no passwd file: no names
}

TEST(ParserTest, EveryFieldOfAFullLine) {
  RuleSet rules = Parse("-SUBSYSTEM=block;DEVTYPE=disk;sd([a-z]) alice:disk 0640 >disk/%1 @echo hi\n");
  ASSERT_EQ(rules.rules().size(), 1u);
  const Rule& r = rules.rules()[0];
  EXPECT_TRUE(r.keep_matching);
  ASSERT_EQ(r.env_matches.size(), 2u);
  EXPECT_EQ(r.env_matches[0].name, "SUBSYSTEM");
  EXPECT_EQ(r.env_matches[0].regex.pattern(), "block");
  EXPECT_EQ(r.env_matches[1].name, "DEVTYPE");
  EXPECT_EQ(r.kind, MatchKind::kName);
  EXPECT_EQ(r.regex->pattern(), "sd([a-z])");
  EXPECT_EQ(r.owner, (Owner{1000, 6}));
  EXPECT_EQ(r.mode, 0640u);
  EXPECT_EQ(r.node_action, NodeAction::kMoveAndLink);
  EXPECT_EQ(r.path, "disk/%1");
  EXPECT_EQ(r.command_when, CommandWhen::kAdd);
  EXPECT_EQ(r.command, "echo hi");
  EXPECT_EQ(r.Origin(), "mdev.conf:1");
}

TEST(ParserTest, MatchKindsNodeActionsAndCommandKinds) {
  RuleSet rules = Parse(
      "@8,0 0:1 644\n"
      "@180,0-15 root:root 600 =input/\n"
      "$MODALIAS=usb:.* 0:0 660 @modprobe \"$MODALIAS\"\n"
      "tty[a-z]. 0:0 660 !\n"
      "null 0:0 666 $echo gone\n"
      "zero 0:0 666 * echo both   \n");
  ASSERT_EQ(rules.rules().size(), 6u);
  const auto& r = rules.rules();
  EXPECT_EQ(r[0].kind, MatchKind::kDevNumber);
  EXPECT_EQ(r[0].major, 8u);
  EXPECT_EQ(r[0].minor_first, 0u);
  EXPECT_EQ(r[0].minor_last, 0u);
  EXPECT_EQ(r[0].owner, (Owner{0, 1}));
  EXPECT_EQ(r[1].minor_last, 15u);
  EXPECT_EQ(r[1].node_action, NodeAction::kMove);
  EXPECT_EQ(r[1].path, "input/");
  EXPECT_EQ(r[2].kind, MatchKind::kEnv);
  EXPECT_EQ(r[2].env_name, "MODALIAS");
  EXPECT_EQ(r[2].regex->pattern(), "usb:.*");
  EXPECT_EQ(r[2].command, "modprobe \"$MODALIAS\"");
  EXPECT_EQ(r[3].node_action, NodeAction::kNoNode);
  EXPECT_EQ(r[4].command_when, CommandWhen::kRemove);
  EXPECT_EQ(r[5].command_when, CommandWhen::kAlways);
  EXPECT_EQ(r[5].command, " echo both");  // the rest of the line, trailing blanks trimmed
}

TEST(ParserTest, CommentsBlankLinesContinuationsAndBlanks) {
  RuleSet rules = Parse(
      "# a comment\n"
      "\n"
      "   \t  \n"
      "  sda\t0:0   660   # comment after the mode\n"
      "sdb 0:0 660 @echo '#' not a comment\n"
      "sdc 0:0 \\\n"
      "660\n"
      "sdd 0:0 660");  // no final newline
  ASSERT_EQ(rules.rules().size(), 4u);
  EXPECT_EQ(rules.rules()[0].line, 4);
  EXPECT_EQ(rules.rules()[0].command_when, CommandWhen::kNever);
  EXPECT_EQ(rules.rules()[1].command, "echo '#' not a comment");
  EXPECT_EQ(rules.rules()[2].line, 6);
  EXPECT_EQ(rules.rules()[2].mode, 0660u);
  EXPECT_EQ(rules.rules()[3].line, 8);
}

TEST(ParserTest, EveryErrorNamesFileAndLine) {
  EXPECT_EQ(ParseError("\n\nsda 0:0\n"),
            "mdev.conf:3: 2 fields where 3 are needed: <device regex> <user>:<group> <mode>");
  EXPECT_EQ(ParseError("sda 0:0 660\nsdb bob 660\n"), "mdev.conf:2: unknown user 'bob'");
  EXPECT_EQ(ParseError("sda root:wheel 660\n"), "mdev.conf:1: unknown group 'wheel'");
  EXPECT_EQ(ParseError("#\nsda 0:0 rw\n"), "mdev.conf:2: bad mode 'rw' (octal, up to 07777)");
  EXPECT_EQ(ParseError("sda 0:0 017777\n"), "mdev.conf:1: bad mode '017777' (octal, up to 07777)");
  EXPECT_EQ(ParseError("sda 0:0 0689\n"), "mdev.conf:1: bad mode '0689' (octal, up to 07777)");
  EXPECT_EQ(ParseError("@8 0:0 660\n"), "mdev.conf:1: bad @major,minor[-minor2] '@8'");
  EXPECT_EQ(ParseError("@8,x 0:0 660\n"), "mdev.conf:1: bad @major,minor[-minor2] '@8,x'");
  EXPECT_EQ(ParseError("@8,5-2 0:0 660\n"), "mdev.conf:1: empty minor range in '@8,5-2'");
  EXPECT_EQ(ParseError("$MODALIAS 0:0 660\n"), "mdev.conf:1: bad $ENVVAR=regex '$MODALIAS'");
  EXPECT_THAT(ParseError("a 0:0 6\\\n60\nsd[a 0:0 660\n"), HasSubstr("mdev.conf:3: bad regex 'sd[a': "));
  EXPECT_THAT(ParseError("SUBSYSTEM=(;sda 0:0 660\n"), HasSubstr("mdev.conf:1: bad regex '('"));
  EXPECT_EQ(ParseError("sda 0:0 660 =\n"), "mdev.conf:1: '=' or '>' needs a path");
  EXPECT_EQ(ParseError("sda 0:0 660 >/etc/passwd\n"),
            "mdev.conf:1: path '/etc/passwd' is absolute; paths are relative to the dev root");
  EXPECT_EQ(ParseError("sda 0:0 660 =a/../../x\n"),
            "mdev.conf:1: path 'a/../../x' leaves the dev root");
  EXPECT_EQ(ParseError("sda 0:0 660 !x\n"), "mdev.conf:1: '!' takes no path: '!x'");
  EXPECT_EQ(ParseError("sda 0:0 660 echo hi\n"),
            "mdev.conf:1: 'echo hi': expected =path, >path or ! and then @, $ or * before a "
            "command");
  EXPECT_EQ(ParseError("sda 0:0 660 =x %echo\n"),
            "mdev.conf:1: '%echo': expected =path, >path or ! and then @, $ or * before a command");
  EXPECT_EQ(ParseError("sda 0:0 660 @\n"), "mdev.conf:1: empty command after '@'");
}

TEST(ParserTest, SkipBadLinesKeepsTheRestAndWarns) {
  absl::StatusOr<RuleSet> rules =
      ParseRules("sda 0:0 660\nsdb bob 660\nsdc 0:0 600\n", "f", Users(), {.skip_bad_lines = true});
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->rules().size(), 2u);
  EXPECT_EQ(rules->rules()[1].line, 3);
  EXPECT_THAT(rules->warnings(), ElementsAre("f:2: unknown user 'bob'"));
}

// Bad input gets an error, never a crash: random lines built from the syntax's own pieces.
TEST(ParserTest, RandomLinesParseOrFailCleanly) {
  const std::vector<std::string> pieces = {
      "-", "sd[a-z]", "(", ")", "@", "8", ",", "0", "-", "$", "=", ";", "SUBSYSTEM", ".*",
      " ", "\t", "root", ":", "disk", "660", "0", ">", "!", "*", "%1", "/", "..", "#", "\\",
      "\n", "echo", "\"", "[", "{", "x"};
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1103515245 + 12345;
    return (seed >> 16) & 0x7fff;
  };
  int parsed = 0;
  int failed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const int n = 1 + next() % 14;
    for (int j = 0; j < n; ++j) text += pieces[next() % pieces.size()];
    absl::StatusOr<RuleSet> strict = ParseRules(text, "fuzz", Users());
    absl::StatusOr<RuleSet> lenient = ParseRules(text, "fuzz", Users(), {.skip_bad_lines = true});
    ASSERT_TRUE(lenient.ok()) << text;
    if (strict.ok()) {
      ++parsed;
      EXPECT_TRUE(lenient->warnings().empty());
      TestDevice dev("sda", {{"SUBSYSTEM", "block"}}, DevNumber{8, 0});
      int calls = 0;
      strict->Match(dev.device, [&](const Rule&, absl::string_view, const MatchGroups&) {
        ++calls;
      });
      EXPECT_GE(calls, 1);
    } else {
      ++failed;
      EXPECT_THAT(std::string(strict.status().message()), ::testing::StartsWith("fuzz:"));
      EXPECT_FALSE(lenient->warnings().empty());
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
}

TEST(MatcherTest, FirstMatchWinsThenTheDefault) {
  RuleSet rules = Parse(".* 1:1 666\nsda 2:2 444\n");
  EXPECT_THAT(Applied(rules, TestDevice("sda").device), ElementsAre("mdev.conf:1"));
  RuleSet none = Parse("sdb 0:0 600\n");
  EXPECT_THAT(Applied(none, TestDevice("sda").device), ElementsAre("built-in default"));
  EXPECT_EQ(RuleSet::DefaultRule().mode, 0660u);
  EXPECT_EQ(RuleSet::DefaultRule().owner, (Owner{0, 0}));
}

TEST(MatcherTest, DashRulesKeepMatchingAndFallToTheDefaultLikeBusybox) {
  RuleSet rules = Parse("-.* 1:1 666\nsda 2:2 444\n-sd. 3:3 600\n");
  EXPECT_THAT(Applied(rules, TestDevice("sda").device), ElementsAre("mdev.conf:1", "mdev.conf:2"));
  EXPECT_THAT(Applied(rules, TestDevice("sdb").device),
              ElementsAre("mdev.conf:1", "mdev.conf:3", "built-in default"));
}

TEST(MatcherTest, DeviceRegexMustMatchTheWholeName) {
  RuleSet rules = Parse("sd[a-z] 0:0 600\n");
  EXPECT_THAT(Applied(rules, TestDevice("sda").device), ElementsAre("mdev.conf:1"));
  EXPECT_THAT(Applied(rules, TestDevice("sda1").device), ElementsAre("built-in default"));
  EXPECT_THAT(Applied(rules, TestDevice("xsda").device), ElementsAre("built-in default"));
  RuleSet path = Parse("snd/.* 0:29 660\n");
  EXPECT_THAT(Applied(path, TestDevice("snd/controlC0").device), ElementsAre("mdev.conf:1"));
}

TEST(MatcherTest, EnvVarRuleMatchesTheWholeValueAndNeedsTheVariable) {
  // busybox's "$ENVVAR=regex match" case: qw does not match qwe, qw. does.
  RuleSet rules = Parse("$MODALIAS=qw 1:1 666\n$MODALIAS=qw. 2:2 444\n$MODALIAS=qw. 3:3 400\n");
  EXPECT_THAT(Applied(rules, TestDevice("sda", {{"MODALIAS", "qwe"}}).device),
              ElementsAre("mdev.conf:2"));
  EXPECT_THAT(Applied(rules, TestDevice("sda").device), ElementsAre("built-in default"));
}

TEST(MatcherTest, EnvPrefixesMustAllMatchAnywhereInTheValue) {
  RuleSet rules = Parse("SUBSYSTEM=block;DEVTYPE=part;.* 0:6 660\n");
  EXPECT_THAT(Applied(rules, TestDevice("sda1", {{"SUBSYSTEM", "block"}, {"DEVTYPE", "partition"}})
                                 .device),
              ElementsAre("mdev.conf:1"));
  EXPECT_THAT(Applied(rules, TestDevice("sda", {{"SUBSYSTEM", "block"}, {"DEVTYPE", "disk"}}).device),
              ElementsAre("built-in default"));
  EXPECT_THAT(Applied(rules, TestDevice("sda1", {{"DEVTYPE", "partition"}}).device),
              ElementsAre("built-in default"));
}

TEST(MatcherTest, MajorMinorRangesNeedANumber) {
  RuleSet rules = Parse("@13,64-95 0:0 640\n");
  EXPECT_THAT(Applied(rules, TestDevice("event0", {}, DevNumber{13, 64}).device),
              ElementsAre("mdev.conf:1"));
  EXPECT_THAT(Applied(rules, TestDevice("event31", {}, DevNumber{13, 95}).device),
              ElementsAre("mdev.conf:1"));
  EXPECT_THAT(Applied(rules, TestDevice("mouse0", {}, DevNumber{13, 32}).device),
              ElementsAre("built-in default"));
  EXPECT_THAT(Applied(rules, TestDevice("x", {}, DevNumber{14, 64}).device),
              ElementsAre("built-in default"));
  EXPECT_THAT(Applied(rules, TestDevice("x").device), ElementsAre("built-in default"));
}

TEST(SubstitutionTest, GroupsZeroToNineAndBusyboxLiterals) {
  RuleSet rules = Parse("s([0-9])*d([a-z]+) 0:0 644 >sd/%2_%0\n");
  TestDevice dev("sda");
  std::string out;
  rules.Match(dev.device, [&](const Rule& rule, absl::string_view subject, const MatchGroups& g) {
    if (rule.line == 1) out = SubstituteGroups("sd/%2_%0 %1 %x 100% %", subject, g);
  });
  // %1 did not take part in the match: it stays (busybox).
  EXPECT_EQ(out, "sd/a_sda %1 %x 100% %");
}

TEST(SubstitutionTest, WithoutPercentInThePathOnlyTheWholeMatchIsGiven) {
  RuleSet rules = Parse("s(d)([a-z]) 0:0 644 =x\n");
  TestDevice dev("sda");
  MatchGroups seen;
  rules.Match(dev.device, [&](const Rule& rule, absl::string_view, const MatchGroups& g) {
    if (rule.line == 1) seen = g;
  });
  EXPECT_TRUE(seen.group[0].matched);
  EXPECT_EQ(seen.Text("sda", 0), "sda");
  EXPECT_FALSE(seen.group[1].matched);
}

TEST(SubstitutionTest, EnvRuleGroupsComeFromTheVariable) {
  RuleSet rules = Parse("$INTERFACE=([a-z]+)([0-9]+) 0:0 644 =net/%1-%2\n");
  TestDevice dev("ignored", {{"INTERFACE", "eth12"}});
  std::string out;
  rules.Match(dev.device, [&](const Rule& rule, absl::string_view subject, const MatchGroups& g) {
    if (rule.line == 1) out = SubstituteGroups(rule.path, subject, g);
  });
  EXPECT_EQ(out, "net/eth-12");
}

TEST(SubstitutionTest, MajorMinorRulesExpandGroupsToNothing) {
  RuleSet rules = Parse("@8,0 0:0 644 =x%1y\n");
  TestDevice dev("sda", {}, DevNumber{8, 0});
  std::string out = "unset";
  rules.Match(dev.device, [&](const Rule& rule, absl::string_view subject, const MatchGroups& g) {
    if (rule.line == 1) out = SubstituteGroups(rule.path, subject, g);
  });
  EXPECT_EQ(out, "xy");
}

TEST(DeviceTest, FromEventTakesDevnameNumberAndFirmware) {
  Event event;
  event.action = "add";
  event.devpath = "/devices/pci0000:00/ata1/host0/block/sda";
  event.subsystem = "block";
  event.devname = "sda";
  event.major = "8";
  event.minor = "0";
  event.env = {{"ACTION", "add"}, {"FIRMWARE", "fw.bin"}};
  Device device = DeviceFromEvent(event);
  EXPECT_EQ(device.action, DeviceAction::kAdd);
  EXPECT_EQ(device.name, "sda");
  ASSERT_TRUE(device.number.has_value());
  EXPECT_EQ(*device.number, (DevNumber{8, 0}));
  EXPECT_EQ(device.firmware, "fw.bin");
  EXPECT_TRUE(device.IsBlock());
  EXPECT_EQ(device.Get("ACTION"), "add");
  EXPECT_FALSE(device.Get("MDEV").has_value());
  // No DEVNAME: the last DEVPATH component; a bad MAJOR: no number.
  event.devname.clear();
  event.devpath = "/devices/virtual/tty/ttyS3";
  event.subsystem = "tty";
  event.major = "x";
  event.action = "change";
  device = DeviceFromEvent(event);
  EXPECT_EQ(device.name, "ttyS3");
  EXPECT_FALSE(device.number.has_value());
  EXPECT_FALSE(device.IsBlock());
  EXPECT_EQ(device.action, DeviceAction::kOther);
  EXPECT_EQ(ParseDeviceAction("remove"), DeviceAction::kRemove);
}

TEST(DeviceTest, DevFileNumbers) {
  EXPECT_EQ(ParseDevNumber("8:0\n"), (DevNumber{8, 0}));
  EXPECT_EQ(ParseDevNumber("254:16"), (DevNumber{254, 16}));
  EXPECT_FALSE(ParseDevNumber("8").has_value());
  EXPECT_FALSE(ParseDevNumber("8:").has_value());
  EXPECT_FALSE(ParseDevNumber("-1:0").has_value());
  EXPECT_FALSE(ParseDevNumber("8:0x").has_value());
}

class LoadRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string dir_;
};

TEST_F(LoadRulesTest, MissingFileIsTheBuiltInDefault) {
  absl::StatusOr<RuleSet> rules = LoadRules({.file = dir_ + "/mdev.conf"}, Users());
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_TRUE(rules->rules().empty());
  EXPECT_TRUE(rules->sources().empty());
  EXPECT_THAT(Applied(*rules, TestDevice("anything").device), ElementsAre("built-in default"));
}

TEST_F(LoadRulesTest, DropInsAreAppendedInNameOrder) {
  Write("mdev.conf", "sda 0:0 600\n");
  ASSERT_EQ(mkdir((dir_ + "/mdev.conf.d").c_str(), 0755), 0);
  Write("mdev.conf.d/20-b.conf", "sdc 0:0 600\n");
  Write("mdev.conf.d/10-a.conf", "sdb 0:0 600\n");
  Write("mdev.conf.d/30-ignored.txt", "garbage\n");
  Write("mdev.conf.d/.hidden.conf", "garbage\n");
  absl::StatusOr<RuleSet> rules = LoadRules({.file = dir_ + "/mdev.conf"}, Users());
  ASSERT_TRUE(rules.ok()) << rules.status();
  std::vector<std::string> origins;
  for (const Rule& r : rules->rules()) origins.push_back(r.Origin());
  EXPECT_THAT(origins, ElementsAre(dir_ + "/mdev.conf:1", dir_ + "/mdev.conf.d/10-a.conf:1",
                                   dir_ + "/mdev.conf.d/20-b.conf:1"));
}

TEST_F(LoadRulesTest, ABrokenDropInNamesItsOwnFileAndLine) {
  Write("mdev.conf", "sda 0:0 600\n");
  ASSERT_EQ(mkdir((dir_ + "/mdev.conf.d").c_str(), 0755), 0);
  Write("mdev.conf.d/a.conf", "\nsdb nobody 600\n");
  absl::StatusOr<RuleSet> rules = LoadRules({.file = dir_ + "/mdev.conf"}, Users());
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().message(),
            absl::StrCat(dir_, "/mdev.conf.d/a.conf:2: unknown user 'nobody'"));
}

}  // namespace
}  // namespace hotring::hotplug::rules

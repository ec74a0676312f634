// The package's own contracts, beside the goldens (golden_test.cc holds every expectation about
// what udevd does): where rules files come from, udev.conf, verification reports, bounds on
// hostile input, static nodes, and that a warm executor allocates nothing for rules that do not
// substitute.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/rule_files.h"
#include "testing/allocation_counter.h"

namespace hotring::hotplug::udevrules {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string TempDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string path = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/rules.XXXXXX");
  EXPECT_NE(::mkdtemp(path.data()), nullptr);
  return path;
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A host whose device tree and answers are tables, filling the caller's buffers in place (so
// that it allocates nothing once they have grown).
class MemoryHost final : public RuleHost {
 public:
  using Table = std::map<std::string, std::string, std::less<>>;
  std::map<std::string, Table, std::less<>> attributes;  // devpath -> name -> value
  Table subsystems;
  Table drivers;
  Table parents;
  std::map<std::string, OwnedProperties, std::less<>> properties;  // IMPORT{parent}
  int driver_reads = 0;

  bool ReadAttribute(absl::string_view devpath, absl::string_view name, std::string* out) override {
    auto d = attributes.find(devpath);
    if (d == attributes.end()) return false;
    auto a = d->second.find(name);
    if (a == d->second.end()) return false;
    out->assign(a->second);
    return true;
  }
  bool Subsystem(absl::string_view devpath, std::string* out) override { return Find(subsystems, devpath, out); }
  bool Driver(absl::string_view devpath, std::string* out) override {
    ++driver_reads;
    return Find(drivers, devpath, out);
  }
  bool Parent(absl::string_view devpath, std::string* out) override { return Find(parents, devpath, out); }
  bool FindDevice(absl::string_view, absl::string_view, std::string*) override { return false; }
  std::optional<uint32_t> FileMode(absl::string_view) override { return std::nullopt; }
  bool ListDirectory(absl::string_view, std::vector<std::string>*) override { return false; }
  absl::Status WriteAttribute(absl::string_view, absl::string_view) override { return absl::OkStatus(); }
  absl::Status ReadFile(absl::string_view, size_t, std::string*) override { return absl::NotFoundError("none"); }
  bool ReadSysctl(absl::string_view, std::string*) override { return false; }
  absl::Status WriteSysctl(absl::string_view, absl::string_view) override { return absl::OkStatus(); }
  absl::Status RunProgram(absl::Span<const std::string>, absl::Span<const PropertyView>, absl::Duration,
                          size_t, std::string*) override {
    return absl::UnavailableError("no programs here");
  }
  absl::Status RunBuiltin(absl::string_view, absl::string_view, absl::Span<const std::string>, absl::string_view,
                          absl::Span<const PropertyView>, OwnedProperties*) override {
    return absl::UnavailableError("no builtins here");
  }
  bool ReadDatabase(absl::string_view, DatabaseEntry*) override { return false; }
  bool DeviceProperties(absl::string_view devpath, OwnedProperties* out) override {
    auto it = properties.find(devpath);
    if (it == properties.end()) return false;
    *out = it->second;
    return true;
  }
  void DeviceTags(absl::string_view, std::vector<std::string>* out) override { out->clear(); }
  absl::string_view KernelCommandLine() override { return ""; }
  absl::string_view Constant(absl::string_view) override { return "none"; }
  std::optional<uint32_t> UserId(absl::string_view) override { return std::nullopt; }
  std::optional<uint32_t> GroupId(absl::string_view) override { return std::nullopt; }

 private:
  static bool Find(const Table& m, absl::string_view key, std::string* out) {
    auto it = m.find(key);
    if (it == m.end()) return false;
    out->assign(it->second);
    return true;
  }
};

std::unique_ptr<CompiledRules> Compile(const std::string& text, CompileOptions options = {}) {
  return CompileRules({RulesSource{"test.rules", text}}, options);
}

std::vector<std::string> Messages(const CompiledRules& rules) {
  std::vector<std::string> out;
  for (const Diagnostic& d : rules.diagnostics().kept()) out.push_back(d.Format());
  return out;
}

TEST(RulesFilesTest, EarlierDirectoriesHideLaterOnesAndNamesSortAcrossThem) {
  const std::string root = TempDir();
  for (const char* d : {"/etc", "/run", "/lib"}) ASSERT_EQ(::mkdir((root + d).c_str(), 0755), 0);
  Write(root + "/etc/50-a.rules", "x");
  Write(root + "/lib/50-a.rules", "y");
  Write(root + "/lib/10-b.rules", "y");
  Write(root + "/run/70-c.rules", "z");
  Write(root + "/etc/90-empty.rules", "");
  Write(root + "/lib/90-empty.rules", "hidden by an empty file");
  Write(root + "/etc/99-x.conf", "not a rules file");
  Write(root + "/etc/.hidden.rules", "hidden");
  ASSERT_EQ(::symlink("/dev/null", (root + "/etc/60-masked.rules").c_str()), 0);
  Write(root + "/lib/60-masked.rules", "masked");
  absl::StatusOr<std::vector<RulesFile>> files =
      ListRulesFiles({root + "/etc", root + "/run", root + "/missing", root + "/lib"});
  ASSERT_TRUE(files.ok()) << files.status();
  std::vector<std::string> seen;
  for (const RulesFile& f : *files) seen.push_back(absl::StrCat(f.path.substr(root.size()), f.masked ? " masked" : ""));
  EXPECT_THAT(seen, ElementsAre("/lib/10-b.rules", "/etc/50-a.rules", "/etc/60-masked.rules masked",
                                "/run/70-c.rules", "/etc/90-empty.rules masked"));
}

TEST(UdevConfTest, ReadsItsSettingsAndRefusesExecDelay) {
  absl::StatusOr<UdevConf> conf = ParseUdevConf(
      "# comment\nudev_log=\"debug\"\nchildren_max=8\nevent_timeout=3min\n"
      "resolve_names=late\ntimeout_signal=SIGTERM\nunknown_key=1\n",
      "udev.conf");
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_EQ(conf->log_level, 7);
  EXPECT_EQ(conf->children_max, 8u);
  EXPECT_EQ(conf->event_timeout, absl::Minutes(3));
  EXPECT_EQ(conf->resolve_names, ResolveNames::kLate);
  EXPECT_EQ(conf->timeout_signal, SIGTERM);
  EXPECT_THAT(conf->warnings, IsEmpty());

  conf = ParseUdevConf("children_max=many\nresolve_names=sometimes\n", "udev.conf");
  ASSERT_TRUE(conf.ok());
  EXPECT_THAT(conf->warnings, ElementsAre(HasSubstr("udev.conf:1: failed to parse children_max=many"),
                                          HasSubstr("udev.conf:2: failed to parse resolve_names=sometimes")));
  EXPECT_FALSE(conf->children_max.has_value());

  conf = ParseUdevConf("udev_log=info\nexec_delay=5\n", "/etc/udev/udev.conf");
  EXPECT_FALSE(conf.ok());
  EXPECT_THAT(std::string(conf.status().message()), HasSubstr("/etc/udev/udev.conf:2: exec_delay=5 is not supported"));
  // Empty: the default stays.
  EXPECT_TRUE(ParseUdevConf("exec_delay=\n", "udev.conf").ok());
}

TEST(VerifyTest, ReportsEachProblemAsFileLineAndSumsUp) {
  const std::string dir = TempDir();
  Write(dir + "/10-good.rules", "KERNEL==\"sda\", SYMLINK+=\"disk0\"\n");
  Write(dir + "/20-bad.rules", "KERNEL==\"sda\", SYMLINK+=\"x\"\nFOO==\"1\", ENV{A}=\"1\"\nKERNEL==\"a\"\n");
  VerifyReport report = VerifyRules({dir});
  EXPECT_FALSE(report.ok);
  EXPECT_THAT(report.text, HasSubstr(dir + "/20-bad.rules:2: Invalid key 'FOO' (error)\n"));
  EXPECT_THAT(report.text, HasSubstr(dir + "/20-bad.rules:3: The line takes no effect, ignoring. (warning)\n"));
  EXPECT_THAT(report.text, HasSubstr("2 rules files, 2 rules, 1 errors, 1 warnings\n"));
  report = VerifyRules({dir + "/10-good.rules"});
  EXPECT_TRUE(report.ok) << report.text;
  EXPECT_EQ(report.text, "1 rules files, 1 rules, 0 errors, 0 warnings\n");
}

TEST(StaticNodeTest, CarriesItsLinesPermissionsAndTags) {
  std::unique_ptr<CompiledRules> rules = Compile(
      "KERNEL==\"fuse\", MODE=\"0666\", OPTIONS+=\"static_node=fuse\"\n"
      "KERNEL==\"kvm\", GROUP=\"107\", TAG+=\"uaccess\", OPTIONS+=\"static_node=kvm\"\n"
      "OPTIONS+=\"static_node=nothing-to-apply\"\n");
  ASSERT_EQ(rules->static_nodes().size(), 2u);
  EXPECT_EQ(rules->static_nodes()[0].node, "fuse");
  EXPECT_EQ(rules->static_nodes()[0].mode, 0666u);
  EXPECT_FALSE(rules->static_nodes()[0].gid.has_value());
  EXPECT_EQ(rules->static_nodes()[1].node, "kvm");
  EXPECT_EQ(rules->static_nodes()[1].gid, 107u);
  EXPECT_THAT(rules->static_nodes()[1].tags, ElementsAre("uaccess"));
  EXPECT_EQ(rules->static_nodes()[1].where, "test.rules:2");
}

// --- hostile input: bounded time and memory, and a report ---

TEST(HostileInputTest, AMillionRuleLinesStopAtTheBoundWithAnError) {
  std::string text;
  text.reserve(40u << 20);
  for (int i = 0; i < 1000000; ++i) absl::StrAppend(&text, "KERNEL==\"dev", i, "\", SYMLINK+=\"l", i, "\"\n");
  CompileOptions options;
  options.max_rules = 100000;
  std::unique_ptr<CompiledRules> rules = Compile(text, options);
  EXPECT_EQ(rules->lines().size(), 100000u);
  EXPECT_EQ(rules->diagnostics().errors(), 1u);
  EXPECT_THAT(Messages(*rules), ElementsAre("test.rules:100001: More than 100000 rules: this one and every later rule are ignored"));
}

TEST(HostileInputTest, AMillionBadLinesKeepOnlyTheFirstMessages) {
  std::string text;
  for (int i = 0; i < 1000000; ++i) text += "FOO==\"x\"\n";
  std::unique_ptr<CompiledRules> rules = Compile(text);
  EXPECT_EQ(rules->lines().size(), 0u);
  EXPECT_EQ(rules->diagnostics().errors(), 1000000u);
  EXPECT_EQ(rules->diagnostics().kept().size(), 1000u);
  EXPECT_EQ(rules->diagnostics().dropped(), 999000u);
}

TEST(HostileInputTest, AFileLargerThanTheBoundIsNotRead) {
  const std::string dir = TempDir();
  Write(dir + "/10-big.rules", std::string(2000, '#') + "\n");
  CompileOptions options;
  options.max_file_size = 1000;
  absl::StatusOr<std::unique_ptr<CompiledRules>> rules = LoadRules({dir}, options);
  ASSERT_TRUE(rules.ok());
  EXPECT_THAT(Messages(**rules), ElementsAre(HasSubstr("larger than 1000 bytes, not read")));
}

TEST(HostileInputTest, APatternOfThousandsOfStarsMatchesInBoundedTime) {
  // As long as udevd's buffers let a subject be (511 bytes); glibc's recursion on this shape
  // takes time exponential in the number of stars.
  std::string pattern;
  for (int i = 0; i < 250; ++i) pattern += "*a";
  std::unique_ptr<CompiledRules> rules = Compile(absl::StrCat(
      "ATTR{name}==\"", pattern, "*b\", ENV{MATCHED}=\"1\"\n", "ATTR{name}==\"", pattern, "\", ENV{ALSO}=\"1\"\n"));
  MemoryHost host;
  host.attributes["/devices/x"]["name"] = std::string(500, 'a');
  const PropertyView env[] = {{"SUBSYSTEM", "misc"}};
  const Outcome o = ExecuteRules(*rules, {.action = "add", .devpath = "/devices/x", .properties = env}, host);
  EXPECT_FALSE(o.Property("MATCHED").has_value());
  EXPECT_EQ(o.Property("ALSO"), "1");
}

TEST(HostileInputTest, GotoChainsRunEveryLineAtMostOnce) {
  // A GOTO only jumps forward: a chain of 10,000 jumps and a jump back (refused when loading)
  // cannot loop.
  std::string text;
  for (int i = 0; i < 10000; ++i) absl::StrAppend(&text, "GOTO=\"l", i, "\"\nLABEL=\"l", i, "\", ENV{N}+=\"x\"\n");
  text += "LABEL=\"back\"\nENV{BACK}+=\"once\", GOTO=\"back\"\n";
  std::unique_ptr<CompiledRules> rules = Compile(text);
  EXPECT_THAT(Messages(*rules), ElementsAre("test.rules:20002: GOTO=\"back\" has no matching label, ignoring"));
  MemoryHost host;
  const PropertyView env[] = {{"SUBSYSTEM", "misc"}};
  const Outcome o = ExecuteRules(*rules, {.action = "add", .devpath = "/devices/x", .properties = env}, host);
  EXPECT_EQ(o.Property("BACK"), "once");
  // 10,000 GOTO lines and their 10,000 labels, then the last line; the label-only line before
  // it does nothing and is not applied.
  EXPECT_EQ(o.lines_applied, 20001u);
}

TEST(HostileInputTest, HugeValuesAreCutToUdevdsBuffersAndReported) {
  const std::string huge(16000, 'v');
  std::unique_ptr<CompiledRules> rules = Compile(absl::StrCat(
      "ENV{BIG}=\"", huge, "\"\n", "ENV{SMALL}=\"", std::string(500, 's'), "\"\n", "ENV{TWICE}=\"$env{SMALL}$env{SMALL}\"\n",
      "RUN+=\"/bin/echo $env{SMALL}$env{SMALL}$env{SMALL}\"\n"));
  MemoryHost host;
  const PropertyView env[] = {{"SUBSYSTEM", "misc"}};
  const Outcome o = ExecuteRules(*rules, {.action = "add", .devpath = "/devices/x", .properties = env}, host);
  EXPECT_FALSE(o.Property("BIG").has_value());
  EXPECT_EQ(o.Property("SMALL"), std::string(500, 's'));
  EXPECT_FALSE(o.Property("TWICE").has_value());
  ASSERT_EQ(o.run.size(), 1u);
  EXPECT_EQ(o.run[0].command.size(), kUdevPathSize - 1);
  EXPECT_THAT(o.log, ElementsAre(HasSubstr("test.rules:1 The property value"), HasSubstr("test.rules:3 The property value")));
}

TEST(HostileInputTest, AVeryLongLineEndsTheFileWithAnError) {
  std::unique_ptr<CompiledRules> rules = Compile(absl::StrCat(
      "ENV{A}=\"1\"\n", "ENV{B}=\"", std::string(20000, 'b'), "\"\n", "ENV{C}=\"1\"\n"));
  EXPECT_EQ(rules->lines().size(), 1u);
  EXPECT_THAT(Messages(*rules), ElementsAre(HasSubstr("test.rules:2: Line longer than 16383 bytes")));
}

// --- the executor's steady state ---

TEST(ExecutorTest, AWarmExecutorAllocatesNothingForRulesThatDoNotSubstitute) {
  std::unique_ptr<CompiledRules> rules = Compile(
      "ACTION!=\"add\", GOTO=\"end\"\n"
      "SUBSYSTEM==\"tty\", KERNEL==\"ttyUSB[0-9]*\", ATTRS{idVendor}==\"0403\", ATTRS{idProduct}==\"6001\", "
      "SYMLINK+=\"ttyFTDI\", GROUP=\"20\", MODE=\"0660\"\n"
      "SUBSYSTEM==\"tty\", DRIVERS==\"ftdi_sio\", ENV{ID_FTDI}=\"1\", TAG+=\"systemd\"\n"
      "SUBSYSTEMS==\"usb\", ENV{ID_FTDI}==\"1\", ENV{ID_BUS}=\"usb\", RUN+=\"/usr/bin/board-hotplug tty\"\n"
      "KERNEL==\"sd*|nvme*\", ENV{NEVER}=\"1\"\n"
      "ATTR{name}==\"*touch*\", ENV{NEVER}=\"1\"\n"
      "LABEL=\"end\"\n");
  MemoryHost host;
  const std::string tty = "/devices/usb1/1-4/1-4:1.0/ttyUSB0/tty/ttyUSB0";
  host.parents[tty] = "/devices/usb1/1-4/1-4:1.0/ttyUSB0";
  host.parents["/devices/usb1/1-4/1-4:1.0/ttyUSB0"] = "/devices/usb1/1-4/1-4:1.0";
  host.parents["/devices/usb1/1-4/1-4:1.0"] = "/devices/usb1/1-4";
  host.drivers["/devices/usb1/1-4/1-4:1.0/ttyUSB0"] = "ftdi_sio";
  host.subsystems["/devices/usb1/1-4"] = "usb";
  host.subsystems["/devices/usb1/1-4/1-4:1.0"] = "usb";
  host.attributes["/devices/usb1/1-4"]["idVendor"] = "0403";
  host.attributes["/devices/usb1/1-4"]["idProduct"] = "6001";
  const PropertyView env[] = {{"ACTION", "add"}, {"DEVPATH", tty},  {"SUBSYSTEM", "tty"},
                              {"MAJOR", "188"},  {"MINOR", "0"},    {"DEVNAME", "ttyUSB0"}};
  const EventInput event{.action = "add", .devpath = tty, .properties = env};
  Executor executor;
  Outcome outcome;
  const ExecuteOptions options;
  for (int i = 0; i < 3; ++i) executor.Run(*rules, event, host, options, &outcome);
  const uint64_t before = testing::AllocationCount();
  executor.Run(*rules, event, host, options, &outcome);
  const uint64_t allocations = testing::AllocationCount() - before;
  EXPECT_EQ(allocations, 0u);
  EXPECT_THAT(outcome.links, ElementsAre("ttyFTDI"));
  EXPECT_EQ(outcome.Property("ID_BUS"), "usb");
  EXPECT_EQ(outcome.gid, 20u);
  ASSERT_EQ(outcome.run.size(), 1u);
  EXPECT_THAT(outcome.run[0].argv, ElementsAre("/usr/bin/board-hotplug", "tty"));
  EXPECT_THAT(outcome.tags, ElementsAre("systemd"));
}

TEST(ExecutorTest, ReportsPermissionsRemovedPropertiesAndRefusedLinks) {
  std::unique_ptr<CompiledRules> rules = Compile(
      "ENV{GONE}=\"\", SYMLINK+=\"../../etc/x ok/./a//b\", RUN+=\"helper 'two words'\"\n");
  MemoryHost host;
  const PropertyView env[] = {{"SUBSYSTEM", "misc"}, {"MAJOR", "10"}, {"MINOR", "1"}, {"GONE", "x"}};
  const Outcome o = ExecuteRules(*rules, {.action = "add", .devpath = "/devices/x", .properties = env}, host);
  EXPECT_THAT(o.removed_properties, ElementsAre("GONE"));
  EXPECT_THAT(o.links, ElementsAre("ok/a/b"));
  EXPECT_THAT(o.refused_links, ElementsAre("../../etc/x"));
  ASSERT_EQ(o.run.size(), 1u);
  EXPECT_THAT(o.run[0].argv, ElementsAre("/lib/udev/helper", "two words"));
  const NodePermissions p = PermissionsFor(o, env);
  EXPECT_EQ(p.uid, 0u);
  EXPECT_EQ(p.gid, 0u);
  EXPECT_EQ(p.mode, 0600u);
}

TEST(ExecutorTest, ImportParentReadsTheDriverLinkOnlyForAPatternThatTakesDriver) {
  std::unique_ptr<CompiledRules> rules = Compile(
      "IMPORT{parent}=\"ID_SEAT\"\n"
      "IMPORT{parent}=\"ID_*\"\n"
      "ENV{STEP}=\"1\"\n"
      "ENV{STEP}==\"1\", IMPORT{parent}=\"DRIV*\"\n");
  MemoryHost host;
  const std::string child = "/devices/platform/serial8250/tty/ttyS0";
  const std::string parent = "/devices/platform/serial8250";
  host.parents[child] = parent;
  host.drivers[parent] = "serial8250";
  // The uevent file of a bound parent names no driver (a recorded tree can say so): the link does.
  host.properties[parent] = {{"DEVPATH", parent}, {"SUBSYSTEM", "platform"}, {"ID_SEAT", "seat1"}};
  const PropertyView env[] = {{"SUBSYSTEM", "tty"}, {"DEVPATH", child}};
  Executor executor;
  Outcome outcome;
  executor.Run(*rules, {.action = "add", .devpath = child, .properties = env}, host, {}, &outcome);
  EXPECT_EQ(outcome.Property("ID_SEAT"), "seat1");
  EXPECT_EQ(outcome.Property("DRIVER"), "serial8250");
  EXPECT_EQ(host.driver_reads, 1);

  // Without a pattern that takes DRIVER, the link is never read; with the uevent file's DRIVER,
  // that one is imported and the link is not read either.
  std::unique_ptr<CompiledRules> seat_only = Compile("IMPORT{parent}=\"ID_SEAT\"\nIMPORT{parent}=\"ID_*\"\n");
  host.driver_reads = 0;
  executor.Run(*seat_only, {.action = "add", .devpath = child, .properties = env}, host, {}, &outcome);
  EXPECT_EQ(outcome.Property("ID_SEAT"), "seat1");
  EXPECT_EQ(outcome.Property("DRIVER"), std::nullopt);
  EXPECT_EQ(host.driver_reads, 0);
  host.properties[parent].emplace_back("DRIVER", "from-uevent");
  executor.Run(*rules, {.action = "add", .devpath = child, .properties = env}, host, {}, &outcome);
  EXPECT_EQ(outcome.Property("DRIVER"), "from-uevent");
  EXPECT_EQ(host.driver_reads, 0);
}

}  // namespace
}  // namespace hotring::hotplug::udevrules

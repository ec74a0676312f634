#include "hotplug/coldplug/trigger_needed.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/devroot/user_db.h"

namespace hotring::hotplug {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A resolver answering from a table; an unknown query matches nothing.
class TableResolver final : public modules::Resolver {
 public:
  absl::flat_hash_map<std::string, absl::StatusOr<modules::LoadPlan>> plans;

  absl::StatusOr<modules::LoadPlan> Resolve(absl::string_view query, bool) const override {
    const auto found = plans.find(query);
    if (found == plans.end()) return modules::LoadPlan{std::string(query), {}, false};
    return found->second;
  }
};

rules::RuleSet Rules(absl::string_view text) {
  absl::StatusOr<rules::RuleSet> rules = rules::ParseRules(
      text, "mdev.conf",
      devroot::UserDb::FromText("root:x:0:0::/:/bin/sh\n", "root:x:0:\ndisk:x:6:\ntty:x:5:\n"));
  EXPECT_TRUE(rules.ok()) << rules.status();
  return rules.ok() ? std::move(*rules) : rules::RuleSet();
}

// An add event as ReadUeventFile makes it; `number` false: no MAJOR/MINOR (no node).
Event Uevent(std::string devpath, std::string subsystem, std::string devname, bool number,
             std::string modalias = "") {
  Event event;
  event.action = "add";
  event.devpath = std::move(devpath);
  event.subsystem = std::move(subsystem);
  event.devname = std::move(devname);
  event.env = {{"ACTION", "add"}, {"DEVPATH", event.devpath}, {"SUBSYSTEM", event.subsystem}};
  if (number) {
    event.major = "8";
    event.minor = "0";
    event.env.push_back({"MAJOR", "8"});
    event.env.push_back({"MINOR", "0"});
  }
  if (!event.devname.empty()) event.env.push_back({"DEVNAME", event.devname});
  if (!modalias.empty()) {
    event.modalias = modalias;
    event.env.push_back({"MODALIAS", modalias});
  }
  return event;
}

std::vector<std::string> Reasons(const rules::RuleSet& rules, const Event& event,
                                 const ModuleFacts& modules = {}) {
  return DecideNeeded(rules, event, modules).reasons;
}

TEST(DecideNeededTest, EachRuleEffectIsAReasonWithItsLine) {
  const rules::RuleSet rules = Rules(
      "# a comment line\n"
      "sda 0:6 0660\n"
      "sdb 0:0 0640\n"
      "sdc 0:0 0660 =disk/\n"
      "sdd 0:0 0660 >disk/d\n"
      "sde 0:0 0660 !\n"
      "sdf 0:0 0660 @echo added\n"
      "sdg 0:0 0660 *echo any\n"
      "sdh 0:0 0660 $echo removed\n"
      "sdi root:root 660\n"
      "sdj 0:disk 0600 >x/%0 @true\n");
  auto reasons = [&](const char* name) { return Reasons(rules, Uevent("/d", "block", name, true)); };
  EXPECT_THAT(reasons("sda"), ElementsAre("rule mdev.conf:2 (owner 0:6)"));
  EXPECT_THAT(reasons("sdb"), ElementsAre("rule mdev.conf:3 (mode 0640)"));
  EXPECT_THAT(reasons("sdc"), ElementsAre("rule mdev.conf:4 (=disk/)"));
  EXPECT_THAT(reasons("sdd"), ElementsAre("rule mdev.conf:5 (>disk/d)"));
  EXPECT_THAT(reasons("sde"), ElementsAre("rule mdev.conf:6 (! no node)"));
  EXPECT_THAT(reasons("sdf"), ElementsAre("rule mdev.conf:7 (@command)"));
  EXPECT_THAT(reasons("sdg"), ElementsAre("rule mdev.conf:8 (*command)"));
  // A '$' command runs on remove only; a rule that spells out the default does nothing.
  EXPECT_THAT(reasons("sdh"), IsEmpty());
  EXPECT_THAT(reasons("sdi"), IsEmpty());
  EXPECT_THAT(reasons("sdj"),
              ElementsAre("rule mdev.conf:11 (owner 0:6, mode 0600, >x/%0, @command)"));
  // No rule: busybox's default, root:root 0660, is nothing to replay for.
  EXPECT_THAT(reasons("sdz"), IsEmpty());
  EXPECT_THAT(reasons("ttyS0"), IsEmpty());
}

TEST(DecideNeededTest, WithoutANodeOnlyCommandsCount) {
  const rules::RuleSet rules = Rules(
      "eth[0-9] 0:6 0640 =net/\n"
      "wlan[0-9] 0:0 0660 @ifup $MDEV\n");
  EXPECT_THAT(Reasons(rules, Uevent("/devices/x/net/eth0", "net", "", false)), IsEmpty());
  EXPECT_THAT(Reasons(rules, Uevent("/devices/x/net/wlan0", "net", "", false)),
              ElementsAre("rule mdev.conf:2 (@command)"));
}

TEST(DecideNeededTest, DashRulesAndTheRuleThatStopsAreAllReasons) {
  const rules::RuleSet rules = Rules(
      "-sd.* 0:0 0660 @logger $MDEV\n"
      "sd[a-z] 0:6 0640\n"
      "sd.* 0:0 0600\n");
  EXPECT_THAT(Reasons(rules, Uevent("/d", "block", "sda", true)),
              ElementsAre("rule mdev.conf:1 (@command)", "rule mdev.conf:2 (owner 0:6, mode 0640)"));
  // SUBSYSTEM= and $ENVVAR= matchers see the uevent's variables.
  const rules::RuleSet by_env = Rules("SUBSYSTEM=input;.* 0:5 0640\n$MODALIAS=usb:.* 0:0 0660 @x\n");
  EXPECT_THAT(Reasons(by_env, Uevent("/i", "input", "input/event0", true)),
              ElementsAre("rule mdev.conf:1 (owner 0:5, mode 0640)"));
  EXPECT_THAT(Reasons(by_env, Uevent("/u", "usb", "", false, "usb:v1D6Bp0002")),
              ElementsAre("rule mdev.conf:2 (@command)"));
}

modules::ModuleToLoad Module(std::string name, std::vector<std::string> needs = {},
                             bool builtin = false, bool required = true) {
  modules::ModuleToLoad module;
  module.name = std::move(name);
  module.builtin = builtin;
  module.needs = std::move(needs);
  module.required = required;
  return module;
}

TEST(DecideNeededTest, ModaliasCountsOnlyWhenItsModuleIsMissing) {
  TableResolver resolver;
  resolver.plans["pci:e1000e"] = modules::LoadPlan{
      "pci:e1000e", {Module("pps_core"), Module("ptp", {"pps_core"}), Module("e1000e", {"ptp"})}};
  resolver.plans["pci:ahci"] = modules::LoadPlan{"pci:ahci", {Module("ahci", {}, true)}};
  resolver.plans["pci:snd"] = modules::LoadPlan{
      "pci:snd", {Module("snd_hda_intel"), Module("snd_sof_pci"), Module("extra", {}, false, false)}};
  resolver.plans["pci:bad"] = modules::LoadPlan{"pci:bad", {}, /*blacklisted=*/true};
  resolver.plans["pci:broken"] = absl::InternalError("index corrupt");
  absl::flat_hash_set<std::string> loaded = {"pps_core"};
  const ModuleFacts facts{&resolver, &loaded};
  const rules::RuleSet none;
  auto reasons = [&](const char* modalias) {
    return Reasons(none, Uevent("/devices/pci0000:00/x", "pci", "", false, modalias), facts);
  };
  // The driver is named, not the dependencies it pulls in.
  EXPECT_THAT(reasons("pci:e1000e"), ElementsAre("module e1000e not loaded"));
  EXPECT_THAT(reasons("pci:ahci"), IsEmpty());  // built in
  // Two drivers for one alias: both named; a softdep (not required) is not a reason.
  EXPECT_THAT(reasons("pci:snd"), ElementsAre("modules snd_hda_intel, snd_sof_pci not loaded"));
  EXPECT_THAT(reasons("pci:bad"), IsEmpty());      // blacklisted: nothing would load
  EXPECT_THAT(reasons("pci:nothing"), IsEmpty());  // no driver at all
  EXPECT_THAT(reasons("pci:broken"),
              ElementsAre("MODALIAS pci:broken could not be resolved: index corrupt"));
  // The driver is what counts: once it is there, so are its dependencies (this one pretends
  // otherwise: nothing to replay for).
  loaded.insert("e1000e");
  EXPECT_THAT(reasons("pci:e1000e"), IsEmpty());
  // Without a module index a MODALIAS is never a reason.
  EXPECT_THAT(Reasons(none, Uevent("/d", "pci", "", false, "pci:snd"), ModuleFacts{}), IsEmpty());
}

TEST(DecideNeededTest, RuleAndModuleReasonsTogether) {
  TableResolver resolver;
  resolver.plans["usb:hid"] = modules::LoadPlan{"usb:hid", {Module("usbhid")}};
  const absl::flat_hash_set<std::string> loaded;
  const rules::RuleSet rules = Rules("hidraw[0-9]+ 0:0 0600\n");
  EXPECT_THAT(Reasons(rules, Uevent("/h", "hidraw", "hidraw0", true, "usb:hid"),
                      ModuleFacts{&resolver, &loaded}),
              ElementsAre("rule mdev.conf:1 (mode 0600)", "module usbhid not loaded"));
}

NeedDecision Needed(std::string reason) { return NeedDecision{{std::move(reason)}}; }

TEST(SelectNeededTest, ParentsComeFirstNamedAfterTheirFirstNeededDescendant) {
  const std::vector<std::string> devpaths = {
      "/devices/pci0000:00",                                   // 0 parent of 3
      "/devices/pci0000:00/0000:00:14.0/usb1",                 // 1 parent of 2
      "/devices/pci0000:00/0000:00:14.0/usb1/1-1/input/input3",  // 2 needed
      "/devices/pci0000:00/0000:00:1f.2",                      // 3 needed itself
      "/devices/pci0000:00/0000:00:1f.2/ata1/host0/block/sda", // 4 nothing
      "/devices/platform/serial8250",                          // 5 nothing
      "/devices/platform/serial8250/tty/ttyS0",                // 6 needed, parent 5
      "/devices/virtual/mem/null",                             // 7 needed, no parent listed
  };
  std::vector<NeedDecision> decisions(devpaths.size());
  decisions[2] = Needed("module usbhid not loaded");
  decisions[3] = Needed("module ahci not loaded");
  decisions[6] = Needed("rule mdev.conf:3 (mode 0620)");
  decisions[7] = Needed("rule mdev.conf:1 (mode 0666)");
  const std::vector<NeededDevice> picked = SelectNeeded(devpaths, decisions);
  std::vector<std::string> lines;
  for (const NeededDevice& device : picked) lines.push_back(FormatNeeded(devpaths[device.index], device));
  EXPECT_THAT(lines,
              ElementsAre("/devices/pci0000:00  parent of "
                          "/devices/pci0000:00/0000:00:14.0/usb1/1-1/input/input3",
                          "/devices/pci0000:00/0000:00:14.0/usb1  parent of "
                          "/devices/pci0000:00/0000:00:14.0/usb1/1-1/input/input3",
                          "/devices/pci0000:00/0000:00:14.0/usb1/1-1/input/input3  module usbhid "
                          "not loaded",
                          "/devices/pci0000:00/0000:00:1f.2  module ahci not loaded",
                          "/devices/platform/serial8250  parent of "
                          "/devices/platform/serial8250/tty/ttyS0",
                          "/devices/platform/serial8250/tty/ttyS0  rule mdev.conf:3 (mode 0620)",
                          "/devices/virtual/mem/null  rule mdev.conf:1 (mode 0666)"));
}

TEST(SelectNeededTest, APrefixThatIsNotAPathComponentIsNoParent) {
  const std::vector<std::string> devpaths = {"/devices/platform/serial", "/devices/platform/serial8250"};
  std::vector<NeedDecision> decisions(2);
  decisions[1] = Needed("x");
  const std::vector<NeededDevice> picked = SelectNeeded(devpaths, decisions);
  ASSERT_EQ(picked.size(), 1u);
  EXPECT_EQ(picked[0].index, 1u);
  EXPECT_THAT(SelectNeeded(devpaths, std::vector<NeedDecision>(2)), IsEmpty());
}

}  // namespace
}  // namespace hotring::hotplug

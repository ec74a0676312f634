#include "hotplug/modules/kmod_resolver.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "hotplug/modules/module_index.h"


namespace hotring::hotplug::modules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kPci[] = "pci:v00001234d00005678sv00000000sd00000000bc02sc00i00";

// One tree for every case: dependencies, aliases (glob, several matches, blacklisted),
// softdeps, builtins, install commands, options of names, aliases and the command line.
FakeModulesTree MakeTree(bool binary) {
  FakeModulesTree tree = *FakeModulesTree::Create("6.1.0-fake");
  tree.AddModule({.path = "kernel/lib/crc.ko", .aliases = {"crypto-crc"}, .symbols = {"crc_calc"}});
  tree.AddModule({.path = "kernel/lib/core-util.ko", .deps = {"kernel/lib/crc.ko"}});
  tree.AddModule({.path = "kernel/drivers/net/foo-net.ko",
                  .deps = {"kernel/lib/core-util.ko", "kernel/lib/crc.ko"},
                  .aliases = {"pci:v00001234d00005678sv*sd*bc*sc*i*", "foo-alias"}});
  tree.AddModule({.path = "kernel/drivers/net/bar.ko",
                  .aliases = {"pci:v00001234d*sv*sd*bc02sc*i*", "bar-alias"}});
  tree.AddModule({.path = "kernel/drivers/usb/ehci-hcd.ko"});
  tree.AddModule({.path = "kernel/drivers/usb/uhci-hcd.ko", .aliases = {"usb:uhci*"}});
  tree.AddModule({.path = "kernel/drivers/usb/usb-extra.ko"});
  tree.AddModule({.path = "kernel/drivers/misc/inst.ko"});
  tree.AddModule({.path = "kernel/drivers/misc/opt.ko", .aliases = {"opt-alias"}});
  tree.AddModule({.path = "kernel/drivers/misc/sd.ko", .softdeps = {"pre: crypto-crc"}});
  tree.AddModule({.path = "kernel/drivers/misc/range.ko", .aliases = {"dev:[0-9]x"}});
  tree.AddBuiltin({.path = "kernel/drivers/rtc/rtc-cmos.ko", .aliases = {"platform:rtc_cmos"}});
  tree.AddConfig("/etc/modprobe.d", "local.conf",
                 "blacklist bar\n"
                 "alias my-net foo-net\n"
                 "softdep uhci-hcd pre: ehci-hcd post: usb-extra\n"
                 "install inst /bin/echo hello $CMDLINE_OPTS\n"
                 "options opt a=1\n"
                 "options opt-alias b=2\n");
  // Same name in a later directory: hidden by /etc's.
  tree.AddConfig("/lib/modprobe.d", "local.conf", "options opt hidden=1\n");
  tree.AddConfig("/lib/modprobe.d", "other.conf", "options foo_net\tspeed=10\n");
  EXPECT_TRUE(tree.Write(binary).ok());
  return tree;
}

std::unique_ptr<KmodResolver> MakeResolver(const FakeModulesTree& tree,
                                           std::optional<std::string> cmdline = "opt.c=3") {
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index =
      ModuleIndex::Load({.modules_dir = tree.modules_dir(),
                         .config_paths = DefaultConfigPaths(tree.root()),
                         .kernel_cmdline = std::move(cmdline)});
  EXPECT_TRUE(index.ok()) << index.status();
  return std::make_unique<KmodResolver>(std::shared_ptr<const ModuleIndex>(std::move(*index)));
}

std::vector<std::string> Names(const LoadPlan& plan) {
  std::vector<std::string> names;
  for (const ModuleToLoad& m : plan.modules) names.push_back(m.name);
  return names;
}

class KmodResolverTest : public ::testing::TestWithParam<bool> {
 protected:
  KmodResolverTest() : tree_(MakeTree(GetParam())), resolver_(MakeResolver(tree_)) {}
  std::string Show(absl::string_view query, ProbeOptions options = {}) const {
    return FormatShowDepends(resolver_->Probe(query, options));
  }
  std::string Path(absl::string_view rel) const { return absl::StrCat(tree_.modules_dir(), "/", rel); }

  FakeModulesTree tree_;
  std::unique_ptr<KmodResolver> resolver_;
};

TEST_P(KmodResolverTest, AliasGlobResolvesDependenciesFirstAndSkipsBlacklistedMatch) {
  // Both foo_net and bar match; bar is blacklisted and matched through an alias.
  EXPECT_THAT(resolver_->Lookup(kPci), ElementsAre("foo_net", "bar"));
  EXPECT_EQ(Show(kPci), absl::StrCat("insmod ", Path("kernel/lib/crc.ko"), " \n",
                                     "insmod ", Path("kernel/lib/core-util.ko"), " \n",
                                     "insmod ", Path("kernel/drivers/net/foo-net.ko"),
                                     " speed=10 \n"));
  const LoadPlan plan = *resolver_->Resolve(kPci, true);
  EXPECT_THAT(Names(plan), ElementsAre("crc", "core_util", "foo_net"));
  EXPECT_THAT(plan.matched, ElementsAre("foo_net"));  // bar is blacklisted
  EXPECT_THAT(plan.modules[0].needs, IsEmpty());
  EXPECT_THAT(plan.modules[1].needs, ElementsAre("crc"));  // its own modules.dep line
  EXPECT_THAT(plan.modules[2].needs, ElementsAre("crc", "core_util"));
  EXPECT_EQ(plan.modules[2].path, Path("kernel/drivers/net/foo-net.ko"));
  EXPECT_EQ(plan.modules[2].options, "speed=10 ");
  EXPECT_FALSE(plan.blacklisted);
}

TEST_P(KmodResolverTest, BlacklistAppliesToAliasesNotToNamesUnlessAsked) {
  EXPECT_EQ(Show("bar-alias"), "");
  const LoadPlan via_alias = *resolver_->Resolve("bar-alias", false);
  EXPECT_TRUE(via_alias.blacklisted);
  EXPECT_FALSE(via_alias.unmatched());
  EXPECT_THAT(via_alias.modules, IsEmpty());
  // An explicit name loads anyway, except with -b (what the daemon asks for MODALIAS).
  EXPECT_EQ(Show("bar"), absl::StrCat("insmod ", Path("kernel/drivers/net/bar.ko"), " \n"));
  EXPECT_THAT(Names(*resolver_->Resolve("bar", false)), ElementsAre("bar"));
  EXPECT_EQ(Show("bar", {.blacklist_all = true}), "");
  EXPECT_TRUE(resolver_->Resolve("bar", true)->blacklisted);
}

TEST_P(KmodResolverTest, DashesAndUnderscoresAreOneName) {
  EXPECT_THAT(resolver_->Lookup("foo-net"), ElementsAre("foo_net"));
  EXPECT_THAT(resolver_->Lookup("core_util"), ElementsAre("core_util"));
  EXPECT_EQ(Show("core-util"), Show("core_util"));
}

TEST_P(KmodResolverTest, SoftdepPreAndPostSurroundTheModule) {
  EXPECT_EQ(Show("uhci-hcd"), absl::StrCat("insmod ", Path("kernel/drivers/usb/ehci-hcd.ko"), " \n",
                                           "insmod ", Path("kernel/drivers/usb/uhci-hcd.ko"), " \n",
                                           "insmod ", Path("kernel/drivers/usb/usb-extra.ko"),
                                           " \n"));
  // Only the module and its dependencies are required; a softdep may fail to load.
  const Resolution uhci = resolver_->Probe("uhci-hcd", {});
  ASSERT_EQ(uhci.probes.size(), 1u);
  std::vector<bool> required;
  for (const ProbeStep& step : uhci.probes[0].steps) required.push_back(step.required);
  EXPECT_THAT(required, ElementsAre(false, true, false));
  const Resolution foo = resolver_->Probe("foo-net", {});
  ASSERT_EQ(foo.probes.size(), 1u);
  for (const ProbeStep& step : foo.probes[0].steps) EXPECT_TRUE(step.required) << step.name;
  const LoadPlan plan = *resolver_->Resolve("usb:uhci0", true);
  EXPECT_THAT(Names(plan), ElementsAre("ehci_hcd", "uhci_hcd", "usb_extra"));
  EXPECT_THAT(plan.modules[1].needs, ElementsAre("ehci_hcd"));
  EXPECT_THAT(plan.modules[2].needs, ElementsAre("uhci_hcd"));
  // The plan carries it: the loader lets a softdep fail without failing uhci_hcd.
  EXPECT_FALSE(plan.modules[0].required);
  EXPECT_TRUE(plan.modules[1].required);
  EXPECT_FALSE(plan.modules[2].required);
  // And which matched module each belongs to: once uhci_hcd is in the kernel, none is tried.
  EXPECT_THAT(plan.matched, ElementsAre("uhci_hcd"));
  for (const ModuleToLoad& m : plan.modules) EXPECT_THAT(m.wanted_by, ElementsAre("uhci_hcd")) << m.name;
  // modules.softdep's line (from the module's own modinfo) works too; its name is an alias.
  EXPECT_EQ(Show("sd"), absl::StrCat("insmod ", Path("kernel/lib/crc.ko"), " \n", "insmod ",
                                     Path("kernel/drivers/misc/sd.ko"), " \n"));
}

TEST_P(KmodResolverTest, BuiltinsNeedNothing) {
  EXPECT_EQ(Show("platform:rtc_cmos"), "builtin rtc_cmos\n");
  EXPECT_EQ(Show("rtc-cmos"), "builtin rtc_cmos\n");
  const LoadPlan plan = *resolver_->Resolve("platform:rtc_cmos", true);
  ASSERT_EQ(plan.modules.size(), 1u);
  EXPECT_TRUE(plan.modules[0].builtin);
  EXPECT_TRUE(plan.modules[0].path.empty());
}

TEST_P(KmodResolverTest, InstallCommandReplacesTheLoad) {
  EXPECT_EQ(Show("inst"), "install /bin/echo hello $CMDLINE_OPTS \n");
  EXPECT_EQ(Show("inst", {.extra_options = "x=1"}), "install /bin/echo hello $CMDLINE_OPTS x=1\n");
  const LoadPlan plan = *resolver_->Resolve("inst", false);
  ASSERT_EQ(plan.modules.size(), 1u);
  EXPECT_EQ(plan.modules[0].install_command, "/bin/echo hello ");
  EXPECT_TRUE(plan.modules[0].path.empty());
}

TEST_P(KmodResolverTest, OptionsOfNameAliasCommandLineAndArguments) {
  // /lib/modprobe.d/local.conf is hidden by /etc/modprobe.d/local.conf: no hidden=1.
  EXPECT_EQ(Show("opt-alias"),
            absl::StrCat("insmod ", Path("kernel/drivers/misc/opt.ko"), " a=1 b=2 c=3 \n"));
  EXPECT_EQ(Show("opt"), absl::StrCat("insmod ", Path("kernel/drivers/misc/opt.ko"), " a=1 c=3 \n"));
  EXPECT_EQ(Show("opt", {.extra_options = "d=4"}),
            absl::StrCat("insmod ", Path("kernel/drivers/misc/opt.ko"), " a=1 c=3 d=4\n"));
}

TEST_P(KmodResolverTest, SymbolsConfigAliasesAndBracketPatterns) {
  EXPECT_THAT(resolver_->Lookup("symbol:crc_calc"), ElementsAre("crc"));
  EXPECT_THAT(resolver_->Lookup("my-net"), ElementsAre("foo_net"));
  EXPECT_THAT(resolver_->Lookup("dev:7x"), ElementsAre("range"));
  EXPECT_THAT(resolver_->Lookup("dev:ax"), IsEmpty());
  EXPECT_THAT(resolver_->Lookup("bad]"), IsEmpty());
}

TEST_P(KmodResolverTest, UnmatchedAliasesAreCachedNegatively) {
  EXPECT_TRUE(resolver_->Resolve("acpi:NOTHING:", true)->unmatched());
  EXPECT_EQ(resolver_->negative_cache_hits(), 0u);
  EXPECT_TRUE(resolver_->Resolve("acpi:NOTHING:", true)->unmatched());
  EXPECT_EQ(resolver_->negative_cache_hits(), 1u);
  EXPECT_FALSE(resolver_->Resolve("foo-alias", true)->unmatched());
  EXPECT_EQ(resolver_->negative_cache_hits(), 1u);
}

INSTANTIATE_TEST_SUITE_P(BinaryAndTextIndexes, KmodResolverTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Binary" : "Text";
                         });

// Runs kmod's modprobe on the fake tree; stdout only.
std::string RunKmod(const std::vector<std::string>& argv) { return RunCapture(argv); }

// Found by modules_text_fuzz: a modules.dep entry whose file name starts with '.' has no module
// name; it came into the plan as a module named "" that ext4 needed.
TEST(KmodResolverTest, DependencyWithoutAModuleNameIsSkipped) {
  char dir_template[] = "/tmp/kmod_resolver_test.XXXXXX";
  const char* created = ::mkdtemp(dir_template);
  ASSERT_NE(created, nullptr);
  const std::string dir = created;
  std::ofstream(dir + "/modules.dep")
      << "kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko kernel/fs/.ahmbcceko kernel/fs/jbd2/jbd2.ko\n"
         "kernel/lib/crc16.ko:\nkernel/fs/.ko:\nkernel/fs/jbd2/jbd2.ko:\n";
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index =
      ModuleIndex::Load({.modules_dir = dir, .config_paths = {}, .kernel_cmdline = ""});
  ASSERT_TRUE(index.ok()) << index.status();
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
  absl::StatusOr<LoadPlan> plan = resolver.Resolve("ext4", false);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> names;
  for (const ModuleToLoad& module : plan->modules) names.push_back(module.name);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("jbd2", "crc16", "ext4"));
  EXPECT_EQ(names.back(), "ext4");
  EXPECT_THAT(plan->modules.back().needs, ::testing::UnorderedElementsAre("jbd2", "crc16"));
  absl::StatusOr<LoadPlan> nameless = resolver.Resolve("", false);
  ASSERT_TRUE(nameless.ok());
  EXPECT_TRUE(nameless->unmatched());
  (void)!std::system(("rm -rf '" + dir + "'").c_str());
}

// Found by modules_text_fuzz: a hand-written modules.alias whose module is "mo-d" (and one
// whose module is ".x", with no name at all) came out as a module named with a '-'. kmod
// normalises every name it makes a module of (kmod_module_new): "mo-d.ko" is mo_d.
TEST(KmodResolverTest, ModuleNamesFromTheAliasIndexAreNormalised) {
  char dir_template[] = "/tmp/kmod_resolver_test.XXXXXX";
  const char* created = ::mkdtemp(dir_template);
  ASSERT_NE(created, nullptr);
  const std::string dir = created;
  std::ofstream(dir + "/modules.dep") << "kernel/mo-d.ko:\n";
  std::ofstream(dir + "/modules.alias") << "alias ecdh mo-d.ko\nalias nameless .x\n";
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index =
      ModuleIndex::Load({.modules_dir = dir, .config_paths = {}, .kernel_cmdline = ""});
  ASSERT_TRUE(index.ok()) << index.status();
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
  absl::StatusOr<LoadPlan> plan = resolver.Resolve("ecdh", true);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->modules.size(), 1u);
  EXPECT_EQ(plan->modules[0].name, "mo_d");
  EXPECT_EQ(plan->modules[0].path, dir + "/kernel/mo-d.ko");
  absl::StatusOr<LoadPlan> nameless = resolver.Resolve("nameless", true);
  ASSERT_TRUE(nameless.ok());
  EXPECT_TRUE(nameless->unmatched());
  (void)!std::system(("rm -rf '" + dir + "'").c_str());
}

// The fake tree (our index writer's .bin files) read by kmod itself gives the same answers:
// this checks the writer and every rule above against the reference at once.
TEST(KmodResolverAgainstKmodTest, FakeTreeAnswersMatchKmod) {
  const std::string modprobe =
      ::access("/usr/sbin/modprobe", X_OK) == 0 ? "/usr/sbin/modprobe" : "/sbin/modprobe";
  ASSERT_EQ(::access(modprobe.c_str(), X_OK), 0) << "kmod is not installed";
  FakeModulesTree tree = MakeTree(true);
  std::vector<std::string> config_paths;
  std::vector<std::string> kmod_config;
  for (const std::string& dir : DefaultConfigPaths(tree.root())) {
    config_paths.push_back(dir);
    kmod_config.push_back("-C");
    kmod_config.push_back(dir);
  }
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index = ModuleIndex::Load(
      {.modules_dir = tree.modules_dir(), .config_paths = config_paths, .kernel_cmdline = {}});
  ASSERT_TRUE(index.ok()) << index.status();
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
  int compared_nonempty = 0;
  for (const char* query :
       {kPci, "bar", "bar-alias", "foo-net", "core-util", "uhci-hcd", "usb:uhci0", "sd",
        "platform:rtc_cmos", "rtc-cmos", "inst", "opt-alias", "opt", "symbol:crc_calc", "my-net",
        "dev:7x", "crypto-crc", "none"}) {
    for (const bool b : {false, true}) {
      std::vector<std::string> argv = {modprobe, "--show-depends", "-d", tree.root(), "-S",
                                       tree.version()};
      if (b) argv.push_back("-b");
      argv.insert(argv.end(), kmod_config.begin(), kmod_config.end());
      argv.push_back(query);
      const std::string kmod = RunKmod(argv);
      if (!kmod.empty()) ++compared_nonempty;
      EXPECT_EQ(FormatShowDepends(resolver.Probe(query, {.blacklist_all = b})), kmod)
          << query << (b ? " -b" : "");
    }
  }
  EXPECT_GT(compared_nonempty, 20);
}

}  // namespace
}  // namespace hotring::hotplug::modules

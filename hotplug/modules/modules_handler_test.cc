#include "hotplug/modules/modules_handler.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/flags.h"
#include "core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_kernel.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "io/reactor.h"

namespace hotring::hotplug::modules {
namespace {

ModuleToLoad M(const std::string& name, std::vector<std::string> needs = {},
               std::string options = "") {
  ModuleToLoad m;
  m.name = name;
  m.path = absl::StrCat("/lib/modules/test/", name, ".ko");
  m.options = std::move(options);
  m.needs = std::move(needs);
  return m;
}

// qemu-xhci's PCI function: a USB host controller (class 0c0330).
constexpr char kXhciModalias[] = "pci:v00001B36d0000000Dsv00001AF4sd00001100bc0Csc03i30";

// Answers from a table; "bad" fails; counts calls.
class FakeResolver final : public Resolver {
 public:
  explicit FakeResolver(std::map<std::string, LoadPlan> plans) : plans_(std::move(plans)) {}
  absl::StatusOr<LoadPlan> Resolve(absl::string_view query, bool alias_lookup) const override {
    ++calls_;
    last_alias_lookup_ = alias_lookup;
    if (query == "bad") return absl::DataLossError("corrupt index");
    const auto it = plans_.find(std::string(query));
    if (it != plans_.end()) return it->second;
    LoadPlan none;
    none.query = std::string(query);
    return none;
  }
  mutable std::atomic<int> calls_{0};
  mutable bool last_alias_lookup_ = false;

 private:
  std::map<std::string, LoadPlan> plans_;
};

LoadPlan Plan(std::vector<ModuleToLoad> modules) {
  LoadPlan p;
  p.modules = std::move(modules);
  return p;
}

Event AddEvent(const std::string& modalias, const std::string& action = "add") {
  Event e;
  e.action = action;
  e.devpath = "/devices/pci0000:00/0000:00:19.0";
  e.subsystem = "pci";
  e.seqnum = 7;
  e.modalias = modalias;
  return e;
}

std::map<std::string, uint64_t> Counters(const Handler& h) {
  std::vector<std::pair<std::string, uint64_t>> out;
  h.AppendCounters(out);
  return std::map<std::string, uint64_t>(out.begin(), out.end());
}

class ModulesHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<io::Reactor>> r = io::Reactor::Create();
    ASSERT_TRUE(r.ok()) << r.status();
    reactor_ = std::move(*r);
    kernel_ = std::make_shared<FakeKernel>();
    std::map<std::string, LoadPlan> plans;
    plans["pci:e1000e"] = Plan({M("mii"), M("e1000e", {"mii"}, "debug=1")});
    plans[kXhciModalias] = Plan({M("usbcore"), M("xhci_hcd", {"usbcore"})});
    plans["pci:broken"] = Plan({M("fw_missing"), M("needs_fw", {"fw_missing"})});
    LoadPlan black;
    black.blacklisted = true;
    plans["pci:blacklisted"] = black;
    resolver_ = std::make_shared<FakeResolver>(plans);
  }

  void MakeHandler(Loader::Options options = {}) {
    absl::StatusOr<std::unique_ptr<ModulesHandler>> h = ModulesHandler::Create(
        [this]() -> absl::StatusOr<std::shared_ptr<const Resolver>> {
          ++factory_calls_;
          if (!next_factory_error_.ok()) return next_factory_error_;
          return std::shared_ptr<const Resolver>(next_resolver_ ? next_resolver_ : resolver_);
        },
        kernel_, options, &start_error_);
    ASSERT_TRUE(h.ok()) << h.status();
    handler_ = std::move(*h);
  }

  HandlerResult Handle(const Event& event) {
    absl::StatusOr<HandlerResult> r = reactor_->BlockOn(handler_->Handle(*reactor_, event));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : HandlerResult{};
  }

  std::unique_ptr<io::Reactor> reactor_;
  std::shared_ptr<FakeKernel> kernel_;
  std::shared_ptr<FakeResolver> resolver_;
  std::shared_ptr<FakeResolver> next_resolver_;
  absl::Status next_factory_error_;
  absl::Status start_error_;
  int factory_calls_ = 0;
  std::unique_ptr<ModulesHandler> handler_;
};

TEST_F(ModulesHandlerTest, LoadsTheModulesOfAnAddEventsModalias) {
  MakeHandler();
  const HandlerResult r = Handle(AddEvent("pci:e1000e"));
  EXPECT_EQ(r.outcome, HandlerOutcome::kHandled);
  const std::vector<FakeKernel::Call> calls = kernel_->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "mii");
  EXPECT_EQ(calls[1].name, "e1000e");
  EXPECT_EQ(calls[1].options, "debug=1");
  // MODALIAS is an alias lookup: the blacklist applies.
  EXPECT_TRUE(resolver_->last_alias_lookup_);
  const std::map<std::string, uint64_t> c = Counters(*handler_);
  EXPECT_EQ(c.at("modules_events"), 1u);
  EXPECT_EQ(c.at("modules_loaded"), 2u);
  EXPECT_EQ(c.at("modules_failed"), 0u);
  EXPECT_EQ(handler_->Name(), "modules");
}

// udev's `kmod load` from another stage: the same resolver and loader; a module the MODALIAS
// path already loaded is not loaded again; blacklisted and unmatched names are no error.
TEST_F(ModulesHandlerTest, LoadsWhatOtherStagesAskForOnce) {
  MakeHandler();
  Handle(AddEvent("pci:e1000e"));
  ASSERT_EQ(kernel_->calls().size(), 2u);
  const std::vector<std::string> names = {"pci:e1000e", "pci:blacklisted", "acpi:NOTHING:"};
  absl::StatusOr<absl::Status> r = reactor_->BlockOn(handler_->LoadModules(*reactor_, names));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << *r;
  EXPECT_EQ(kernel_->calls().size(), 2u) << "mii and e1000e were loaded already";
  EXPECT_TRUE(resolver_->last_alias_lookup_);
  const std::vector<std::string> usb = {kXhciModalias};
  r = reactor_->BlockOn(handler_->LoadModules(*reactor_, usb));
  ASSERT_TRUE(r.ok() && r->ok());
  EXPECT_THAT(kernel_->started(), ::testing::ElementsAre("mii", "e1000e", "usbcore", "xhci_hcd"));
  const std::vector<std::string> bad = {"bad"};
  r = reactor_->BlockOn(handler_->LoadModules(*reactor_, bad));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(Counters(*handler_).at("modules_asked_by_stages"), 5u);
}

// A bus controller's plan goes first (its loads counted, at nice -10 where allowed) once the
// daemon turns that on; other devices' plans never do.
TEST_F(ModulesHandlerTest, BusControllersDriversGoFirstWhenTurnedOn) {
  MakeHandler();
  Handle(AddEvent(kXhciModalias));
  EXPECT_EQ(Counters(*handler_).at("modules_first"), 0u) << "off unless the daemon turns it on";
  kernel_ = std::make_shared<FakeKernel>();
  MakeHandler();
  handler_->set_controllers_first(true);
  Handle(AddEvent("pci:e1000e"));
  EXPECT_EQ(Counters(*handler_).at("modules_first"), 0u) << "a NIC is no bus controller";
  Handle(AddEvent(kXhciModalias));
  EXPECT_EQ(Counters(*handler_).at("modules_first"), 2u);
  const int boosted = ::geteuid() == 0 ? -10 : 0;
  std::map<std::string, int> nice;
  for (const FakeKernel::Call& call : kernel_->calls()) nice[call.name] = call.nice;
  EXPECT_EQ(nice, (std::map<std::string, int>{
                      {"mii", 0}, {"e1000e", 0}, {"usbcore", boosted}, {"xhci_hcd", boosted}}));
}

// Keeps the steps a stage reports for the timeline.
class StepLog final : public StepRecorder {
 public:
  void Step(const Event& event, absl::string_view what, MonoTime started, absl::Duration took,
            bool ok) override {
    steps.push_back(absl::StrCat(event.seqnum.value_or(0), " ", what, ok ? " ok" : " error"));
    spans.emplace_back(started, started + took);
  }
  void LetDevicesBelowStart(const Event& event) override {
    // Before any load of the event ended: its steps are not in yet.
    released.push_back(absl::StrCat(event.seqnum.value_or(0), " after ", steps.size(), " steps"));
  }
  std::vector<std::string> steps;
  std::vector<std::pair<MonoTime, MonoTime>> spans;  // each step's start and end
  std::vector<std::string> released;
};

// A device without a node lets the devices below it start while its driver loads; one with a
// node (the rules after this link make it) does not; nor does an event with nothing to load.
TEST_F(ModulesHandlerTest, ANodelessDeviceLetsTheDevicesBelowItStartWhileItsDriverLoads) {
  MakeHandler();
  StepLog log;
  handler_->SetStepRecorder(&log);
  Handle(AddEvent("pci:e1000e"));
  Event with_node = AddEvent("pci:broken");
  with_node.seqnum = 8;
  with_node.devname = "fw0";
  Handle(with_node);
  Event unmatched = AddEvent("acpi:NOTHING:");
  unmatched.seqnum = 9;
  Handle(unmatched);
  EXPECT_THAT(log.released, ::testing::ElementsAre("7 after 0 steps"));
  EXPECT_EQ(log.steps.size(), 4u);  // mii, e1000e, fw_missing, needs_fw: the loads did run
}

TEST_F(ModulesHandlerTest, EachLoadIsAStepOnTheTimelineOfTheEventThatStartedIt) {
  MakeHandler();
  StepLog log;
  handler_->SetStepRecorder(&log);
  const MonoTime before = MonoNow();
  Handle(AddEvent("pci:e1000e"));
  const MonoTime after = MonoNow();
  // Each step is placed where its load ran (the plan reports them all at its end): mii, which
  // e1000e needs, ended before e1000e started, and both lie inside the handling.
  ASSERT_EQ(log.spans.size(), 2u);
  EXPECT_LE(before, log.spans[0].first);
  EXPECT_LE(log.spans[0].second, log.spans[1].first);
  EXPECT_LE(log.spans[1].second, after);
  Event again = AddEvent("pci:e1000e");
  again.seqnum = 8;
  Handle(again);  // already loaded: nothing ran for it
  Event broken = AddEvent("pci:broken");
  broken.seqnum = 9;
  kernel_->FailWith("fw_missing", ENOENT);
  Handle(broken);
  EXPECT_THAT(log.steps, ::testing::ElementsAre("7 mii ok", "7 e1000e ok", "9 fw_missing error"));
}

TEST_F(ModulesHandlerTest, OnlyAddEventsWithAModaliasAreLookedAt) {
  MakeHandler();
  EXPECT_EQ(Handle(AddEvent("pci:e1000e", "change")).outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(Handle(AddEvent("pci:e1000e", "remove")).outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(Handle(AddEvent("pci:e1000e", "bind")).outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(Handle(AddEvent("")).outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(resolver_->calls_.load(), 0);
  EXPECT_TRUE(kernel_->calls().empty());
  EXPECT_EQ(Counters(*handler_).at("modules_events"), 0u);
}

TEST_F(ModulesHandlerTest, TheEventIsHandledOnlyOnceItsModulesAreLoaded) {
  MakeHandler();
  kernel_->Gate();
  const Event event = AddEvent("pci:e1000e");
  Task<HandlerResult> task = handler_->Handle(*reactor_, event);
  task.Start();
  ASSERT_TRUE(kernel_->WaitInFlight(1));  // mii is being loaded
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(reactor_->RunOnce(false).ok());
  EXPECT_FALSE(task.done());
  kernel_->ReleaseAll();
  for (int i = 0; i < 1000 && !task.done(); ++i) ASSERT_TRUE(reactor_->RunOnce(true).ok());
  ASSERT_TRUE(task.done());
  EXPECT_EQ(task.TakeResult().outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"mii", "e1000e"}));
}

TEST_F(ModulesHandlerTest, BlacklistedUnmatchedAndBrokenAliasesAreCounted) {
  MakeHandler();
  EXPECT_EQ(Handle(AddEvent("pci:blacklisted")).outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(Handle(AddEvent("acpi:NOTHING:")).outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(Handle(AddEvent("acpi:OTHER:")).outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(Handle(AddEvent("bad")).outcome, HandlerOutcome::kHandled);
  EXPECT_TRUE(kernel_->calls().empty());
  const std::map<std::string, uint64_t> c = Counters(*handler_);
  EXPECT_EQ(c.at("modules_blacklisted"), 1u);
  EXPECT_EQ(c.at("aliases_unmatched"), 2u);
  EXPECT_EQ(c.at("modules_resolve_errors"), 1u);
  EXPECT_EQ(c.at("modules_events"), 4u);
}

TEST_F(ModulesHandlerTest, AFailedModuleIsCountedButTheEventStillGoesOn) {
  MakeHandler();
  kernel_->FailWith("fw_missing", ENOENT);
  const HandlerResult r = Handle(AddEvent("pci:broken"));
  // Later links (rules, --exec) still run: the device gets its node without its driver.
  EXPECT_EQ(r.outcome, HandlerOutcome::kHandled);
  EXPECT_EQ(r.detail, "modules: 2 failed");
  const std::map<std::string, uint64_t> c = Counters(*handler_);
  EXPECT_EQ(c.at("modules_failed"), 1u);
  EXPECT_EQ(c.at("modules_dependency_failed"), 1u);
  EXPECT_EQ(c.at("modules_loaded"), 0u);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"fw_missing"}));
}

TEST_F(ModulesHandlerTest, AReloadThatFailsKeepsTheOldIndex) {
  MakeHandler();
  EXPECT_EQ(factory_calls_, 1);
  next_factory_error_ = absl::NotFoundError("modules.dep: No such file");
  EXPECT_FALSE(handler_->Reload().ok());
  EXPECT_EQ(factory_calls_, 2);
  // Still resolving with the first resolver.
  Handle(AddEvent("pci:e1000e"));
  EXPECT_EQ(kernel_->calls().size(), 2u);
  EXPECT_EQ(resolver_->calls_.load(), 1);
  const std::map<std::string, uint64_t> c = Counters(*handler_);
  EXPECT_EQ(c.at("modules_reloads"), 1u);
  EXPECT_EQ(c.at("modules_reload_failures"), 1u);
}

TEST_F(ModulesHandlerTest, AReloadThatWorksReplacesTheIndex) {
  MakeHandler();
  std::map<std::string, LoadPlan> plans;
  plans["pci:e1000e"] = Plan({M("e1000e_v2")});
  next_resolver_ = std::make_shared<FakeResolver>(plans);
  ASSERT_TRUE(handler_->Reload().ok());
  Handle(AddEvent("pci:e1000e"));
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"e1000e_v2"}));
  EXPECT_EQ(resolver_->calls_.load(), 0);
}

TEST_F(ModulesHandlerTest, WithoutAnIndexEventsPassUntilAReloadFindsOne) {
  next_factory_error_ = absl::NotFoundError("no modules.dep");
  MakeHandler();
  EXPECT_FALSE(start_error_.ok());
  EXPECT_FALSE(handler_->has_index());
  EXPECT_EQ(Handle(AddEvent("pci:e1000e")).outcome, HandlerOutcome::kHandled);
  EXPECT_TRUE(kernel_->calls().empty());
  EXPECT_EQ(Counters(*handler_).at("modules_no_index"), 1u);
  next_factory_error_ = absl::OkStatus();
  ASSERT_TRUE(handler_->Reload().ok());
  Handle(AddEvent("pci:e1000e"));
  EXPECT_EQ(kernel_->calls().size(), 2u);
}

TEST_F(ModulesHandlerTest, AReloadDuringALoadLeavesThatEventItsResolver) {
  MakeHandler();
  kernel_->Gate();
  const Event event = AddEvent("pci:e1000e");
  Task<HandlerResult> task = handler_->Handle(*reactor_, event);
  task.Start();
  ASSERT_TRUE(kernel_->WaitInFlight(1));
  std::weak_ptr<FakeResolver> first = resolver_;
  next_resolver_ = std::make_shared<FakeResolver>(std::map<std::string, LoadPlan>{});
  resolver_.reset();
  ASSERT_TRUE(handler_->Reload().ok());
  kernel_->ReleaseAll();
  for (int i = 0; i < 1000 && !task.done(); ++i) ASSERT_TRUE(reactor_->RunOnce(true).ok());
  ASSERT_TRUE(task.done());
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"mii", "e1000e"}));
  task.Reset();
  EXPECT_TRUE(first.expired()) << "the replaced resolver is freed once its last event is done";
}

TEST(KernelCmdlineFlagTest, RecognisesTheFlagAndItsValues) {
  EXPECT_TRUE(KernelCmdlineFlag("ro quiet hotring.modules_serial", "hotring.modules_serial"));
  EXPECT_TRUE(KernelCmdlineFlag("hotring.modules_serial=1 ro", "hotring.modules_serial"));
  EXPECT_TRUE(KernelCmdlineFlag("hotring.modules_serial=yes\n", "hotring.modules_serial"));
  EXPECT_FALSE(KernelCmdlineFlag("hotring.modules_serial=0", "hotring.modules_serial"));
  EXPECT_FALSE(KernelCmdlineFlag("hotring.modules_serial hotring.modules_serial=off",
                                 "hotring.modules_serial"));
  EXPECT_FALSE(KernelCmdlineFlag("hotring.modules_serialx", "hotring.modules_serial"));
  EXPECT_FALSE(KernelCmdlineFlag("xhotring.modules_serial", "hotring.modules_serial"));
  EXPECT_FALSE(KernelCmdlineFlag("", "hotring.modules_serial"));
}

TEST(AddModulesFlagsTest, DeclaresItsFlagsBesideTheCommandsOwn) {
  const std::vector<std::string> args = {
      "--no-modules", "--modules-root=/img", "--kernel-version", "6.1.0-9-amd64",
      "--modules-serial", "--kernel-cmdline", "a b", "--modules-dry-run-log", "/tmp/x",
      "--modules-dry-run-delay=0.5", "--no-controllers-first", "--exec", "/bin/true"};
  ModulesOptions options;
  std::string exec;
  FlagSet flags("daemon", "usage: hotring daemon [options]");
  flags.String("--exec", "PROGRAM", &exec, "the daemon's own flag");
  AddModulesFlags(flags, options);
  const absl::StatusOr<FlagsParsed> parsed = flags.Parse(args);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, FlagsParsed::kRun);
  EXPECT_EQ(exec, "/bin/true");
  EXPECT_FALSE(options.enabled);
  EXPECT_EQ(options.root, "/img");
  EXPECT_EQ(options.kernel_version, "6.1.0-9-amd64");
  EXPECT_TRUE(options.serial);
  EXPECT_EQ(options.kernel_cmdline, "a b");
  EXPECT_EQ(options.dry_run_log, "/tmp/x");
  EXPECT_EQ(options.dry_run_delay, absl::Milliseconds(500));
  EXPECT_FALSE(options.controllers_first);
  // "/" is the default root, kept as "".
  ModulesOptions root_options;
  FlagSet root_flags("daemon", "usage");
  AddModulesFlags(root_flags, root_options);
  ASSERT_TRUE(root_flags.Parse({"--modules-root", "/"}).ok());
  EXPECT_EQ(root_options.root, "");

  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--kernel-version", "../../etc"}, {"--kernel-version="}, {"--no-modules=1"},
           {"--modules-dry-run-delay", "-1"}}) {
    ModulesOptions unused;
    FlagSet bad_flags("daemon", "usage");
    AddModulesFlags(bad_flags, unused);
    const absl::StatusOr<FlagsParsed> refused = bad_flags.Parse(bad);
    ASSERT_FALSE(refused.ok()) << bad[0];
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad[0];
    EXPECT_TRUE(absl::StartsWith(refused.status().message(), "daemon: " + bad[0].substr(0, bad[0].find('='))))
        << refused.status();
  }
  // The help lists every flag under the modules heading.
  const std::string usage = flags.Usage();
  EXPECT_NE(usage.find("modules (MODALIAS of add events; on by default):\n"), std::string::npos);
  for (const char* flag : {"--no-modules", "--modules-root DIR", "--kernel-version V",
                           "--modules-serial", "--no-controllers-first", "--kernel-cmdline TEXT",
                           "--modules-dry-run-log FILE", "--modules-dry-run-delay S",
                           "hotring.modules_threads=N"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MakeDaemonModulesLinkTest, RefusesToLoadAnotherKernelsModules) {
  ModulesOptions options;
  options.kernel_version = "0.0.0-not-running";
  options.kernel_cmdline = "";
  absl::StatusOr<std::unique_ptr<ModulesHandler>> link =
      MakeDaemonModulesLink(options, "/sys", absl::Seconds(10), absl::Seconds(1));
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(link.status().message().find("--modules-dry-run-log"), absl::string_view::npos);
}

TEST(MakeDaemonModulesLinkTest, ADryRunOverAFakeTreeResolvesAndRecords) {
  absl::StatusOr<FakeModulesTree> tree = FakeModulesTree::Create("6.1.0-hotring-test");
  ASSERT_TRUE(tree.ok()) << tree.status();
  tree->AddModule({.path = "kernel/lib/crc.ko"});
  tree->AddModule({.path = "kernel/drivers/net/foo-net.ko",
                   .deps = {"kernel/lib/crc.ko"},
                   .aliases = {"pci:v00001234d*"}});
  tree->AddConfig("/etc/modprobe.d", "foo.conf", "options foo-net speed=10\n");
  ASSERT_TRUE(tree->Write().ok());

  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string log = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/dry-run-", ::getpid());
  ModulesOptions options;
  options.root = tree->root();
  options.kernel_version = tree->version();
  options.kernel_cmdline = "crc.level=3";
  options.dry_run_log = log;
  absl::StatusOr<std::unique_ptr<ModulesHandler>> link =
      MakeDaemonModulesLink(options, "/sys", absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(link.ok()) << link.status();
  ASSERT_TRUE((*link)->has_index());
  EXPECT_FALSE((*link)->loader().options().serial);

  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  ASSERT_TRUE(reactor.ok());
  const Event event = AddEvent("pci:v00001234d00005678sv00000000sd00000000bc02sc00i00");
  absl::StatusOr<HandlerResult> r = (*reactor)->BlockOn((*link)->Handle(**reactor, event));
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string dir = tree->modules_dir();
  // Options exactly as finit_module would get them (kmod's string ends in a space).
  EXPECT_EQ(ReadFile(log), absl::StrCat("load crc ", dir, "/kernel/lib/crc.ko level=3 \n",
                                        "load foo_net ", dir,
                                        "/kernel/drivers/net/foo-net.ko speed=10 \n"));
  ::unlink(log.c_str());
}

TEST(MakeDaemonModulesLinkTest, TheKernelCommandLineCanAskForSerialLoading) {
  ModulesOptions options;
  options.root = "/nonexistent-root";
  options.kernel_cmdline = "quiet hotring.modules_serial";
  options.dry_run_log = "/dev/null";
  absl::StatusOr<std::unique_ptr<ModulesHandler>> link =
      MakeDaemonModulesLink(options, "/sys", absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_TRUE((*link)->loader().options().serial);
  // No tree there: the link stays, without an index.
  EXPECT_FALSE((*link)->has_index());
}

// 2 x CPUs loads at once (4 to 16), unless the flag or the kernel command line says otherwise
// (the flag wins; a bad number is ignored).
TEST(MakeDaemonModulesLinkTest, LoadsAtOnceFromTheDefaultTheCommandLineOrTheFlag) {
  auto threads = [](std::string cmdline, size_t flag) {
    ModulesOptions options;
    options.root = "/nonexistent-root";
    options.kernel_cmdline = std::move(cmdline);
    options.dry_run_log = "/dev/null";
    options.threads = flag;
    absl::StatusOr<std::unique_ptr<ModulesHandler>> link =
        MakeDaemonModulesLink(options, "/sys", absl::Seconds(10), absl::Seconds(1));
    EXPECT_TRUE(link.ok()) << link.status();
    return link.ok() ? (*link)->loader().options().threads : size_t{0};
  };
  const size_t fallback = threads("quiet", 0);
  EXPECT_GE(fallback, 4u);
  EXPECT_LE(fallback, 16u);
  EXPECT_EQ(threads("quiet hotring.modules_threads=24", 0), 24u);
  EXPECT_EQ(threads("hotring.modules_threads=24", 7), 7u);
  EXPECT_EQ(threads("hotring.modules_threads=0", 0), fallback);
  EXPECT_EQ(threads("hotring.modules_threads=x", 0), fallback);
  EXPECT_EQ(threads("hotring.modules_threads=65", 0), fallback);
}

}  // namespace
}  // namespace hotring::hotplug::modules

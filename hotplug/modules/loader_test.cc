#include "hotplug/modules/loader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <set>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"
#include "core/task_scope.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_kernel.h"
#include "io/reactor.h"

namespace hotring::hotplug::modules {
namespace {

// Drives the reactor until a task that was already started (Start()) has finished, and returns
// its value. (BlockOn would resume it a second time.)
template <typename T>
T Finish(io::Reactor& reactor, Task<T>& task) {
  for (int i = 0; i < 100000 && !task.done(); ++i) {
    const absl::StatusOr<size_t> ran = reactor.RunOnce(true);
    if (!ran.ok()) break;
  }
  EXPECT_TRUE(task.done()) << "the task never finished";
  if (!task.done()) return T();
  return task.TakeResult();
}

// ThreadSanitizer cannot follow the spawner's clone(CLONE_VM | CLONE_VFORK) child in a process
// that has threads (the pool's): it sees the child's closes as the parent's, and refuses to
// start threads after it. Tests that run install commands are skipped there; the spawner has
// its own tests, and these run under ASan.
#if defined(__SANITIZE_THREAD__)
constexpr bool kSpawnsUnderTsan = true;
#else
constexpr bool kSpawnsUnderTsan = false;
#endif
#define SKIP_SPAWNING_UNDER_TSAN() \
  if (kSpawnsUnderTsan) GTEST_SKIP() << "spawns a child: not supported under tsan"

ModuleToLoad M(const std::string& name, std::vector<std::string> needs = {},
               std::string options = "") {
  ModuleToLoad m;
  m.name = name;
  m.path = absl::StrCat("/lib/modules/test/kernel/", name, ".ko");
  m.options = std::move(options);
  m.needs = std::move(needs);
  return m;
}

LoadPlan Plan(const std::string& query, std::vector<ModuleToLoad> modules) {
  LoadPlan plan;
  plan.query = query;
  plan.modules = std::move(modules);
  return plan;
}

const ModuleResult* Find(const PlanResult& result, const std::string& name) {
  for (const ModuleResult& m : result.modules) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

ModuleOutcome OutcomeOf(const PlanResult& result, const std::string& name) {
  const ModuleResult* m = Find(result, name);
  EXPECT_NE(m, nullptr) << name << " missing from the result";
  return m == nullptr ? ModuleOutcome::kFailed : m->outcome;
}

size_t Position(const std::vector<std::string>& order, const std::string& name) {
  return std::find(order.begin(), order.end(), name) - order.begin();
}

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp", "/loaderXXXXXX");
  char* made = ::mkdtemp(pattern.data());
  return made == nullptr ? std::string() : std::string(made);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { Make({}); }

  void Make(Loader::Options options) {
    loader_.reset();
    if (reactor_ == nullptr) {
      absl::StatusOr<std::unique_ptr<io::Reactor>> r = io::Reactor::Create();
      ASSERT_TRUE(r.ok()) << r.status();
      reactor_ = std::move(*r);
    }
    kernel_ = std::make_shared<FakeKernel>();
    absl::StatusOr<std::unique_ptr<Loader>> loader = Loader::Create(options, kernel_);
    ASSERT_TRUE(loader.ok()) << loader.status();
    loader_ = std::move(*loader);
  }

  PlanResult Run(LoadPlan plan) {
    absl::StatusOr<PlanResult> result = reactor_->BlockOn(loader_->Load(*reactor_, std::move(plan)));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : PlanResult{};
  }

  // Runs several plans at once and returns their results in the same order.
  std::vector<PlanResult> RunAll(std::vector<LoadPlan> plans) {
    std::vector<PlanResult> results(plans.size());
    TaskScope scope;
    for (size_t i = 0; i < plans.size(); ++i) {
      scope.Spawn([](Loader& loader, io::Reactor& reactor, LoadPlan plan,
                     PlanResult& out) -> Task<void> {
        out = co_await loader.Load(reactor, std::move(plan));
      }(*loader_, *reactor_, std::move(plans[i]), results[i]));
    }
    const absl::Status joined =
        reactor_->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope));
    EXPECT_TRUE(joined.ok()) << joined;
    return results;
  }

  // Releases gated loads in `order`, each once it has started, on another thread (the test's
  // thread drives the reactor meanwhile). Records what had started at each release.
  // Before the first release it waits until `first_after` loads have started.
  std::thread Releaser(std::vector<std::string> order,
                       std::vector<std::vector<std::string>>* started_at_release,
                       size_t first_after = 1) {
    return std::thread([this, order = std::move(order), started_at_release, first_after] {
      kernel_->WaitStarted(first_after);
      for (const std::string& name : order) {
        for (int i = 0; i < 2000; ++i) {
          const std::vector<std::string> started = kernel_->started();
          if (std::find(started.begin(), started.end(), name) != started.end()) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (started_at_release != nullptr) started_at_release->push_back(kernel_->started());
        kernel_->Release(name);
      }
    });
  }

  std::unique_ptr<io::Reactor> reactor_;
  std::shared_ptr<FakeKernel> kernel_;
  std::unique_ptr<Loader> loader_;
};

TEST_F(LoaderTest, LoadsEveryModuleWithItsPathAndOptions) {
  const PlanResult result = Run(Plan("pci:v00008086d00001234", {
      M("mii"), M("e1000e", {"mii"}, "debug=1 copybreak=64")}));
  ASSERT_EQ(result.modules.size(), 2u);
  EXPECT_EQ(result.failures(), 0u);
  EXPECT_EQ(OutcomeOf(result, "mii"), ModuleOutcome::kLoaded);
  EXPECT_EQ(OutcomeOf(result, "e1000e"), ModuleOutcome::kLoaded);
  const std::vector<FakeKernel::Call> calls = kernel_->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "mii");
  EXPECT_EQ(calls[0].path, "/lib/modules/test/kernel/mii.ko");
  EXPECT_EQ(calls[0].options, "");
  EXPECT_EQ(calls[1].name, "e1000e");
  EXPECT_EQ(calls[1].options, "debug=1 copybreak=64");
  EXPECT_EQ(loader_->counters().loaded, 2u);
  EXPECT_EQ(reactor_->in_flight(), 0u);
}

TEST_F(LoaderTest, AModuleStartsOnlyOnceEverythingItNeedsIsLoaded) {
  kernel_->Gate();
  // c needs b needs a; d needs nothing; e needs a and d.
  std::vector<std::vector<std::string>> seen;
  std::thread releaser = Releaser({"a", "d", "b", "e", "c"}, &seen, /*first_after=*/2);
  const PlanResult result = Run(Plan("q", {M("a"), M("d"), M("b", {"a"}), M("e", {"a", "d"}),
                                           M("c", {"b"})}));
  releaser.join();
  EXPECT_EQ(result.failures(), 0u);
  ASSERT_EQ(seen.size(), 5u);
  // Once the two modules with no needs had started, nothing else did until a was released.
  EXPECT_EQ(std::set<std::string>(seen[0].begin(), seen[0].end()),
            (std::set<std::string>{"a", "d"}));
  const std::vector<std::string> order = kernel_->started();
  ASSERT_EQ(order.size(), 5u);
  EXPECT_LT(Position(order, "a"), Position(order, "b"));
  EXPECT_LT(Position(order, "b"), Position(order, "c"));
  EXPECT_LT(Position(order, "a"), Position(order, "e"));
  EXPECT_LT(Position(order, "d"), Position(order, "e"));
  // The records agree: each dependant started after what it needs had finished.
  std::map<std::string, LoadRecord> records;
  for (const LoadRecord& r : loader_->records()) records[r.name] = r;
  ASSERT_EQ(records.size(), 5u);
  auto end = [&](const std::string& n) { return records[n].start + records[n].duration; };
  EXPECT_GE(records["b"].start, end("a"));
  EXPECT_GE(records["c"].start, end("b"));
  EXPECT_GE(records["e"].start, end("a"));
  EXPECT_GE(records["e"].start, end("d"));
}

TEST_F(LoaderTest, NoWaves_ADependantStartsWhileAnUnrelatedLoadStillRuns) {
  kernel_->Gate();
  // slow never gets released until b (which needs a) has started: with waves, b would wait
  // for the first wave (a and slow) to end.
  std::thread releaser([this] {
    kernel_->WaitStarted(2);
    kernel_->Release("a");
    kernel_->WaitStarted(3);
    kernel_->Release("b");
    kernel_->Release("slow");
  });
  const PlanResult result = Run(Plan("q", {M("a"), M("slow"), M("b", {"a"})}));
  releaser.join();
  EXPECT_EQ(result.failures(), 0u);
  const std::vector<std::string> order = kernel_->started();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[2], "b");
}

TEST_F(LoaderTest, IndependentModulesLoadInParallel) {
  kernel_->Gate();
  Task<PlanResult> task = loader_->Load(*reactor_, Plan("q", {M("a"), M("b"), M("c")}));
  task.Start();
  // All three are inside finit_module at once, on pool threads.
  ASSERT_TRUE(kernel_->WaitInFlight(3));
  EXPECT_EQ(loader_->in_flight(), 3u);
  kernel_->ReleaseAll();
  absl::StatusOr<PlanResult> result = Finish(*reactor_, task);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->failures(), 0u);
  EXPECT_EQ(kernel_->peak_in_flight(), 3u);
  EXPECT_EQ(loader_->counters().peak_in_flight, 3u);
}

TEST_F(LoaderTest, SerialModeLoadsOneAtATimeInPlanOrder) {
  Make({.serial = true});
  kernel_->Gate();
  std::vector<std::vector<std::string>> seen;
  std::thread releaser = Releaser({"a", "b", "c", "d"}, &seen);
  const PlanResult result = Run(Plan("q", {M("a"), M("b"), M("c"), M("d")}));
  releaser.join();
  EXPECT_EQ(result.failures(), 0u);
  ASSERT_EQ(seen.size(), 4u);
  // Whenever one was released, it was the only one that had started since the last release.
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].size(), i + 1) << i;
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(kernel_->peak_in_flight(), 1u);
  EXPECT_EQ(loader_->counters().peak_in_flight, 1u);
}

TEST_F(LoaderTest, SerialModeLoadsDependantsInPlanOrderWhateverFinishesFirst) {
  Make({.serial = true});
  kernel_->Gate();
  // When a finishes, b's need is done but d's is not: b must still wait for its turn after d,
  // or the order would depend on which of a and c the loads finish first.
  std::thread releaser = Releaser({"a", "c", "d", "b"}, nullptr);
  const PlanResult result =
      Run(Plan("q", {M("a"), M("c"), M("d", {"c"}), M("b", {"a"})}));
  releaser.join();
  EXPECT_EQ(result.failures(), 0u);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"a", "c", "d", "b"}));
  EXPECT_EQ(kernel_->peak_in_flight(), 1u);
}

TEST_F(LoaderTest, SerialModeAlsoSerialisesAcrossPlans) {
  Make({.serial = true});
  kernel_->Gate();
  // First come, first served: p1's two modules queue before p2's.
  std::thread releaser = Releaser({"a", "b", "x", "y"}, nullptr);
  const std::vector<PlanResult> results =
      RunAll({Plan("p1", {M("a"), M("b")}), Plan("p2", {M("x"), M("y")})});
  releaser.join();
  EXPECT_EQ(results[0].failures() + results[1].failures(), 0u);
  EXPECT_EQ(kernel_->peak_in_flight(), 1u);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"a", "b", "x", "y"}));
}

TEST_F(LoaderTest, FirstPlansGoAheadOfWaitingLoadsAtAHigherPriority) {
  Make({.threads = 1});
  kernel_->Gate();
  // The one thread is busy with p1's a; then p2's x waits for it, and p3 (first) comes after x.
  Task<PlanResult> p1 = loader_->Load(*reactor_, Plan("p1", {M("a")}));
  p1.Start();
  ASSERT_TRUE(kernel_->WaitInFlight(1));
  LoadPlan controller = Plan("p3", {M("u")});
  controller.first = true;
  Task<PlanResult> p2 = loader_->Load(*reactor_, Plan("p2", {M("x")}));
  Task<PlanResult> p3 = loader_->Load(*reactor_, std::move(controller));
  p2.Start();
  p3.Start();
  kernel_->ReleaseAll();
  for (Task<PlanResult>* task : {&p1, &p2, &p3}) EXPECT_EQ(Finish(*reactor_, *task).failures(), 0u);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"a", "u", "x"}));
  EXPECT_EQ(loader_->counters().first, 1u);
  // u's thread ran at nice -10 (root may lower it; anyone else keeps 0), and went back to 0.
  const int boosted = ::geteuid() == 0 ? -10 : 0;
  std::map<std::string, int> nice;
  for (const FakeKernel::Call& call : kernel_->calls()) nice[call.name] = call.nice;
  EXPECT_EQ(nice, (std::map<std::string, int>{{"a", 0}, {"u", boosted}, {"x", 0}}));
}

TEST_F(LoaderTest, TwoEventsNeedingOneModuleLoadItOnceAndBothSeeTheResult) {
  kernel_->Gate();
  Task<PlanResult> first = loader_->Load(*reactor_, Plan("usb:1", {M("usbcore"), M("hid", {"usbcore"})}));
  Task<PlanResult> second =
      loader_->Load(*reactor_, Plan("usb:2", {M("usbcore"), M("storage", {"usbcore"})}));
  first.Start();
  second.Start();
  ASSERT_TRUE(kernel_->WaitInFlight(1));
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"usbcore"}));
  EXPECT_EQ(loader_->counters().joined, 1u);
  kernel_->ReleaseAll();
  absl::StatusOr<PlanResult> r1 = Finish(*reactor_, first);
  absl::StatusOr<PlanResult> r2 = Finish(*reactor_, second);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(OutcomeOf(*r1, "usbcore"), ModuleOutcome::kLoaded);
  EXPECT_EQ(OutcomeOf(*r2, "usbcore"), ModuleOutcome::kLoaded);
  EXPECT_EQ(OutcomeOf(*r1, "hid"), ModuleOutcome::kLoaded);
  EXPECT_EQ(OutcomeOf(*r2, "storage"), ModuleOutcome::kLoaded);
  const std::vector<std::string> order = kernel_->started();
  EXPECT_EQ(std::count(order.begin(), order.end(), "usbcore"), 1);
  EXPECT_EQ(order.size(), 3u);
  EXPECT_EQ(loader_->counters().loaded, 3u);
}

TEST_F(LoaderTest, AJoinedFailureFailsBothEvents) {
  kernel_->Gate();
  kernel_->FailWith("fw", ENOENT);
  Task<PlanResult> first = loader_->Load(*reactor_, Plan("a1", {M("fw"), M("d1", {"fw"})}));
  Task<PlanResult> second = loader_->Load(*reactor_, Plan("a2", {M("fw"), M("d2", {"fw"})}));
  first.Start();
  second.Start();
  ASSERT_TRUE(kernel_->WaitInFlight(1));
  kernel_->ReleaseAll();
  absl::StatusOr<PlanResult> r1 = Finish(*reactor_, first);
  absl::StatusOr<PlanResult> r2 = Finish(*reactor_, second);
  ASSERT_TRUE(r1.ok() && r2.ok());
  for (const PlanResult* r : {&*r1, &*r2}) {
    const ModuleResult* fw = Find(*r, "fw");
    ASSERT_NE(fw, nullptr);
    EXPECT_EQ(fw->outcome, ModuleOutcome::kFailed);
    EXPECT_EQ(StatusErrno(fw->status), ENOENT);
    EXPECT_EQ(r->failures(), 2u);
  }
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"fw"}));
  EXPECT_EQ(loader_->counters().failed, 1u);
  EXPECT_EQ(loader_->counters().dependency_failed, 2u);
}

TEST_F(LoaderTest, AFailedDependencyFailsItsDependantsOnly) {
  kernel_->FailWith("a", ENODEV);
  const PlanResult result =
      Run(Plan("q", {M("a"), M("other"), M("b", {"a"}), M("c", {"b"}), M("d", {"other"})}));
  const ModuleResult* a = Find(result, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->outcome, ModuleOutcome::kFailed);
  EXPECT_EQ(StatusErrno(a->status), ENODEV);
  EXPECT_EQ(OutcomeOf(result, "b"), ModuleOutcome::kDependencyFailed);
  EXPECT_EQ(OutcomeOf(result, "c"), ModuleOutcome::kDependencyFailed);
  EXPECT_NE(Find(result, "c")->status.message().find("needs b"), absl::string_view::npos)
      << Find(result, "c")->status;
  EXPECT_EQ(OutcomeOf(result, "other"), ModuleOutcome::kLoaded);
  EXPECT_EQ(OutcomeOf(result, "d"), ModuleOutcome::kLoaded);
  // b and c were never attempted.
  const std::vector<std::string> order = kernel_->started();
  EXPECT_EQ(std::set<std::string>(order.begin(), order.end()),
            (std::set<std::string>{"a", "other", "d"}));
  EXPECT_EQ(loader_->counters().failed, 1u);
  EXPECT_EQ(loader_->counters().dependency_failed, 2u);
  // The failure is recorded with its errno.
  bool recorded = false;
  for (const LoadRecord& r : loader_->records()) {
    if (r.name == "a") recorded = r.outcome == ModuleOutcome::kFailed && r.error == ENODEV;
  }
  EXPECT_TRUE(recorded);
}

TEST_F(LoaderTest, AFailedSoftdepOnlyOrdersTheModuleAfterIt) {
  // softdep uhci pre: ehci: ehci is loaded first, but as with kmod its failure fails nothing.
  kernel_->FailWith("ehci", ENODEV);
  ModuleToLoad ehci = M("ehci");
  ehci.required = false;
  const PlanResult result = Run(Plan("q", {ehci, M("uhci", {"ehci"})}));
  EXPECT_EQ(OutcomeOf(result, "ehci"), ModuleOutcome::kFailed);
  EXPECT_EQ(OutcomeOf(result, "uhci"), ModuleOutcome::kLoaded);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"ehci", "uhci"}));
  EXPECT_EQ(loader_->counters().dependency_failed, 0u);
}

// A SCSI disk's MODALIAS: sd_mod needs crc_t10dif, whose softdep crct10dif_pclmul fails on a
// CPU without PCLMUL. As kmod (udev's kmod builtin, modprobe): once sd_mod is in the kernel, a
// later disk's event tries nothing of its list again, the failed softdep included.
LoadPlan DiskPlan() {
  ModuleToLoad pclmul = M("crct10dif_pclmul");
  pclmul.required = false;
  LoadPlan plan = Plan("scsi:t-0x00", {pclmul, M("crc_t10dif", {"crct10dif_pclmul"}), M("sd_mod", {"crc_t10dif"})});
  plan.matched = {"sd_mod"};
  for (ModuleToLoad& m : plan.modules) m.wanted_by = {"sd_mod"};
  return plan;
}

TEST_F(LoaderTest, NothingOfAMatchedModulesListIsTriedOnceTheKernelHasIt) {
  kernel_->FailWith("crct10dif_pclmul", ENODEV);
  const PlanResult first = Run(DiskPlan());
  EXPECT_EQ(OutcomeOf(first, "crct10dif_pclmul"), ModuleOutcome::kFailed);
  EXPECT_EQ(OutcomeOf(first, "sd_mod"), ModuleOutcome::kLoaded);
  for (int disk = 0; disk < 3; ++disk) {
    const PlanResult later = Run(DiskPlan());
    EXPECT_EQ(later.failures(), 0u);
    EXPECT_EQ(OutcomeOf(later, "crct10dif_pclmul"), ModuleOutcome::kNotNeeded);
    EXPECT_EQ(OutcomeOf(later, "crc_t10dif"), ModuleOutcome::kNotNeeded);
    EXPECT_EQ(OutcomeOf(later, "sd_mod"), ModuleOutcome::kAlreadyLoaded);
  }
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"crct10dif_pclmul", "crc_t10dif", "sd_mod"}));
  EXPECT_EQ(loader_->counters().failed, 1u);
  EXPECT_EQ(loader_->counters().not_needed, 6u);
}

TEST_F(LoaderTest, AnAliasMatchingTwoModulesLoadsTheListOfTheOneMissing) {
  // The alias matched a (loaded) and b (not): a's softdep is not tried, b's list is.
  kernel_->SetLoaded("a");
  ModuleToLoad soft_a = M("soft_a");
  soft_a.required = false;
  soft_a.wanted_by = {"a"};
  ModuleToLoad a = M("a", {"soft_a", "common"});
  a.wanted_by = {"a"};
  ModuleToLoad b = M("b", {"common"});
  b.wanted_by = {"b"};
  ModuleToLoad common = M("common");
  common.wanted_by = {"a", "b"};
  LoadPlan plan = Plan("alias", {soft_a, common, a, b});
  plan.matched = {"a", "b"};
  const PlanResult result = Run(std::move(plan));
  EXPECT_EQ(result.failures(), 0u);
  EXPECT_EQ(OutcomeOf(result, "soft_a"), ModuleOutcome::kNotNeeded);
  EXPECT_EQ(OutcomeOf(result, "a"), ModuleOutcome::kAlreadyLoaded);
  EXPECT_EQ(OutcomeOf(result, "common"), ModuleOutcome::kLoaded);
  EXPECT_EQ(OutcomeOf(result, "b"), ModuleOutcome::kLoaded);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"common", "b"}));
}

TEST_F(LoaderTest, AFailedLoadIsLoggedAtKmodsLevel) {
  // A quiet console shows errors only: a driver with no device here is no error.
  const std::string log = absl::StrCat(::testing::TempDir(), "/loader_levels.log");
  ASSERT_TRUE(InitLogging(LogSink::kFile, LogLevel::kDebug, "hotring", log).ok());
  kernel_->FailWith("nodev", ENODEV);
  kernel_->FailWith("io", EIO);
  ModuleToLoad missing = M("missing");
  missing.path.clear();  // ENOENT: no module file
  (void)Run(Plan("q", {M("nodev"), M("io"), missing}));
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kInfo).ok());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), ::testing::HasSubstr("notice: modules: loading nodev failed"));
  EXPECT_THAT(text.str(), ::testing::HasSubstr("error: modules: loading io failed"));
  EXPECT_THAT(text.str(), ::testing::HasSubstr("warning: modules: loading missing failed"));
}

TEST_F(LoaderTest, AFailedModuleIsRetriedByALaterEvent) {
  kernel_->FailWith("flaky", EAGAIN);
  EXPECT_EQ(OutcomeOf(Run(Plan("q1", {M("flaky")})), "flaky"), ModuleOutcome::kFailed);
  kernel_->ClearFailure("flaky");
  EXPECT_EQ(OutcomeOf(Run(Plan("q2", {M("flaky")})), "flaky"), ModuleOutcome::kLoaded);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"flaky", "flaky"}));
}

TEST_F(LoaderTest, AlreadyLoadedAndEexistAreSuccess) {
  kernel_->SetLoaded("present");   // /sys/module/present exists
  kernel_->FailWith("racing", EEXIST);  // someone else loaded it between the check and the call
  const PlanResult result = Run(Plan("q", {M("present"), M("racing"),
                                           M("user", {"present", "racing"})}));
  EXPECT_EQ(result.failures(), 0u);
  EXPECT_EQ(OutcomeOf(result, "present"), ModuleOutcome::kAlreadyLoaded);
  EXPECT_EQ(OutcomeOf(result, "racing"), ModuleOutcome::kAlreadyLoaded);
  EXPECT_EQ(OutcomeOf(result, "user"), ModuleOutcome::kLoaded);
  // present was never handed to finit_module.
  const std::vector<std::string> order = kernel_->started();
  EXPECT_EQ(std::count(order.begin(), order.end(), "present"), 0);
  EXPECT_EQ(loader_->counters().already_loaded, 2u);
  EXPECT_EQ(loader_->counters().loaded, 1u);
  // A later event needing a module loaded earlier does not load it again.
  const PlanResult again = Run(Plan("q2", {M("user")}));
  EXPECT_EQ(OutcomeOf(again, "user"), ModuleOutcome::kAlreadyLoaded);
  EXPECT_EQ(kernel_->started().size(), 2u);
}

TEST_F(LoaderTest, BuiltinModulesNeedNothing) {
  ModuleToLoad builtin = M("usbcore");
  builtin.builtin = true;
  builtin.path.clear();
  const PlanResult result = Run(Plan("q", {builtin, M("usbhid", {"usbcore"})}));
  EXPECT_EQ(result.failures(), 0u);
  EXPECT_EQ(OutcomeOf(result, "usbcore"), ModuleOutcome::kBuiltin);
  EXPECT_EQ(OutcomeOf(result, "usbhid"), ModuleOutcome::kLoaded);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"usbhid"}));
  EXPECT_EQ(loader_->counters().builtin, 1u);
}

TEST_F(LoaderTest, AModuleWithNoFileFailsWithEnoent) {
  ModuleToLoad ghost = M("ghost");  // only configuration names it: no path, not builtin
  ghost.path.clear();
  const PlanResult result = Run(Plan("q", {ghost, M("user", {"ghost"})}));
  const ModuleResult* g = Find(result, "ghost");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->outcome, ModuleOutcome::kFailed);
  EXPECT_EQ(StatusErrno(g->status), ENOENT);
  EXPECT_EQ(OutcomeOf(result, "user"), ModuleOutcome::kDependencyFailed);
  EXPECT_TRUE(kernel_->started().empty());
}

TEST_F(LoaderTest, ACycleInThePlanFailsInsteadOfHanging) {
  const PlanResult result = Run(Plan("q", {M("free"), M("x", {"y"}), M("y", {"x"})}));
  EXPECT_EQ(OutcomeOf(result, "free"), ModuleOutcome::kLoaded);
  EXPECT_EQ(OutcomeOf(result, "x"), ModuleOutcome::kDependencyFailed);
  EXPECT_EQ(OutcomeOf(result, "y"), ModuleOutcome::kDependencyFailed);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"free"}));
}

TEST_F(LoaderTest, AStuckLoadIsNoLongerWaitedForAfterTheLimit) {
  Make({.wait_limit = absl::Milliseconds(50)});
  kernel_->Gate();
  // stuck's init never returns (until the test releases it, after the plan has given up).
  const PlanResult result = Run(Plan("q", {M("stuck"), M("user", {"stuck"})}));
  EXPECT_EQ(OutcomeOf(result, "stuck"), ModuleOutcome::kTimedOut);
  EXPECT_EQ(OutcomeOf(result, "user"), ModuleOutcome::kTimedOut);
  EXPECT_EQ(loader_->counters().timed_out, 2u);
  EXPECT_EQ(loader_->in_flight(), 1u) << "the load itself goes on";
  kernel_->ReleaseAll();
  for (int i = 0; i < 1000 && loader_->in_flight() > 0; ++i) {
    ASSERT_TRUE(reactor_->RunOnce(true).ok());
  }
  EXPECT_EQ(loader_->in_flight(), 0u);
  EXPECT_EQ(loader_->counters().loaded, 1u);
  // The next event finds stuck loaded and loads what needs it.
  const PlanResult again = Run(Plan("q", {M("stuck"), M("user", {"stuck"})}));
  EXPECT_EQ(OutcomeOf(again, "stuck"), ModuleOutcome::kAlreadyLoaded);
  EXPECT_EQ(OutcomeOf(again, "user"), ModuleOutcome::kLoaded);
}

TEST_F(LoaderTest, AnEmptyPlanCompletesAtOnce) {
  const PlanResult result = Run(Plan("q", {}));
  EXPECT_TRUE(result.modules.empty());
  EXPECT_TRUE(kernel_->calls().empty());
}

TEST_F(LoaderTest, InstallCommandsRunThroughTheShellWithTheirOptions) {
  SKIP_SPAWNING_UNDER_TSAN();
  const std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  const std::string out = dir + "/install.out";
  ModuleToLoad snd = M("snd_hda", {}, "index=1 model=auto");
  // As resolution hands it over: the options already in place of $CMDLINE_OPTS.
  snd.install_command =
      absl::StrCat("echo \"$MODPROBE_MODULE [index=1 model=auto]\" >> ", out, "; exit 0");
  const PlanResult result = Run(Plan("q", {snd, M("after", {"snd_hda"})}));
  EXPECT_EQ(result.failures(), 0u);
  EXPECT_EQ(OutcomeOf(result, "snd_hda"), ModuleOutcome::kInstalled);
  EXPECT_EQ(OutcomeOf(result, "after"), ModuleOutcome::kLoaded);
  EXPECT_EQ(ReadFile(out), "snd_hda [index=1 model=auto]\n");
  // The kernel was never asked to load snd_hda itself.
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"after"}));
  EXPECT_EQ(loader_->counters().installed, 1u);
}

TEST_F(LoaderTest, AFailingInstallCommandFailsTheModuleAndItsDependants) {
  SKIP_SPAWNING_UNDER_TSAN();
  ModuleToLoad bad = M("bad");
  bad.install_command = "exit 3";
  const PlanResult result = Run(Plan("q", {bad, M("user", {"bad"})}));
  const ModuleResult* b = Find(result, "bad");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->outcome, ModuleOutcome::kFailed);
  EXPECT_NE(b->status.message().find("exited 3"), absl::string_view::npos) << b->status;
  EXPECT_EQ(OutcomeOf(result, "user"), ModuleOutcome::kDependencyFailed);
  EXPECT_TRUE(kernel_->started().empty());
}

TEST_F(LoaderTest, InstallCommandsOfAnAlreadyLoadedModuleDoNotRun) {
  const std::string dir = TempDir();
  const std::string out = dir + "/install.out";
  kernel_->SetLoaded("present");
  ModuleToLoad m = M("present");
  m.install_command = absl::StrCat("echo ran >> ", out);
  const PlanResult result = Run(Plan("q", {m}));
  EXPECT_EQ(OutcomeOf(result, "present"), ModuleOutcome::kAlreadyLoaded);
  EXPECT_EQ(ReadFile(out), "");
}

TEST_F(LoaderTest, ARecordingKernelTakesInstallCommands) {
  kernel_->TakeInstalls();
  ModuleToLoad m = M("snd", {}, "a=1");
  m.install_command = "/sbin/modprobe --ignore-install snd a=1 && echo hi";
  const PlanResult result = Run(Plan("q", {m}));
  EXPECT_EQ(OutcomeOf(result, "snd"), ModuleOutcome::kInstalled);
  const std::vector<FakeKernel::Call> calls = kernel_->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].kind, "install");
  EXPECT_EQ(calls[0].command, "/sbin/modprobe --ignore-install snd a=1 && echo hi");
}

TEST_F(LoaderTest, SerialModeSerialisesInstallCommandsToo) {
  SKIP_SPAWNING_UNDER_TSAN();
  Make({.serial = true});
  const std::string dir = TempDir();
  const std::string out = dir + "/log";
  std::vector<ModuleToLoad> modules;
  for (const char* name : {"i1", "i2", "i3"}) {
    ModuleToLoad m = M(name);
    // If two ran at once, one's "start" would come between the other's "start" and "end".
    m.install_command = absl::StrCat("echo start ", name, " >> ", out, "; sleep 0.05; echo end ",
                                     name, " >> ", out);
    modules.push_back(std::move(m));
  }
  const PlanResult result = Run(Plan("q", std::move(modules)));
  EXPECT_EQ(result.failures(), 0u);
  EXPECT_EQ(ReadFile(out), "start i1\nend i1\nstart i2\nend i2\nstart i3\nend i3\n");
}

TEST_F(LoaderTest, DroppingOneWaiterLeavesTheLoadToTheOther) {
  kernel_->Gate();
  Task<PlanResult> dropped = loader_->Load(*reactor_, Plan("a1", {M("shared")}));
  Task<PlanResult> kept = loader_->Load(*reactor_, Plan("a2", {M("shared")}));
  dropped.Start();
  kept.Start();
  ASSERT_TRUE(kernel_->WaitInFlight(1));
  dropped.Reset();
  kernel_->ReleaseAll();
  absl::StatusOr<PlanResult> result = Finish(*reactor_, kept);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(OutcomeOf(*result, "shared"), ModuleOutcome::kLoaded);
  EXPECT_EQ(kernel_->started().size(), 1u);
}

TEST_F(LoaderTest, DestroyingTheLoaderWithLoadsInFlightIsClean) {
  kernel_->Gate();
  {
    Task<PlanResult> task = loader_->Load(*reactor_, Plan("q", {M("a"), M("b", {"a"})}));
    task.Start();
    ASSERT_TRUE(kernel_->WaitInFlight(1));
  }  // the event is gone; the load of a keeps running on its thread
  std::thread releaser([this] {
    // Deliberately late, not a wait for a state: the release is meant to come while
    // loader_.reset() below waits for the pool. Should it come first (a loaded machine), the
    // reset finds the load done, and the assertions below hold all the same.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kernel_->ReleaseAll();
  });
  loader_.reset();  // joins the pool once a returns
  releaser.join();
  for (int i = 0; i < 100 && reactor_->in_flight() > 0; ++i) {
    ASSERT_TRUE(reactor_->RunOnce(true).ok());
  }
  EXPECT_EQ(reactor_->in_flight(), 0u);
  EXPECT_EQ(kernel_->started(), (std::vector<std::string>{"a"}));
}

TEST(SysKernelTest, ReadsSysModuleUnderItsRoot) {
  const std::string root = TempDir();
  ASSERT_EQ(::mkdir((root + "/module").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((root + "/module/loop").c_str(), 0755), 0);
  SysKernel kernel(root);
  EXPECT_TRUE(kernel.IsLoaded("loop"));
  EXPECT_FALSE(kernel.IsLoaded("e1000e"));
}

TEST(SysKernelTest, AMissingFileFailsBeforeTheKernelIsAsked) {
  // open() fails, so finit_module is never reached.
  SysKernel kernel("/nonexistent");
  ModuleToLoad m = M("ghost");
  m.path = "/nonexistent/ghost.ko";
  absl::StatusOr<Kernel::LoadResult> r = kernel.Load(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(StatusErrno(r.status()), ENOENT);
  EXPECT_NE(r.status().message().find("open(/nonexistent/ghost.ko)"), absl::string_view::npos);
}

TEST(DryRunKernelTest, RecordsLoadsAndInstallsAndRemembersThem) {
  const std::string path = TempDir() + "/dry.log";
  absl::StatusOr<std::unique_ptr<DryRunKernel>> kernel =
      DryRunKernel::Create(path, absl::ZeroDuration());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_FALSE((*kernel)->IsLoaded("a"));
  ASSERT_TRUE((*kernel)->Load(M("a", {}, "x=1")).ok());
  EXPECT_TRUE((*kernel)->IsLoaded("a"));
  EXPECT_TRUE((*kernel)->TakeInstall(M("b"), "echo b"));
  EXPECT_TRUE((*kernel)->IsLoaded("b"));
  EXPECT_EQ(ReadFile(path), "load a /lib/modules/test/kernel/a.ko x=1\ninstall b echo b\n");
}

}  // namespace
}  // namespace hotring::hotplug::modules

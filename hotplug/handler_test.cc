// HandlerChain: links run in order, the first failure ends the chain, reload and counters reach
// every link, and every link's Serve runs at once until the chain's is dropped.
#include "hotplug/handler.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "core/task_scope.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::hotplug {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// Records each call in a shared journal and answers with a fixed outcome.
class JournalLink final : public Handler {
 public:
  JournalLink(std::string name, HandlerOutcome outcome, std::vector<std::string>* journal)
      : name_(std::move(name)), outcome_(outcome), journal_(journal) {}

  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override {
    journal_->push_back(name_ + ":" + event.devpath);
    HandlerResult result;
    result.outcome = outcome_;
    result.detail = name_;
    co_return result;
  }
  absl::Status Reload() override {
    journal_->push_back(name_ + ":reload");
    return outcome_ == HandlerOutcome::kHandled ? absl::OkStatus()
                                                : absl::InternalError(name_ + " broken");
  }
  void AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const override {
    out.emplace_back(name_ + "_calls", journal_->size());
  }
  void ReleaseIdleMemory() override { journal_->push_back(name_ + ":idle"); }
  void Starting(const Event& event) override { journal_->push_back(name_ + ":start " + event.devpath); }
  [[nodiscard]] std::string Name() const override { return name_; }

 private:
  std::string name_;
  HandlerOutcome outcome_;
  std::vector<std::string>* journal_;
};

HandlerResult HandleOnce(HandlerChain& chain, const Event& event) {
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  EXPECT_TRUE(reactor.ok()) << reactor.status();
  absl::StatusOr<HandlerResult> result = (*reactor)->BlockOn(chain.Handle(**reactor, event));
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : HandlerResult{};
}

TEST(HandlerChainTest, RunsLinksInOrderAndStopsAtTheFirstFailure) {
  std::vector<std::string> journal;
  std::vector<std::unique_ptr<Handler>> links;
  links.push_back(std::make_unique<JournalLink>("modules", HandlerOutcome::kHandled, &journal));
  links.push_back(std::make_unique<JournalLink>("rules", HandlerOutcome::kFailed, &journal));
  links.push_back(std::make_unique<JournalLink>("exec", HandlerOutcome::kHandled, &journal));
  HandlerChain chain(std::move(links));
  Event event;
  event.devpath = "/devices/a";
  const HandlerResult result = HandleOnce(chain, event);
  EXPECT_EQ(result.outcome, HandlerOutcome::kFailed);
  EXPECT_EQ(result.detail, "rules");
  EXPECT_THAT(journal, ElementsAre("modules:/devices/a", "rules:/devices/a"));
  // The daemon's Starting reaches every link, also those the event never got to.
  journal.clear();
  chain.Starting(event);
  EXPECT_THAT(journal, ElementsAre("modules:start /devices/a", "rules:start /devices/a", "exec:start /devices/a"));
  EXPECT_EQ(chain.Name(), "modules+rules+exec");
}

TEST(HandlerChainTest, AllLinksHandledGivesTheLastResult) {
  std::vector<std::string> journal;
  std::vector<std::unique_ptr<Handler>> links;
  links.push_back(std::make_unique<JournalLink>("a", HandlerOutcome::kHandled, &journal));
  links.push_back(std::make_unique<JournalLink>("b", HandlerOutcome::kHandled, &journal));
  HandlerChain chain(std::move(links));
  Event event;
  event.devpath = "/devices/x";
  EXPECT_EQ(HandleOnce(chain, event).detail, "b");
  EXPECT_THAT(journal, ElementsAre("a:/devices/x", "b:/devices/x"));
}

TEST(HandlerChainTest, ReloadAndIdleReachEveryLinkAndReloadKeepsTheFirstError) {
  std::vector<std::string> journal;
  std::vector<std::unique_ptr<Handler>> links;
  links.push_back(std::make_unique<JournalLink>("a", HandlerOutcome::kFailed, &journal));
  links.push_back(std::make_unique<JournalLink>("b", HandlerOutcome::kTimedOut, &journal));
  HandlerChain chain(std::move(links));
  const absl::Status reloaded = chain.Reload();
  EXPECT_EQ(reloaded.message(), "a broken");
  EXPECT_THAT(journal, ElementsAre("a:reload", "b:reload"));
  std::vector<std::pair<std::string, uint64_t>> counters;
  chain.AppendCounters(counters);
  EXPECT_THAT(counters, ElementsAre(Pair("a_calls", 2), Pair("b_calls", 2)));
  chain.ReleaseIdleMemory();
  EXPECT_THAT(journal, ElementsAre("a:reload", "b:reload", "a:idle", "b:idle"));
}

TEST(HandlerChainTest, EmptyChainIsNamedNone) {
  HandlerChain chain({});
  EXPECT_TRUE(chain.empty());
  EXPECT_EQ(chain.Name(), "none");
}

// A link that serves between events: it says when it starts, then waits until cancelled (or,
// with `finish`, returns at once) and says so when its frame goes.
class ServingLink final : public Handler {
 public:
  ServingLink(std::string name, bool finish, std::vector<std::string>* journal)
      : name_(std::move(name)), finish_(finish), journal_(journal) {}
  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override { co_return HandlerResult{}; }
  Task<void> Serve(io::Reactor& reactor) override {
    struct Goodbye {
      std::string what;
      std::vector<std::string>* journal;
      ~Goodbye() { journal->push_back(what); }
    } goodbye{name_ + ":stopped", journal_};
    journal_->push_back(name_ + ":serving");
    if (finish_) co_return;
    (void)co_await io::Sleep(reactor, absl::Hours(1));
  }
  [[nodiscard]] std::string Name() const override { return name_; }

 private:
  std::string name_;
  bool finish_;
  std::vector<std::string>* journal_;
};

TEST(HandlerChainTest, ServeRunsEveryLinksServeAtOnceAndDroppingItStopsThem) {
  std::vector<std::string> journal;
  std::vector<std::unique_ptr<Handler>> links;
  links.push_back(std::make_unique<JournalLink>("plain", HandlerOutcome::kHandled, &journal));
  links.push_back(std::make_unique<ServingLink>("watch", /*finish=*/false, &journal));
  links.push_back(std::make_unique<ServingLink>("quick", /*finish=*/true, &journal));
  links.push_back(std::make_unique<ServingLink>("other", /*finish=*/false, &journal));
  HandlerChain chain(std::move(links));
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  ASSERT_TRUE(reactor.ok()) << reactor.status();
  auto serve_a_while = [&]() -> Task<void> {
    TaskScope services;
    services.Spawn(chain.Serve(**reactor));
    (void)co_await io::Sleep(**reactor, absl::Milliseconds(20));
    journal.push_back("cancel");
    services.CancelAll();
  };
  ASSERT_TRUE((*reactor)->BlockOn(serve_a_while()).ok());
  // The plain link has nothing to serve; the others all started before any was stopped.
  EXPECT_THAT(journal, ElementsAre("watch:serving", "quick:serving", "quick:stopped", "other:serving", "cancel",
                                   ::testing::AnyOf("watch:stopped", "other:stopped"),
                                   ::testing::AnyOf("watch:stopped", "other:stopped")));
}

}  // namespace
}  // namespace hotring::hotplug

// HandlerChain: links run in order, the first failure ends the chain, reload and counters reach
// every link.
#include "hotplug/handler.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

TEST(HandlerChainTest, ReloadReachesEveryLinkAndKeepsTheFirstError) {
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
}

TEST(HandlerChainTest, EmptyChainIsNamedNone) {
  HandlerChain chain({});
  EXPECT_TRUE(chain.empty());
  EXPECT_EQ(chain.Name(), "none");
}

}  // namespace
}  // namespace hotring::hotplug

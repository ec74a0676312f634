#include "ipc/dgram_fanin.h"

#include <sys/resource.h>

#include "core/json.h"
#include "gtest/gtest.h"
#include "io/reactor.h"
#include "ipc/bench_cli.h"

namespace hotring::ipc {
namespace {

absl::StatusOr<DgramFaninResult> RunFanin(DgramFaninOptions options) {
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  if (!reactor.ok()) return reactor.status();
  return (*reactor)->BlockOn(RunDgramFanin(**reactor, options));
}

void ExpectFigures(const DgramFaninResult& result, const DgramFaninOptions& options) {
  ASSERT_EQ(result.figures.size(), options.waiters.size());
  for (size_t i = 0; i < options.waiters.size(); ++i) {
    const DgramFaninFigure& f = result.figures[i];
    EXPECT_EQ(f.waiter, options.waiters[i]);
    EXPECT_EQ(f.messages, options.messages);
    EXPECT_EQ(f.woken_client, 0) << "only the first client ever receives anything";
    EXPECT_GT(f.exchange_seconds, 0);
    // The waiter cannot wake before the exchanger finished its loop.
    EXPECT_GE(f.wait_seconds, f.exchange_seconds);
  }
}

TEST(DgramFaninTest, ConnectedRunMeasuresBothWaiters) {
  DgramFaninOptions options;
  options.clients = 100;
  options.connected = true;
  options.messages = 2000;
  absl::StatusOr<DgramFaninResult> result = RunFanin(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->connected);
  ExpectFigures(*result, options);
}

TEST(DgramFaninTest, UnconnectedRunMeasuresBothWaiters) {
  DgramFaninOptions options;
  options.clients = 100;
  options.connected = false;
  options.messages = 2000;
  options.waiters = {FaninWaiter::kSelect, FaninWaiter::kUring};
  options.cpu = 0;
  absl::StatusOr<DgramFaninResult> result = RunFanin(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectFigures(*result, options);
  const std::string json = FormatDgramFaninResult(*result, true);
  EXPECT_TRUE(JsonNumberField(json, "uring_wait_s").ok()) << json;
  EXPECT_TRUE(JsonNumberField(json, "select_wait_s").ok()) << json;
}

TEST(DgramFaninTest, TheRingWatchesMoreSocketsThanSelectCan) {
  DgramFaninOptions options;
  options.clients = 1500;
  options.messages = 200;
  options.waiters = {FaninWaiter::kUring};
  absl::StatusOr<DgramFaninResult> result = RunFanin(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectFigures(*result, options);
}

TEST(DgramFaninTest, BadOptionsAreRejected) {
  DgramFaninOptions options;
  options.clients = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateDgramFaninOptions(options)));
  options.clients = 2000;  // select() cannot watch that many
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateDgramFaninOptions(options)));
  options.waiters = {FaninWaiter::kUring};
  EXPECT_TRUE(ValidateDgramFaninOptions(options).ok());
  options.messages = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateDgramFaninOptions(options)));

  EXPECT_EQ(BenchDgramFaninCommand({"--clients", "0"}), 2);
  EXPECT_EQ(BenchDgramFaninCommand({"--messages", "-1"}), 2);
  EXPECT_EQ(BenchDgramFaninCommand({"--clients", "5000", "--waiter", "select"}), 2);
  EXPECT_EQ(BenchDgramFaninCommand({"--waiter", "poll"}), 2);
  EXPECT_EQ(BenchDgramFaninCommand({"--cpu", "4095"}), 2);
}

}  // namespace
}  // namespace hotring::ipc

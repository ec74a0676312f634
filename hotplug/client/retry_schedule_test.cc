#include "hotplug/client/retry_schedule.h"

#include <vector>

#include "gtest/gtest.h"

namespace hotring::hotplug {
namespace {

using Kind = RetryStep::Kind;
using absl::Milliseconds;
using absl::Seconds;

const MonoTime kStart = MonoTime() + Seconds(1000);

TEST(RetryScheduleTest, AnAbsentDaemonIsLookedForAgainAfterADoublingBackoff) {
  RetrySchedule schedule({.timeout = Seconds(5), .retransmit = Seconds(1)}, kStart);
  MonoTime now = kStart;
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 9; ++i) {
    const RetryStep step = schedule.After(SendOutcome::kNoDaemon, now);
    ASSERT_EQ(step.kind, Kind::kSleep);
    waits.push_back(step.wait);
    now = now + step.wait;
  }
  EXPECT_EQ(waits, (std::vector<absl::Duration>{Milliseconds(1), Milliseconds(2), Milliseconds(4),
                                                Milliseconds(8), Milliseconds(16), Milliseconds(32),
                                                Milliseconds(50), Milliseconds(50),
                                                Milliseconds(50)}));
}

// The bug this schedule fixes: a send that reached nobody was followed by a whole retransmit
// period (1 s) of waiting for a reply that could not come.
TEST(RetryScheduleTest, OnlyAQueuedSendWaitsForAReply) {
  RetrySchedule schedule({.timeout = Seconds(5), .retransmit = Seconds(1)}, kStart);
  const RetryStep absent = schedule.After(SendOutcome::kNoDaemon, kStart);
  EXPECT_EQ(absent.kind, Kind::kSleep);
  EXPECT_EQ(absent.wait, Milliseconds(1));
  const RetryStep queued = schedule.After(SendOutcome::kQueued, kStart + Milliseconds(1));
  EXPECT_EQ(queued.kind, Kind::kAwaitReply);
  EXPECT_EQ(queued.wait, Seconds(1));
}

TEST(RetryScheduleTest, AFullQueueIsRetriedLikeAnAbsentDaemon) {
  RetrySchedule schedule({.timeout = Seconds(5), .retransmit = Seconds(1)}, kStart);
  EXPECT_EQ(schedule.After(SendOutcome::kQueueFull, kStart).wait, Milliseconds(1));
  EXPECT_EQ(schedule.After(SendOutcome::kQueueFull, kStart).wait, Milliseconds(2));
  const RetryStep step = schedule.After(SendOutcome::kNoDaemon, kStart);
  EXPECT_EQ(step.kind, Kind::kSleep);
  EXPECT_EQ(step.wait, Milliseconds(4));  // one backoff for both: either way nothing was queued
}

// A daemon that took a request and then vanished (killed, restarting) is looked for quickly
// again: a queued send resets the backoff.
TEST(RetryScheduleTest, AQueuedSendResetsTheBackoff) {
  RetrySchedule schedule({.timeout = Seconds(60), .retransmit = Seconds(1)}, kStart);
  for (int i = 0; i < 10; ++i) (void)schedule.After(SendOutcome::kNoDaemon, kStart);
  EXPECT_EQ(schedule.After(SendOutcome::kNoDaemon, kStart).wait, Milliseconds(50));
  EXPECT_EQ(schedule.After(SendOutcome::kQueued, kStart).kind, Kind::kAwaitReply);
  EXPECT_EQ(schedule.After(SendOutcome::kNoDaemon, kStart).wait, Milliseconds(1));
}

TEST(RetryScheduleTest, RetransmitPeriodIsFixedUnlessAMaximumIsGiven) {
  RetrySchedule fixed({.timeout = Seconds(60), .retransmit = Milliseconds(500)}, kStart);
  EXPECT_EQ(fixed.After(SendOutcome::kQueued, kStart).wait, Milliseconds(500));
  EXPECT_EQ(fixed.After(SendOutcome::kQueued, kStart).wait, Milliseconds(500));
  RetrySchedule doubling(
      {.timeout = Seconds(60), .retransmit = Milliseconds(500), .max_retransmit = Seconds(4)},
      kStart);
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 6; ++i) waits.push_back(doubling.After(SendOutcome::kQueued, kStart).wait);
  EXPECT_EQ(waits, (std::vector<absl::Duration>{Milliseconds(500), Seconds(1), Seconds(2),
                                                Seconds(4), Seconds(4), Seconds(4)}));
}

TEST(RetryScheduleTest, NoWaitGoesPastTheDeadline) {
  RetrySchedule schedule({.timeout = Milliseconds(100), .retransmit = Seconds(1)}, kStart);
  const RetryStep reply = schedule.After(SendOutcome::kQueued, kStart + Milliseconds(30));
  EXPECT_EQ(reply.kind, Kind::kAwaitReply);
  EXPECT_EQ(reply.wait, Milliseconds(70));
  for (int i = 0; i < 6; ++i) (void)schedule.After(SendOutcome::kNoDaemon, kStart);
  const RetryStep sleep = schedule.After(SendOutcome::kNoDaemon, kStart + Milliseconds(99));
  EXPECT_EQ(sleep.kind, Kind::kSleep);
  EXPECT_EQ(sleep.wait, Milliseconds(1));
  EXPECT_EQ(schedule.Left(kStart + Milliseconds(99)), Milliseconds(1));
}

TEST(RetryScheduleTest, GivesUpAtTheDeadline) {
  RetrySchedule schedule({.timeout = Milliseconds(100), .retransmit = Seconds(1)}, kStart);
  EXPECT_EQ(schedule.After(SendOutcome::kNoDaemon, kStart + Milliseconds(100)).kind,
            Kind::kGiveUp);
  EXPECT_EQ(schedule.After(SendOutcome::kQueued, kStart + Milliseconds(150)).kind, Kind::kGiveUp);
  EXPECT_LE(schedule.Left(kStart + Milliseconds(150)), absl::ZeroDuration());
}

// A whole request against a daemon that appears 37 ms after the client started: the client is
// late by less than its backoff cap, never by a retransmit period.
TEST(RetryScheduleTest, ADaemonThatAppearsLateIsReachedWithinOneBackoff) {
  const MonoTime appears = kStart + Milliseconds(37);
  RetrySchedule schedule({.timeout = Seconds(5), .retransmit = Seconds(1)}, kStart);
  MonoTime now = kStart;
  for (;;) {
    const SendOutcome outcome = now >= appears ? SendOutcome::kQueued : SendOutcome::kNoDaemon;
    if (outcome == SendOutcome::kQueued) break;
    const RetryStep step = schedule.After(outcome, now);
    ASSERT_EQ(step.kind, Kind::kSleep);
    now = now + step.wait;
  }
  // Sends at 0, 1, 3, 7, 15, 31, 63 ms: the first after 37 ms is queued at 63 ms.
  EXPECT_EQ(Since(kStart, now), Milliseconds(63));
  EXPECT_LE(Since(appears, now), Milliseconds(50));
}

}  // namespace
}  // namespace hotring::hotplug

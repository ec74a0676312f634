#include "hotplug/reorderer.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/event.h"

namespace hotring::hotplug {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const MonoTime kT0 = MonoTime{} + absl::Seconds(1000);

Event Ev(std::optional<uint64_t> seqnum) {
  Event e;
  e.action = "add";
  e.devpath = seqnum.has_value() ? absl::StrCat("/devices/d", *seqnum) : "/devices/none";
  e.seqnum = seqnum;
  return e;
}

std::vector<uint64_t> Seqs(const std::vector<Event>& events) {
  std::vector<uint64_t> out;
  for (const Event& e : events) out.push_back(e.seqnum.value_or(~uint64_t{0}));
  return out;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

Reorderer Make(std::optional<uint64_t> expect, size_t max_held = 16384,
               absl::Duration timeout = absl::Seconds(5)) {
  return Reorderer(ReordererOptions{.timeout = timeout, .expect_seqnum = expect,
                                    .max_held = max_held});
}

TEST(ReordererTest, InOrderReleasesEachAtOnce) {
  Reorderer r = Make(0);
  for (uint64_t s = 0; s < 1000; ++s) {
    const PushResult p = r.Push(Ev(s), kT0);
    ASSERT_EQ(p.disposition, PushDisposition::kReleased);
    ASSERT_THAT(Seqs(p.released), ElementsAre(s));
    ASSERT_THAT(p.missing, IsEmpty());
    ASSERT_EQ(r.NextDeadline(), std::nullopt);
  }
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.expected(), 1000u);
  EXPECT_EQ(r.counters().released, 1000u);
  EXPECT_EQ(r.counters().held, 0u);
}

TEST(ReordererTest, FirstSeenSetsExpected) {
  Reorderer r = Make(std::nullopt);
  EXPECT_EQ(r.expected(), std::nullopt);
  EXPECT_THAT(Seqs(r.Push(Ev(100), kT0).released), ElementsAre(100));
  EXPECT_EQ(r.Push(Ev(102), kT0).disposition, PushDisposition::kHeld);
  EXPECT_THAT(Seqs(r.Push(Ev(101), kT0).released), ElementsAre(101, 102));
  EXPECT_EQ(r.expected(), 103u);
}

TEST(ReordererTest, ReversedIsHeldThenReleasedInOrderWhenTheGapFills) {
  Reorderer r = Make(0);
  for (uint64_t s = 9; s >= 1; --s) {
    const PushResult p = r.Push(Ev(s), kT0 + absl::Milliseconds(10 - s));
    ASSERT_EQ(p.disposition, PushDisposition::kHeld);
    ASSERT_THAT(p.released, IsEmpty());
  }
  EXPECT_EQ(r.held(), 9u);
  EXPECT_EQ(r.NextDeadline(), kT0 + absl::Milliseconds(1) + absl::Seconds(5));
  const PushResult p = r.Push(Ev(0), kT0 + absl::Milliseconds(20));
  EXPECT_EQ(p.disposition, PushDisposition::kReleased);
  EXPECT_EQ(Seqs(p.released), Range(0, 9));
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
  EXPECT_EQ(r.counters().held, 9u);
}

TEST(ReordererTest, InterleavedGapsReleaseEachContiguousRun) {
  Reorderer r = Make(1);
  EXPECT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kHeld);
  EXPECT_EQ(r.Push(Ev(5), kT0).disposition, PushDisposition::kHeld);
  EXPECT_EQ(r.Push(Ev(7), kT0).disposition, PushDisposition::kHeld);
  EXPECT_THAT(Seqs(r.Push(Ev(1), kT0).released), ElementsAre(1));
  EXPECT_THAT(Seqs(r.Push(Ev(2), kT0).released), ElementsAre(2, 3));
  EXPECT_EQ(r.Push(Ev(6), kT0).disposition, PushDisposition::kHeld);
  EXPECT_THAT(Seqs(r.Push(Ev(4), kT0).released), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.expected(), 8u);
}

TEST(ReordererTest, DuplicatesOfReleasedAndHeldAreDroppedAndReported) {
  Reorderer r = Make(1);
  ASSERT_THAT(Seqs(r.Push(Ev(1), kT0).released), ElementsAre(1));
  ASSERT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kHeld);

  PushResult p = r.Push(Ev(1), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_TRUE(p.duplicate());
  EXPECT_THAT(p.released, IsEmpty());

  p = r.Push(Ev(3), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kDuplicateOfHeld);
  EXPECT_TRUE(p.duplicate());
  EXPECT_THAT(p.released, IsEmpty());
  EXPECT_EQ(r.held(), 1u);

  EXPECT_THAT(Seqs(r.Push(Ev(2), kT0).released), ElementsAre(2, 3));
  p = r.Push(Ev(3), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_FALSE(r.Push(Ev(4), kT0).duplicate());
  EXPECT_EQ(r.counters().duplicates, 3u);
  EXPECT_EQ(r.counters().released, 4u);
}

TEST(ReordererTest, TimeoutReleasesThroughTheOldestHoldThenTheRunInOrder) {
  Reorderer r = Make(1);
  ASSERT_EQ(r.Push(Ev(5), kT0).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.Push(Ev(3), kT0 + absl::Seconds(1)).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.Push(Ev(9), kT0 + absl::Seconds(2)).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.Push(Ev(8), kT0 + absl::Seconds(2)).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.NextDeadline(), kT0 + absl::Seconds(5));

  ExpireResult e = r.Expire(kT0 + absl::Seconds(5) - std::chrono::nanoseconds(1));
  EXPECT_THAT(e.released, IsEmpty());
  EXPECT_THAT(e.missing, IsEmpty());
  EXPECT_EQ(r.held(), 4u);

  // 5 is the oldest hold: 3 and 5 go (3 first), the gaps 1-2 and 4 are given up, 8 and 9 stay
  // behind the gap 6-7.
  e = r.Expire(kT0 + absl::Seconds(5));
  EXPECT_THAT(Seqs(e.released), ElementsAre(3, 5));
  EXPECT_THAT(e.missing, ElementsAre(SeqnumRange{1, 2}, SeqnumRange{4, 4}));
  EXPECT_EQ(r.held(), 2u);
  EXPECT_EQ(r.expected(), 6u);
  EXPECT_EQ(r.NextDeadline(), kT0 + absl::Seconds(7));

  e = r.Expire(kT0 + absl::Seconds(6));
  EXPECT_THAT(e.released, IsEmpty());
  e = r.Expire(kT0 + absl::Seconds(7));
  EXPECT_THAT(Seqs(e.released), ElementsAre(8, 9));
  EXPECT_THAT(e.missing, ElementsAre(SeqnumRange{6, 7}));
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
  EXPECT_EQ(r.counters().timeouts, 3u);
  EXPECT_EQ(r.counters().missing, 5u);
}

TEST(ReordererTest, LateExpireReleasesEverythingThatTimedOutInOneCall) {
  Reorderer r = Make(1);
  ASSERT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.Push(Ev(6), kT0 + absl::Seconds(1)).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.Push(Ev(9), kT0 + absl::Seconds(9)).disposition, PushDisposition::kHeld);
  const ExpireResult e = r.Expire(kT0 + absl::Seconds(10));
  EXPECT_THAT(Seqs(e.released), ElementsAre(3, 6));
  EXPECT_THAT(e.missing, ElementsAre(SeqnumRange{1, 2}, SeqnumRange{4, 5}));
  EXPECT_EQ(r.NextDeadline(), kT0 + absl::Seconds(14));
}

TEST(ReordererTest, HugeGapCostsNoMemoryAndStragglersStillWork) {
  constexpr uint64_t kFar = 1'000'000'000'000;
  Reorderer r = Make(1);
  ASSERT_THAT(Seqs(r.Push(Ev(1), kT0).released), ElementsAre(1));
  ASSERT_EQ(r.Push(Ev(kFar), kT0).disposition, PushDisposition::kHeld);
  const ExpireResult e = r.Expire(kT0 + absl::Seconds(5));
  EXPECT_THAT(Seqs(e.released), ElementsAre(kFar));
  EXPECT_THAT(e.missing, ElementsAre(SeqnumRange{2, kFar - 1}));
  EXPECT_EQ(e.missing[0].count(), kFar - 2);
  EXPECT_EQ(r.counters().missing, kFar - 2);
  EXPECT_EQ(r.expected(), kFar + 1);

  EXPECT_THAT(Seqs(r.Push(Ev(kFar + 1), kT0).released), ElementsAre(kFar + 1));
  // Inside the window and never seen: released; then remembered.
  EXPECT_EQ(r.Push(Ev(kFar - 1), kT0).disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(kFar - 1), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.Push(Ev(kFar), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  // Far behind the window: unknown, released (at-least-once).
  EXPECT_EQ(r.Push(Ev(5), kT0).disposition, PushDisposition::kStraggler);
  // Not remembered: a second copy is released again (documented bound).
  EXPECT_EQ(r.Push(Ev(5), kT0).disposition, PushDisposition::kStraggler);
  // 1 was released before the gap; the gap cleared the window, so it is unknown now too.
  EXPECT_EQ(r.Push(Ev(1), kT0).disposition, PushDisposition::kStraggler);
}

TEST(ReordererTest, StragglersAfterATimeoutAreReleasedOnceAtOnce) {
  Reorderer r = Make(1);
  ASSERT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kHeld);
  ASSERT_THAT(Seqs(r.Expire(kT0 + absl::Seconds(5)).released), ElementsAre(3));
  PushResult p = r.Push(Ev(2), kT0 + absl::Seconds(6));
  EXPECT_EQ(p.disposition, PushDisposition::kStraggler);
  EXPECT_THAT(Seqs(p.released), ElementsAre(2));
  EXPECT_EQ(r.Push(Ev(2), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.Push(Ev(1), kT0).disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.counters().stragglers, 2u);
  EXPECT_EQ(r.expected(), 4u);
}

TEST(ReordererTest, EventsBeforeAnExplicitExpectedSeqnumAreStragglers) {
  Reorderer r = Make(1000);
  EXPECT_EQ(r.Push(Ev(999), kT0).disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(999), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.Push(Ev(0), kT0).disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(1001), kT0).disposition, PushDisposition::kHeld);
}

TEST(ReordererTest, SeenWindowEdge) {
  Reorderer r = Make(0);
  const uint64_t n = Reorderer::kSeenWindow + 10;
  for (uint64_t s = 0; s < n; ++s) ASSERT_EQ(r.Push(Ev(s), kT0).released.size(), 1u);
  // expected = n; the window covers [n - kSeenWindow, n) = [10, n).
  EXPECT_EQ(r.Push(Ev(10), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.Push(Ev(n - 1), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.Push(Ev(9), kT0).disposition, PushDisposition::kStraggler);
}

TEST(ReordererTest, GapClearsStaleWindowBitsButKeepsReleasedOnes) {
  Reorderer r = Make(0);
  const uint64_t w = Reorderer::kSeenWindow;
  for (uint64_t s = 0; s < 100; ++s) ASSERT_EQ(r.Push(Ev(s), kT0).released.size(), 1u);
  // 100 + w shares the slot of 100; 100 .. 100+w-1 are given up. Their slots (some of which held
  // bits for 0..99) must read "not seen".
  ASSERT_EQ(r.Push(Ev(w + 100), kT0).disposition, PushDisposition::kHeld);
  ASSERT_THAT(Seqs(r.Expire(kT0 + absl::Seconds(5)).released), ElementsAre(w + 100));
  EXPECT_EQ(r.Push(Ev(w + 50), kT0).disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(w + 50), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.Push(Ev(w + 100), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.Push(Ev(w + 99), kT0).disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(101), kT0).disposition, PushDisposition::kStraggler);
}

TEST(ReordererTest, EventsWithoutSeqnumBypass) {
  Reorderer r = Make(1);
  ASSERT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kHeld);
  const PushResult p = r.Push(Ev(std::nullopt), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kBypassed);
  EXPECT_EQ(p.released.size(), 1u);
  EXPECT_EQ(r.Push(Ev(~uint64_t{0}), kT0).disposition, PushDisposition::kBypassed);
  EXPECT_EQ(r.expected(), 1u);
  EXPECT_EQ(r.held(), 1u);
  EXPECT_EQ(r.counters().bypassed, 2u);
}

TEST(ReordererTest, FullForcesTheLowestGapLikeATimeout) {
  Reorderer r = Make(1, 3);
  for (const uint64_t s : {10, 11, 12}) ASSERT_EQ(r.Push(Ev(s), kT0).disposition, PushDisposition::kHeld);
  PushResult p = r.Push(Ev(20), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kHeld);
  EXPECT_THAT(Seqs(p.released), ElementsAre(10, 11, 12));
  EXPECT_THAT(p.missing, ElementsAre(SeqnumRange{1, 9}));
  EXPECT_EQ(r.held(), 1u);
  EXPECT_EQ(r.counters().forced, 1u);

  for (const uint64_t s : {22, 24}) ASSERT_EQ(r.Push(Ev(s), kT0).disposition, PushDisposition::kHeld);
  // Full again with {20, 22, 24}; 23 sits above the lowest: 20 goes (gap 13-19), 23 is held.
  p = r.Push(Ev(23), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kHeld);
  EXPECT_THAT(Seqs(p.released), ElementsAre(20));
  EXPECT_THAT(p.missing, ElementsAre(SeqnumRange{13, 19}));
  EXPECT_EQ(r.held(), 3u);  // 22, 23, 24
  // Full; 21 sits below every held one: its own gap is none (expected is 21), released with run.
  p = r.Push(Ev(21), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kReleased);
  EXPECT_THAT(Seqs(p.released), ElementsAre(21, 22, 23, 24));
  EXPECT_THAT(p.missing, IsEmpty());

  for (const uint64_t s : {30, 32, 34}) ASSERT_EQ(r.Push(Ev(s), kT0).disposition, PushDisposition::kHeld);
  // Full; 28 below every held one: the gap 25-27 is given up and 28 released, not held.
  p = r.Push(Ev(28), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kReleased);
  EXPECT_THAT(Seqs(p.released), ElementsAre(28));
  EXPECT_THAT(p.missing, ElementsAre(SeqnumRange{25, 27}));
  EXPECT_EQ(r.held(), 3u);
  EXPECT_EQ(r.counters().forced, 3u);
}

TEST(ReordererTest, ReleaseAllGivesUpEveryGap) {
  Reorderer r = Make(1);
  ASSERT_EQ(r.Push(Ev(5), kT0).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kHeld);
  const ExpireResult e = r.ReleaseAll();
  EXPECT_THAT(Seqs(e.released), ElementsAre(3, 5));
  EXPECT_THAT(e.missing, ElementsAre(SeqnumRange{1, 2}, SeqnumRange{4, 4}));
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
  EXPECT_THAT(r.ReleaseAll().released, IsEmpty());
}

TEST(ReordererTest, DeadlineFollowsTheOldestRemainingHold) {
  Reorderer r = Make(1);
  ASSERT_EQ(r.Push(Ev(5), kT0).disposition, PushDisposition::kHeld);
  ASSERT_EQ(r.Push(Ev(3), kT0 + absl::Seconds(1)).disposition, PushDisposition::kHeld);
  EXPECT_THAT(Seqs(r.Push(Ev(1), kT0).released), ElementsAre(1));
  EXPECT_THAT(Seqs(r.Push(Ev(2), kT0).released), ElementsAre(2, 3));
  EXPECT_EQ(r.NextDeadline(), kT0 + absl::Seconds(5));
  EXPECT_THAT(Seqs(r.Push(Ev(4), kT0).released), ElementsAre(4, 5));
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
}

TEST(ReordererTest, InfiniteTimeoutNeverExpires) {
  Reorderer r = Make(1, 16384, absl::InfiniteDuration());
  ASSERT_EQ(r.Push(Ev(3), kT0).disposition, PushDisposition::kHeld);
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
  EXPECT_THAT(r.Expire(kT0 + absl::Hours(1000)).released, IsEmpty());
}

// A zero timeout holds nothing: each gap is given up (reported, counted as a timeout) when the
// event after it arrives, and that event goes on at once, in the order received.
TEST(ReordererTest, ZeroTimeoutGivesEachGapUpOnArrival) {
  Reorderer r = Make(1, 16384, absl::ZeroDuration());
  PushResult p = r.Push(Ev(3), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kReleased);
  EXPECT_THAT(Seqs(p.released), ElementsAre(3));
  EXPECT_THAT(p.missing, ElementsAre(SeqnumRange{1, 2}));
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
  p = r.Push(Ev(4), kT0);
  EXPECT_THAT(Seqs(p.released), ElementsAre(4));
  EXPECT_THAT(p.missing, IsEmpty());
  p = r.Push(Ev(7), kT0);
  EXPECT_THAT(Seqs(p.released), ElementsAre(7));
  EXPECT_THAT(p.missing, ElementsAre(SeqnumRange{5, 6}));
  // What was given up and comes late is a straggler, released once.
  p = r.Push(Ev(5), kT0);
  EXPECT_EQ(p.disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(5), kT0).disposition, PushDisposition::kDuplicateOfReleased);
  EXPECT_EQ(r.counters().timeouts, 2u);
  EXPECT_EQ(r.counters().missing, 4u);
  EXPECT_EQ(r.counters().held, 0u);
}

// The seed's first run: SEQNUM 0..999 in order, expected 0: nothing waits.
TEST(ReordererTest, SeedRunInOrder) {
  Reorderer r = Make(0);
  std::vector<uint64_t> released;
  for (uint64_t s = 0; s <= 999; ++s) {
    for (const uint64_t x : Seqs(r.Push(Ev(s), kT0 + absl::Microseconds(s)).released)) {
      released.push_back(x);
    }
  }
  EXPECT_EQ(released, Range(0, 999));
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
}

// The seed's second run: SEQNUM 1..1000 with 0 missing: nothing before the timeout, then all
// 1000 in order at once, with 0 reported missing.
TEST(ReordererTest, SeedRunWithZeroMissing) {
  Reorderer r = Make(0);
  for (uint64_t s = 1; s <= 1000; ++s) {
    const PushResult p = r.Push(Ev(s), kT0 + absl::Microseconds(s));
    ASSERT_EQ(p.disposition, PushDisposition::kHeld);
  }
  const MonoTime deadline = kT0 + absl::Microseconds(1) + absl::Seconds(5);
  ASSERT_EQ(r.NextDeadline(), deadline);
  EXPECT_THAT(r.Expire(deadline - std::chrono::nanoseconds(1)).released, IsEmpty());
  const ExpireResult e = r.Expire(deadline);
  EXPECT_EQ(Seqs(e.released), Range(1, 1000));
  EXPECT_THAT(e.missing, ElementsAre(SeqnumRange{0, 0}));
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.NextDeadline(), std::nullopt);
  // The missing one arrives late: a straggler, handled once.
  EXPECT_EQ(r.Push(Ev(0), deadline).disposition, PushDisposition::kStraggler);
  EXPECT_EQ(r.Push(Ev(0), deadline).disposition, PushDisposition::kDuplicateOfReleased);
}

// Random arrival orders with losses and duplicates, driven like the daemon drives it (Expire at
// every deadline): every SEQNUM is released at most once, in-order releases are increasing, no
// event waits longer than the timeout, and every surviving event comes out by ReleaseAll.
TEST(ReordererTest, RandomizedInvariants) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 200; ++round) {
    const uint64_t n = 1 + rng() % 300;
    const size_t max_held = 1 + rng() % 64;
    std::vector<uint64_t> order;
    for (uint64_t s = 0; s < n; ++s) {
      if (rng() % 10 != 0) order.push_back(s);               // 10% lost
      if (rng() % 10 == 0) order.push_back(s);               // 10% duplicated
    }
    // Local shuffles: swap within a small distance, like a real reordering.
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      const size_t j = i + rng() % std::min<size_t>(8, order.size() - i);
      std::swap(order[i], order[j]);
    }
    Reorderer r = Make(0, max_held, absl::Milliseconds(50));
    MonoTime now = kT0;
    std::map<uint64_t, MonoTime> first_pushed_at;
    std::set<uint64_t> released;
    std::optional<uint64_t> last_in_order;
    auto take = [&](const std::vector<Event>& events, bool in_order, MonoTime at) {
      for (const Event& e : events) {
        const uint64_t s = *e.seqnum;
        ASSERT_TRUE(released.insert(s).second) << "released twice: " << s;
        ASSERT_LE(at - first_pushed_at.at(s), std::chrono::milliseconds(50)) << s;
        if (in_order) {
          if (last_in_order.has_value()) {
            ASSERT_GT(s, *last_in_order);
          }
          last_in_order = s;
        }
      }
    };
    for (const uint64_t s : order) {
      now += std::chrono::milliseconds(rng() % 20);
      // The daemon's timer fires at each deadline before time passes it.
      for (std::optional<MonoTime> d = r.NextDeadline(); d.has_value() && *d <= now;
           d = r.NextDeadline()) {
        const ExpireResult e = r.Expire(*d);
        ASSERT_FALSE(e.released.empty());
        take(e.released, true, *d);
      }
      const bool seen_before = first_pushed_at.contains(s);
      if (!seen_before) first_pushed_at.emplace(s, now);
      const PushResult p = r.Push(Ev(s), now);
      ASSERT_EQ(p.duplicate(), seen_before) << s;
      take(p.released, p.disposition != PushDisposition::kStraggler, now);
    }
    take(r.ReleaseAll().released, true, now);
    std::set<uint64_t> expected_set(order.begin(), order.end());
    ASSERT_EQ(released, expected_set) << "round " << round;
    ASSERT_EQ(r.counters().duplicates, order.size() - expected_set.size());
  }
}

// Prints the CPU cost of the common case, an in-order Push (asserts only the result).
// PassThrough is Push's fast path: a reorderer fed through PassThrough (falling back to Push)
// must decide exactly as one fed through Push alone, whatever the input.
TEST(ReordererTest, PassThroughThenPushDecidesExactlyLikePush) {
  std::mt19937_64 rng(23);
  for (int round = 0; round < 200; ++round) {
    const std::optional<uint64_t> expect =
        rng() % 3 == 0 ? std::nullopt : std::optional<uint64_t>(rng() % 50);
    const size_t max_held = 1 + rng() % 8;
    Reorderer plain = Make(expect, max_held, absl::Milliseconds(50));
    Reorderer fast = Make(expect, max_held, absl::Milliseconds(50));
    MonoTime now = kT0;
    uint64_t next = expect.value_or(rng() % 50);
    int passed_through = 0;
    for (int step = 0; step < 300; ++step) {
      now = now + absl::Milliseconds(static_cast<int64_t>(rng() % 10));
      // Mostly in order, sometimes ahead, behind (duplicates, stragglers), or without SEQNUM.
      std::optional<uint64_t> seqnum;
      switch (rng() % 8) {
        case 0: seqnum = next + 1 + rng() % 5; break;
        case 1: seqnum = next > 3 ? next - 1 - rng() % 3 : next; break;
        case 2: seqnum = std::nullopt; break;
        default: seqnum = next++; break;
      }
      const PushResult want = plain.Push(Ev(seqnum), now);
      std::vector<Event> released;
      std::vector<SeqnumRange> missing;
      PushDisposition got;
      if (const std::optional<PushDisposition> passed = fast.PassThrough(seqnum);
          passed.has_value()) {
        got = *passed;
        ++passed_through;
        const bool runs = got != PushDisposition::kDuplicateOfReleased &&
                          got != PushDisposition::kDuplicateOfHeld;
        if (runs) released.push_back(Ev(seqnum));  // the caller runs the event it kept
      } else {
        got = fast.Push(Ev(seqnum), now, released, missing);
      }
      ASSERT_EQ(got, want.disposition) << "round " << round << " step " << step;
      ASSERT_EQ(Seqs(released), Seqs(want.released)) << "round " << round << " step " << step;
      ASSERT_EQ(missing, want.missing);
      if (rng() % 10 == 0) {
        const ExpireResult a = plain.Expire(now);
        const ExpireResult b = fast.Expire(now);
        ASSERT_EQ(Seqs(a.released), Seqs(b.released));
        ASSERT_EQ(a.missing, b.missing);
      }
      ASSERT_EQ(fast.held(), plain.held());
      ASSERT_EQ(fast.expected(), plain.expected());
      ASSERT_EQ(fast.NextDeadline(), plain.NextDeadline());
    }
    const ReordererCounters& a = plain.counters();
    const ReordererCounters& b = fast.counters();
    EXPECT_EQ(a.pushed, b.pushed);
    EXPECT_EQ(a.released, b.released);
    EXPECT_EQ(a.held, b.held);
    EXPECT_EQ(a.bypassed, b.bypassed);
    EXPECT_EQ(a.stragglers, b.stragglers);
    EXPECT_EQ(a.duplicates, b.duplicates);
    EXPECT_EQ(a.missing, b.missing);
    EXPECT_GT(passed_through, 0);
  }
}

TEST(ReordererTest, CostOfAnInOrderPush) {
  Reorderer r = Make(0);
  constexpr uint64_t kN = 200000;
  std::vector<Event> events;
  events.reserve(kN);
  for (uint64_t s = 0; s < kN; ++s) events.push_back(Ev(s));
  timespec t0, t1;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  uint64_t released = 0;
  for (Event& e : events) released += r.Push(std::move(e), kT0).released.size();
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  EXPECT_EQ(released, kN);
  const double ns = (static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e9 +
                     static_cast<double>(t1.tv_nsec - t0.tv_nsec)) / kN;
  std::printf("Reorderer::Push in order: %.0f CPU ns\n", ns);
}

}  // namespace
}  // namespace hotring::hotplug

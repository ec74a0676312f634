// Reorderer: the SEQNUM gate between receiving events and scheduling them (udevd's expected
// seqnum, with systemd's lessons on duplicates). Pure logic: the caller passes the time and
// owns the single timer, armed at NextDeadline().
//
// Semantics:
//  - The expected SEQNUM is ReordererOptions::expect_seqnum, or else the first one pushed.
//  - An event at the expected SEQNUM is released, together with every held event that became
//    contiguous after it, in SEQNUM order.
//  - An event ahead of the expected one is held.
//  - When the oldest hold (by arrival time) has waited `timeout`, the gaps below it are given
//    up: every held event up to and including it is released in SEQNUM order, then the run that
//    follows it up to the next gap; the skipped SEQNUMs are reported as missing. (Releasing the
//    smaller held events first keeps the output in order; none is held longer than the timeout.)
//    A zero timeout holds nothing: a gap is given up when the event after it arrives.
//  - A duplicate (a SEQNUM already released, or held) is dropped, counted and reported so the
//    caller can still ack a retransmission.
//  - An event older than the expected SEQNUM that was never seen (a straggler after a timeout,
//    or an event from before a restart) is released at once.
//  - Events without SEQNUM bypass the gate. So does SEQNUM 2^64-1, which no event can follow.
//  - At most `max_held` events are held; an event that would exceed it forces the oldest gap
//    (the lowest) to be given up first, exactly as a timeout would, and is counted.
//
// Memory is bounded: held events (max_held) and a fixed window of kSeenWindow SEQNUMs below the
// expected one, one bit each (8 KiB), remembering which were released. A SEQNUM further back than
// the window is treated as never seen and released (at-least-once: a very late retransmission
// can run twice, an event is never lost). Gaps of any size cost nothing (no per-SEQNUM storage).
#ifndef HOTRING_HOTPLUG_REORDERER_H_
#define HOTRING_HOTPLUG_REORDERER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "hotplug/event.h"

namespace hotring::hotplug {

struct ReordererOptions {
  absl::Duration timeout = absl::Seconds(5);  // the seed's EVENT_TIMEOUT_SEC
  std::optional<uint64_t> expect_seqnum;      // --expect-seqnum, or uevent_seqnum + 1
  size_t max_held = 16384;                    // values below 1 count as 1
};

// SEQNUMs first..last (inclusive) that were given up.
struct SeqnumRange {
  uint64_t first = 0;
  uint64_t last = 0;
  [[nodiscard]] uint64_t count() const { return last - first + 1; }
  friend bool operator==(const SeqnumRange&, const SeqnumRange&) = default;
};

// What Push did with the event it was given.
enum class PushDisposition {
  kReleased,             // at the expected SEQNUM: released (in `released`, in SEQNUM order)
  kHeld,                 // ahead of the expected SEQNUM: held
  kStraggler,            // older than expected, never seen: released at once
  kBypassed,             // no SEQNUM (or 2^64-1): released at once
  kDuplicateOfReleased,  // dropped: that SEQNUM was already released
  kDuplicateOfHeld,      // dropped: that SEQNUM is held (and will be released)
};

struct PushResult {
  PushDisposition disposition = PushDisposition::kReleased;
  // Events to schedule now, in order: the pushed one (unless held or dropped) and any held ones
  // it made contiguous or forced out.
  std::vector<Event> released;
  // Gaps given up because max_held was reached (empty otherwise).
  std::vector<SeqnumRange> missing;

  [[nodiscard]] bool duplicate() const {
    return disposition == PushDisposition::kDuplicateOfReleased ||
           disposition == PushDisposition::kDuplicateOfHeld;
  }
};

struct ExpireResult {
  std::vector<Event> released;        // in SEQNUM order
  std::vector<SeqnumRange> missing;   // gaps given up, ascending
};

// Cumulative counts (current sizes are accessors on Reorderer).
struct ReordererCounters {
  uint64_t pushed = 0;        // every Push
  uint64_t released = 0;      // events handed back, all kinds
  uint64_t held = 0;          // events that had to wait
  uint64_t bypassed = 0;      // no SEQNUM
  uint64_t stragglers = 0;    // older than expected, never seen
  uint64_t duplicates = 0;    // dropped duplicates (released or held)
  uint64_t timeouts = 0;      // gaps given up because the oldest hold timed out
  uint64_t forced = 0;        // gaps given up because max_held was reached
  uint64_t missing = 0;       // SEQNUMs given up in total (sum of gap sizes)
};

// Owns the held events, the seen-window bitmap and the hold timestamps.
class Reorderer {
 public:
  // SEQNUMs below the expected one remembered for duplicate detection.
  static constexpr uint64_t kSeenWindow = 65536;

  explicit Reorderer(ReordererOptions options = {});
  Reorderer(Reorderer&&) = default;
  Reorderer& operator=(Reorderer&&) = default;
  Reorderer(const Reorderer&) = delete;
  Reorderer& operator=(const Reorderer&) = delete;

  [[nodiscard]] PushResult Push(Event&& event, MonoTime now);
  // The same, appending to the caller's vectors instead of fresh ones, so a caller that keeps
  // them (clearing between calls) allocates nothing per in-order event.
  [[nodiscard]] PushDisposition Push(Event&& event, MonoTime now, std::vector<Event>& released,
                                     std::vector<SeqnumRange>& missing);

  // The common cases of Push without handing the event over: when Push would release exactly
  // the event with this SEQNUM and nothing else (kReleased with nothing held, kStraggler,
  // kBypassed) or drop it as kDuplicateOfReleased, records that as Push would and returns the
  // disposition; the caller keeps the event and runs it (or drops it). Otherwise changes nothing
  // and returns nullopt: call Push.
  [[nodiscard]] std::optional<PushDisposition> PassThrough(std::optional<uint64_t> seqnum);

  // Releases what timed out by `now` (nothing if NextDeadline() is later). Call when the timer
  // fires; calling early or twice is harmless.
  [[nodiscard]] ExpireResult Expire(MonoTime now);

  // Releases every held event in order, giving up all gaps (shutdown, or `settle` when the
  // caller decides not to wait). Counted like timeouts.
  [[nodiscard]] ExpireResult ReleaseAll();

  // When Expire has work: the oldest hold's arrival + timeout. nullopt when nothing is held.
  [[nodiscard]] std::optional<MonoTime> NextDeadline() const;

  [[nodiscard]] size_t held() const { return held_.size(); }
  // Calls `visit(event, held_since)` on held events in SEQNUM order until it returns false
  // (what `settle` reports as pending).
  void VisitHeld(absl::FunctionRef<bool(const Event&, MonoTime)> visit) const {
    for (const auto& [seqnum, held] : held_) {
      if (!visit(held.event, held.since)) return;
    }
  }
  // The next SEQNUM released in order; nullopt before the first event (without expect_seqnum).
  [[nodiscard]] std::optional<uint64_t> expected() const { return expected_; }
  [[nodiscard]] const ReordererCounters& counters() const { return counters_; }

 private:
  struct Held {
    Event event;
    MonoTime since;
  };

  // Releases held events with SEQNUM <= `through` (giving up gaps, counted in `gap_counter`),
  // then the contiguous run after them.
  void ReleaseThrough(uint64_t through, uint64_t& gap_counter, std::vector<Event>& released,
                      std::vector<SeqnumRange>& missing);
  // Releases held events while the lowest is the expected one.
  void ReleaseContiguous(std::vector<Event>& released);
  // Moves the lowest held event out; it must be at `expected_`.
  void ReleaseLowestHeld(std::vector<Event>& released);
  // Marks expected_ released and advances it.
  void Advance();
  // Gives up [expected_, upto) (upto > expected_): reported in `missing`, counted in
  // `gap_counter`, and "not seen" in the window from now on.
  void SkipTo(uint64_t upto, uint64_t& gap_counter, std::vector<SeqnumRange>& missing);

  [[nodiscard]] bool InWindow(uint64_t seqnum) const;
  [[nodiscard]] bool SeenBit(uint64_t seqnum) const;
  void SetSeen(uint64_t seqnum);
  void ClearSeen(uint64_t first, uint64_t end);  // [first, end)

  ReordererOptions options_;
  std::optional<uint64_t> expected_;
  absl::btree_map<uint64_t, Held> held_;                     // by SEQNUM
  absl::btree_set<std::pair<MonoTime, uint64_t>> by_age_;    // (since, SEQNUM) of held_
  std::vector<uint64_t> seen_;  // kSeenWindow bits, indexed by SEQNUM % kSeenWindow
  ReordererCounters counters_;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_REORDERER_H_

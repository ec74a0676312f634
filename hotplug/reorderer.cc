#include "hotplug/reorderer.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace hotring::hotplug {
namespace {

constexpr uint64_t kNoSuccessor = std::numeric_limits<uint64_t>::max();

}  // namespace

Reorderer::Reorderer(ReordererOptions options)
    : options_(options), expected_(options.expect_seqnum), seen_(kSeenWindow / 64, 0) {
  options_.max_held = std::max<size_t>(options_.max_held, 1);
}

PushResult Reorderer::Push(Event&& event, MonoTime now) {
  PushResult result;
  result.disposition = Push(std::move(event), now, result.released, result.missing);
  return result;
}

PushDisposition Reorderer::Push(Event&& event, MonoTime now, std::vector<Event>& released,
                                std::vector<SeqnumRange>& missing) {
  ++counters_.pushed;
  if (!event.seqnum.has_value() || *event.seqnum == kNoSuccessor) {
    ++counters_.bypassed;
    ++counters_.released;
    released.push_back(std::move(event));
    return PushDisposition::kBypassed;
  }
  const uint64_t seqnum = *event.seqnum;
  if (!expected_.has_value()) expected_ = seqnum;

  if (seqnum < *expected_) {
    const bool in_window = InWindow(seqnum);
    if (in_window && SeenBit(seqnum)) {
      ++counters_.duplicates;
      return PushDisposition::kDuplicateOfReleased;
    }
    if (in_window) SetSeen(seqnum);
    ++counters_.stragglers;
    ++counters_.released;
    released.push_back(std::move(event));
    return PushDisposition::kStraggler;
  }

  if (seqnum > *expected_) {
    if (held_.contains(seqnum)) {
      ++counters_.duplicates;
      return PushDisposition::kDuplicateOfHeld;
    }
    if (options_.timeout <= absl::ZeroDuration() && held_.empty()) {
      // A zero timeout waits for nothing: the gap is given up as the event arrives (what the
      // timer would do at the loop's next turn, without holding and copying the event twice).
      SkipTo(seqnum, counters_.timeouts, missing);
    }
    // Full: give up the lowest gap, as a timeout would, until there is room. If the new event
    // sits below every held one, its own gap is the lowest and it is released instead of held.
    while (held_.size() >= options_.max_held) {
      const uint64_t lowest = held_.begin()->first;
      if (seqnum < lowest) {
        SkipTo(seqnum, counters_.forced, missing);
        break;
      }
      // The run after `lowest` stops before `seqnum` (not held), so expected_ <= seqnum after.
      ReleaseThrough(lowest, counters_.forced, released, missing);
    }
  }

  if (seqnum == *expected_) {
    Advance();
    ++counters_.released;
    released.push_back(std::move(event));
    ReleaseContiguous(released);
    return PushDisposition::kReleased;
  }

  ++counters_.held;
  by_age_.emplace(now, seqnum);
  held_.emplace(seqnum, Held{std::move(event), now});
  return PushDisposition::kHeld;
}

std::optional<PushDisposition> Reorderer::PassThrough(std::optional<uint64_t> seqnum) {
  if (!seqnum.has_value() || *seqnum == kNoSuccessor) {
    ++counters_.pushed;
    ++counters_.bypassed;
    ++counters_.released;
    return PushDisposition::kBypassed;
  }
  // Unset only before the first SEQNUM, when nothing can be held: this one is the expected.
  const uint64_t expected = expected_.value_or(*seqnum);
  if (*seqnum < expected) {
    ++counters_.pushed;
    const bool in_window = InWindow(*seqnum);
    if (in_window && SeenBit(*seqnum)) {
      ++counters_.duplicates;
      return PushDisposition::kDuplicateOfReleased;
    }
    if (in_window) SetSeen(*seqnum);
    ++counters_.stragglers;
    ++counters_.released;
    return PushDisposition::kStraggler;
  }
  if (*seqnum > expected || !held_.empty()) return std::nullopt;
  ++counters_.pushed;
  expected_ = expected;
  Advance();
  ++counters_.released;
  return PushDisposition::kReleased;
}

ExpireResult Reorderer::Expire(MonoTime now) {
  ExpireResult result;
  while (true) {
    const std::optional<MonoTime> deadline = NextDeadline();
    if (!deadline.has_value() || *deadline > now) break;
    ReleaseThrough(by_age_.begin()->second, counters_.timeouts, result.released, result.missing);
  }
  return result;
}

ExpireResult Reorderer::ReleaseAll() {
  ExpireResult result;
  if (!held_.empty()) {
    ReleaseThrough(held_.rbegin()->first, counters_.timeouts, result.released, result.missing);
  }
  return result;
}

std::optional<MonoTime> Reorderer::NextDeadline() const {
  if (by_age_.empty() || options_.timeout == absl::InfiniteDuration()) return std::nullopt;
  return by_age_.begin()->first + options_.timeout;
}

void Reorderer::ReleaseThrough(uint64_t through, uint64_t& gap_counter,
                               std::vector<Event>& released, std::vector<SeqnumRange>& missing) {
  while (!held_.empty() && held_.begin()->first <= through) {
    const uint64_t lowest = held_.begin()->first;
    if (lowest != *expected_) SkipTo(lowest, gap_counter, missing);
    ReleaseLowestHeld(released);
  }
  ReleaseContiguous(released);
}

void Reorderer::ReleaseContiguous(std::vector<Event>& released) {
  while (!held_.empty() && held_.begin()->first == *expected_) ReleaseLowestHeld(released);
}

void Reorderer::ReleaseLowestHeld(std::vector<Event>& released) {
  auto node = held_.begin();
  by_age_.erase(std::make_pair(node->second.since, node->first));
  released.push_back(std::move(node->second.event));
  held_.erase(node);
  Advance();
  ++counters_.released;
}

void Reorderer::Advance() {
  SetSeen(*expected_);
  ++*expected_;
}

void Reorderer::SkipTo(uint64_t upto, uint64_t& gap_counter, std::vector<SeqnumRange>& missing) {
  missing.push_back(SeqnumRange{*expected_, upto - 1});
  ++gap_counter;
  counters_.missing += upto - *expected_;
  ClearSeen(*expected_, upto);
  expected_ = upto;
}

bool Reorderer::InWindow(uint64_t seqnum) const {
  return seqnum < *expected_ && *expected_ - seqnum <= kSeenWindow;
}

bool Reorderer::SeenBit(uint64_t seqnum) const {
  const uint64_t slot = seqnum % kSeenWindow;
  return (seen_[slot / 64] >> (slot % 64)) & 1;
}

void Reorderer::SetSeen(uint64_t seqnum) {
  const uint64_t slot = seqnum % kSeenWindow;
  seen_[slot / 64] |= uint64_t{1} << (slot % 64);
}

void Reorderer::ClearSeen(uint64_t first, uint64_t end) {
  if (end - first >= kSeenWindow) {
    std::fill(seen_.begin(), seen_.end(), 0);
    return;
  }
  uint64_t seqnum = first;
  while (seqnum < end) {
    const uint64_t slot = seqnum % kSeenWindow;
    if (slot % 64 == 0 && end - seqnum >= 64) {
      seen_[slot / 64] = 0;
      seqnum += 64;
    } else {
      seen_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
      ++seqnum;
    }
  }
}

}  // namespace hotring::hotplug

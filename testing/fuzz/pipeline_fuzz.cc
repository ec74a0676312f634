// Drives the Reorderer and the Scheduler together, as the daemon does, with a fuzzed sequence
// of operations (events arriving with any SEQNUM, duplicates, gaps, time passing, handlers
// finishing, children_max changing), and checks both against plain reference models:
//  - reorderer: every SEQNUM released at most once; released in SEQNUM order except stragglers
//    (below the expected SEQNUM, never seen); a duplicate is dropped only when its SEQNUM is
//    held or was released; a gap given up holds no held or released SEQNUM; nothing is held
//    past its timeout after Expire, nor beyond max_held; the counters add up;
//  - scheduler: TakeRunnable returns exactly what the O(n^2) rule gives (in release order, no
//    event while an earlier live event has the same DEVPATH or a parent/child one, at most
//    children_max running); Finish refuses queued and unknown ids;
//  - both: at the end, after ReleaseAll and draining, every event not dropped as a duplicate
//    has run exactly once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "hotplug/event.h"
#include "hotplug/reorderer.h"
#include "hotplug/scheduler.h"
#include "testing/fuzz/fuzz_check.h"

namespace hotring::fuzz {
namespace {

using hotplug::Event;
using hotplug::PushDisposition;
using hotplug::SeqnumRange;

constexpr uint64_t kNoSuccessor = std::numeric_limits<uint64_t>::max();

// The input, one byte at a time; zeros once it runs out.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Equal, or one is a parent of the other at a '/' boundary (scheduler.h's rule, stated plainly).
bool Related(absl::string_view a, absl::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return absl::StartsWith(b, a) && (a.size() == b.size() || b[a.size()] == '/');
}

// Few names, so that events share devices and parents; "a" and "ab" test that a parent is a
// prefix at a '/' boundary only.
std::string DevpathFrom(uint8_t byte) {
  static constexpr absl::string_view kNames[] = {"a", "ab", "b", "c"};
  std::string path;
  const int depth = 1 + (byte & 0x3);
  const int bits = byte >> 2;  // three components' worth; a fourth repeats the first
  for (int i = 0; i < depth; ++i) absl::StrAppend(&path, "/", kNames[(bits >> (2 * (i % 3))) & 0x3]);
  return path;
}

class PipelineCheck {
 public:
  PipelineCheck(hotplug::ReordererOptions options, size_t children_max)
      : options_(options),
        reorderer_(options),
        scheduler_(children_max),
        children_max_(children_max),
        now_(MonoTime() + absl::Hours(1)) {}

  // An event arrives: the daemon's path, PassThrough first (when `pass_through`), then Push.
  void Arrive(std::optional<uint64_t> seqnum, std::string devpath, bool pass_through) {
    Event event;
    event.seqnum = seqnum;
    event.devpath = std::move(devpath);
    const uint64_t uid = next_uid_++;
    event.env.emplace_back("UID", absl::StrCat(uid));
    pushed_.emplace(uid, event.devpath);
    ++model_pushed_;

    const std::optional<uint64_t> expected_before = reorderer_.expected();
    std::optional<PushDisposition> disposition;
    std::vector<Event> released;
    std::vector<SeqnumRange> missing;
    if (pass_through) disposition = reorderer_.PassThrough(seqnum);
    const bool passed = disposition.has_value();
    if (passed) {
      Require(*disposition != PushDisposition::kHeld &&
                  *disposition != PushDisposition::kDuplicateOfHeld,
              "PassThrough only takes what it can release at once or drop");
      if (*disposition != PushDisposition::kDuplicateOfReleased) {
        Require(reorderer_.held() == 0 || *disposition != PushDisposition::kReleased,
                "PassThrough releases in order only with nothing held");
        released.push_back(std::move(event));
      }
    } else {
      disposition = reorderer_.Push(std::move(event), now_, released, missing);
    }
    const bool bypass = !seqnum.has_value() || *seqnum == kNoSuccessor;
    Require(bypass == (*disposition == PushDisposition::kBypassed),
            "exactly the events without a SEQNUM (or 2^64-1) bypass the gate");

    switch (*disposition) {
      case PushDisposition::kDuplicateOfHeld:
        Require(held_.contains(*seqnum), "a duplicate of a held event: that SEQNUM is held");
        Require(released.empty() && missing.empty(), "a duplicate releases nothing");
        ++model_duplicates_;
        dropped_.insert(uid);
        return;
      case PushDisposition::kDuplicateOfReleased:
        Require(released_seqnums_.contains(*seqnum),
                "a duplicate of a released event: that SEQNUM was released");
        Require(released.empty() && missing.empty(), "a duplicate releases nothing");
        ++model_duplicates_;
        dropped_.insert(uid);
        return;
      case PushDisposition::kStraggler:
        Require(expected_before.has_value() && *seqnum < *expected_before,
                "a straggler is below the expected SEQNUM");
        Require(released.size() == 1 && missing.empty(), "a straggler releases itself alone");
        break;
      case PushDisposition::kHeld:
        held_.emplace(*seqnum, now_);
        break;
      case PushDisposition::kReleased:
      case PushDisposition::kBypassed:
        break;
    }
    // A SEQNUM released before and still inside the window must have been dropped above.
    if (!bypass && released_seqnums_.contains(*seqnum)) {
      Require(expected_before.has_value() && *expected_before > *seqnum &&
                  *expected_before - *seqnum > hotplug::Reorderer::kSeenWindow,
              "a SEQNUM released within the window is never released again");
    }
    NoteMissing(missing);
    const bool straggler = *disposition == PushDisposition::kStraggler;
    // Held events a full reorderer forced out come before it, in order.
    const std::string uid_text = absl::StrCat(uid);
    const bool pushed_released =
        std::any_of(released.begin(), released.end(),
                    [&](const Event& e) { return e.env.front().second == uid_text; });
    Require(pushed_released == (*disposition != PushDisposition::kHeld),
            "the pushed event is released unless held");
    Release(released, straggler);
    CheckReorderer();
  }

  void Tick(absl::Duration elapsed) {
    now_ = now_ + elapsed;
    hotplug::ExpireResult expired = reorderer_.Expire(now_);
    NoteMissing(expired.missing);
    Release(expired.released, false);
    if (options_.timeout != absl::InfiniteDuration()) {
      for (const auto& [seqnum, since] : held_) {
        Require(now_ < since + options_.timeout, "nothing is held past its timeout after Expire");
      }
    }
    CheckReorderer();
  }

  void ReleaseAll() {
    hotplug::ExpireResult rest = reorderer_.ReleaseAll();
    NoteMissing(rest.missing);
    Release(rest.released, false);
    Require(reorderer_.held() == 0 && held_.empty(), "ReleaseAll leaves nothing held");
    CheckReorderer();
  }

  // Finishes the running event at `index` (in start order), or checks that Finish refuses an id
  // that is not running.
  void Finish(uint8_t index) {
    if (running_.empty() || (index & 0x80) != 0) {
      const uint64_t id = index & 0x7f;
      const auto live = std::find_if(live_.begin(), live_.end(),
                                     [&](const Live& l) { return l.id == id; });
      if (live != live_.end() && live->running) return;
      const absl::Status status = scheduler_.Finish(id);
      Require(status.code() == (live == live_.end() ? absl::StatusCode::kNotFound
                                                    : absl::StatusCode::kFailedPrecondition),
              "Finish refuses an unknown or queued id");
      return;
    }
    const uint64_t id = running_[index % running_.size()];
    Require(scheduler_.Finish(id).ok(), "a running event finishes");
    running_.erase(std::find(running_.begin(), running_.end(), id));
    live_.erase(std::find_if(live_.begin(), live_.end(), [&](const Live& l) { return l.id == id; }));
    Pump();
  }

  void SetChildrenMax(size_t children_max) {
    children_max_ = children_max;
    scheduler_.set_children_max(children_max);
    Pump();
  }

  // Everything still held, queued or running completes; every event not dropped ran once.
  void Drain() {
    ReleaseAll();
    if (children_max_ == 0) SetChildrenMax(1);
    while (!running_.empty()) Finish(0);
    Require(scheduler_.idle() && live_.empty(), "the scheduler drains");
    for (const auto& [uid, devpath] : pushed_) {
      Require(dropped_.contains(uid) != ran_.contains(uid),
              "every event is either dropped as a duplicate or run, never both, never lost");
    }
    const hotplug::ReordererCounters& c = reorderer_.counters();
    Require(c.pushed == model_pushed_, "counter: pushed");
    Require(c.duplicates == model_duplicates_, "counter: duplicates");
    Require(c.released == model_pushed_ - model_duplicates_, "counter: released");
    uint64_t missing = 0;
    for (const SeqnumRange& r : missing_ranges_) missing += r.count();
    Require(c.missing == missing, "counter: missing is the sum of the gaps reported");
  }

 private:
  struct Live {
    uint64_t id;
    std::string devpath;
    bool running;
  };

  void NoteMissing(const std::vector<SeqnumRange>& missing) {
    for (const SeqnumRange& r : missing) {
      Require(r.first <= r.last, "a gap is a non-empty range");
      Require(!missing_ranges_.empty() ? r.first > missing_ranges_.back().last : true,
              "gaps are reported in ascending order, each once");
      const auto held = held_.lower_bound(r.first);
      Require(held == held_.end() || held->first > r.last, "a gap given up holds no held event");
      const auto released = released_seqnums_.lower_bound(r.first);
      Require(released == released_seqnums_.end() || *released > r.last,
              "a gap given up holds no released event");
      missing_ranges_.push_back(r);
    }
  }

  void Release(std::vector<Event>& events, bool straggler) {
    for (Event& event : events) {
      uint64_t uid = 0;
      Require(absl::SimpleAtoi(event.env.front().second, &uid), "an event keeps its env");
      Require(!released_uids_.contains(uid), "no event is released twice");
      released_uids_.insert(uid);
      if (event.seqnum.has_value() && *event.seqnum != kNoSuccessor) {
        const uint64_t seqnum = *event.seqnum;
        held_.erase(seqnum);
        if (straggler) {
          Require(events.size() == 1, "a straggler is released alone");
        } else {
          Require(!last_in_order_.has_value() || seqnum > *last_in_order_,
                  "released in SEQNUM order (stragglers aside)");
          last_in_order_ = seqnum;
        }
        released_seqnums_.insert(seqnum);
      }
      const uint64_t id = scheduler_.Enqueue(event.devpath);
      Require(id == next_id_++, "scheduler ids are 1, 2, 3, ... in release order");
      live_.push_back(Live{id, event.devpath, false});
      id_to_uid_.emplace(id, uid);
      Pump();
    }
  }

  void CheckReorderer() {
    Require(reorderer_.held() == held_.size(), "held() counts the held events");
    Require(reorderer_.held() <= std::max<size_t>(options_.max_held, 1), "at most max_held held");
    std::optional<MonoTime> oldest;
    for (const auto& [seqnum, since] : held_) {
      if (!oldest.has_value() || since < *oldest) oldest = since;
    }
    const std::optional<MonoTime> deadline = reorderer_.NextDeadline();
    if (!oldest.has_value() || options_.timeout == absl::InfiniteDuration()) {
      Require(!deadline.has_value(), "no deadline without a hold");
    } else {
      Require(deadline == *oldest + options_.timeout, "the deadline is the oldest hold's");
    }
  }

  // The model's decision: queued events in release order, each unless an earlier live event is
  // related, while slots remain.
  std::vector<uint64_t> ModelRunnable() {
    std::vector<uint64_t> out;
    size_t running = running_.size();
    for (size_t i = 0; i < live_.size() && running < children_max_; ++i) {
      if (live_[i].running) continue;
      bool blocked = false;
      for (size_t j = 0; j < i && !blocked; ++j) blocked = Related(live_[j].devpath, live_[i].devpath);
      if (blocked) continue;
      out.push_back(live_[i].id);
      ++running;
    }
    return out;
  }

  void Pump() {
    const std::vector<uint64_t> expected = ModelRunnable();
    const std::vector<uint64_t> runnable = scheduler_.TakeRunnable();
    Require(runnable == expected, "the scheduler starts what the reference rule starts");
    for (const uint64_t id : runnable) {
      auto live = std::find_if(live_.begin(), live_.end(), [&](const Live& l) { return l.id == id; });
      for (const uint64_t other : running_) {
        const auto o = std::find_if(live_.begin(), live_.end(),
                                    [&](const Live& l) { return l.id == other; });
        Require(!Related(o->devpath, live->devpath),
                "no two related DEVPATHs run at once");
      }
      live->running = true;
      running_.push_back(id);
      const uint64_t uid = id_to_uid_.at(id);
      Require(ran_.insert(uid).second, "no event runs twice");
    }
    Require(runnable.empty() || running_.size() <= children_max_, "at most children_max run");
    Require(scheduler_.running() == running_.size(), "running() counts the running events");
    Require(scheduler_.queued() == live_.size() - running_.size(), "queued() counts the rest");
  }

  const hotplug::ReordererOptions options_;
  hotplug::Reorderer reorderer_;
  hotplug::Scheduler scheduler_;
  size_t children_max_;
  MonoTime now_;

  uint64_t next_uid_ = 1;
  uint64_t next_id_ = 1;
  uint64_t model_pushed_ = 0;
  uint64_t model_duplicates_ = 0;
  std::map<uint64_t, std::string> pushed_;       // uid -> DEVPATH
  std::set<uint64_t> dropped_;                   // uids dropped as duplicates
  std::set<uint64_t> released_uids_;
  std::set<uint64_t> ran_;                       // uids started by the scheduler
  std::map<uint64_t, MonoTime> held_;            // SEQNUM -> since (the model's hold)
  std::set<uint64_t> released_seqnums_;
  std::vector<SeqnumRange> missing_ranges_;
  std::optional<uint64_t> last_in_order_;
  std::vector<Live> live_;                       // queued and running, in release order
  std::vector<uint64_t> running_;                // ids, in start order
  std::map<uint64_t, uint64_t> id_to_uid_;
};

}  // namespace
}  // namespace hotring::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hotring;
  fuzz::Bytes in(data, size);
  // Header: timeout, max_held, expect_seqnum, children_max.
  hotplug::ReordererOptions options;
  const uint8_t timeout = in.Next();
  options.timeout = timeout == 0xff ? absl::InfiniteDuration() : absl::Milliseconds(1 + timeout % 32);
  options.max_held = in.Next() % 9;  // 0 (means 1) .. 8: the forced path gets exercised
  uint64_t base = 1000;
  const uint8_t expect = in.Next();
  if (expect & 1) options.expect_seqnum = base + expect / 2 - 64;
  fuzz::PipelineCheck check(options, in.Next() % 5);

  // Operations are bounded so that the O(n^2) model stays fast on long inputs; the bugs such
  // state machines have show in short sequences (max_held is at most 8, children_max 4).
  for (int ops = 0; !in.empty() && ops < 256; ++ops) {
    const uint8_t op = in.Next();
    switch (op % 8) {
      case 0:
      case 1:
      case 2: {  // an event near the current base (the common case: order, gaps, duplicates)
        const uint8_t arg = in.Next();
        check.Arrive(base + arg % 48, fuzz::DevpathFrom(in.Next()), (op & 0x8) != 0);
        break;
      }
      case 3: {  // an event with an unusual SEQNUM
        const uint8_t arg = in.Next();
        std::optional<uint64_t> seqnum;
        switch (arg % 4) {
          case 0: seqnum = std::nullopt; break;
          case 1: seqnum = fuzz::kNoSuccessor; break;
          case 2: seqnum = arg / 4; break;  // far below: a straggler from before a restart
          case 3: seqnum = base - 1 - arg / 4; break;
        }
        check.Arrive(seqnum, fuzz::DevpathFrom(in.Next()), (op & 0x8) != 0);
        break;
      }
      case 4:  // time passes; the timer fires
        check.Tick(absl::Milliseconds(in.Next() % 40));
        break;
      case 5:  // a handler finishes (or a bad Finish is refused)
        check.Finish(in.Next());
        break;
      case 6: {  // the SEQNUMs move on: small steps, or across the duplicate window
        const uint8_t arg = in.Next();
        base += (arg & 0x80) ? hotplug::Reorderer::kSeenWindow - 64 + (arg & 0x7f) : arg % 64;
        break;
      }
      case 7:
        if (op & 0x8) {
          check.SetChildrenMax(in.Next() % 5);
        } else {
          check.ReleaseAll();
        }
        break;
    }
  }
  check.Drain();
  return 0;
}

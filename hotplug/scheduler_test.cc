#include "hotplug/scheduler.h"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The rule, stated directly: equal, or one is a parent of the other at a '/' boundary.
bool Related(absl::string_view a, absl::string_view b) {
  return a == b || absl::StartsWith(b, absl::StrCat(a, "/")) ||
         absl::StartsWith(a, absl::StrCat(b, "/"));
}

// The obvious O(n^2) scheduler the real one must agree with, decision for decision.
class ModelScheduler {
 public:
  explicit ModelScheduler(size_t children_max) : children_max_(children_max) {}
  uint64_t Enqueue(absl::string_view devpath, const EventKeys& keys = {}) {
    live_.push_back(Live{next_id_, std::string(devpath), false, keys, std::string(keys.devpath_old)});
    return next_id_++;
  }
  std::vector<uint64_t> TakeRunnable() {
    std::vector<uint64_t> out;
    size_t running = 0;
    for (const Live& l : live_) running += l.running ? 1 : 0;
    for (size_t i = 0; i < live_.size() && running < children_max_; ++i) {
      if (live_[i].running) continue;
      bool blocked = false;
      for (size_t j = 0; j < i && !blocked; ++j) blocked = Blocks(live_[j], live_[i]);
      if (blocked) continue;
      live_[i].running = true;
      ++running;
      out.push_back(live_[i].id);
    }
    return out;
  }
  void set_children_max(size_t n) { children_max_ = n; }
  void Finish(uint64_t id) {
    for (auto it = live_.begin(); it != live_.end(); ++it) {
      if (it->id == id) {
        live_.erase(it);
        return;
      }
    }
  }

 private:
  struct Live {
    uint64_t id;
    std::string devpath;
    bool running;
    EventKeys keys;
    std::string devpath_old;
  };
  // udevd 252's event_is_blocked, as written there: does `earlier` hold back `later`?
  static bool Blocks(const Live& earlier, const Live& later) {
    const EventKeys& e = earlier.keys;
    const EventKeys& l = later.keys;
    if (l.has_devnum && l.major != 0 && e.has_devnum && e.major == l.major && e.minor == l.minor &&
        e.block == l.block) {
      return true;
    }
    if (l.ifindex > 0 && e.ifindex == l.ifindex) return true;
    if (!later.devpath_old.empty() && later.devpath_old == earlier.devpath) return true;
    return Related(earlier.devpath, later.devpath);
  }
  size_t children_max_;
  uint64_t next_id_ = 1;
  std::vector<Live> live_;
};

TEST(SchedulerTest, EqualParentAndChildBlockButPrefixWithoutSlashDoesNot) {
  Scheduler s(8);
  const uint64_t ab = s.Enqueue("/a/b");
  const uint64_t abc = s.Enqueue("/a/b/c");   // child of /a/b
  const uint64_t a = s.Enqueue("/a");         // parent of both
  const uint64_t abc2 = s.Enqueue("/a/bc");   // not a child of /a/b, but a child of /a
  const uint64_t ab2 = s.Enqueue("/a/b");     // equal
  const uint64_t x = s.Enqueue("/x");
  const uint64_t axe = s.Enqueue("/ab");      // not related to /a
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(ab, x, axe));
  EXPECT_EQ(s.running(), 3u);
  EXPECT_EQ(s.queued(), 4u);
  EXPECT_EQ(s.blocked(), 4u);
  ASSERT_TRUE(s.Finish(ab).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(abc));
  ASSERT_TRUE(s.Finish(abc).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(a));
  ASSERT_TRUE(s.Finish(a).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(abc2, ab2));  // unrelated to each other
  ASSERT_TRUE(s.Finish(abc2).ok());
  ASSERT_TRUE(s.Finish(ab2).ok());
  ASSERT_TRUE(s.Finish(x).ok());
  ASSERT_TRUE(s.Finish(axe).ok());
  EXPECT_TRUE(s.idle());
}

// A queued (not running) earlier event blocks too: /p waits on /p/c1, and /p/c2 must not
// overtake /p even though nothing running touches /p/c2.
TEST(SchedulerTest, EarlierQueuedEventsBlock) {
  Scheduler s(8);
  const uint64_t c1 = s.Enqueue("/p/c1");
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(c1));
  const uint64_t p = s.Enqueue("/p");
  const uint64_t c2 = s.Enqueue("/p/c2");
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());
  ASSERT_TRUE(s.Finish(c1).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(p));
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());
  ASSERT_TRUE(s.Finish(p).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(c2));
}

TEST(SchedulerTest, LaterEventsNeverBlockEarlierOnes) {
  Scheduler s(8);
  const uint64_t a = s.Enqueue("/a");
  ASSERT_THAT(s.TakeRunnable(), ElementsAre(a));
  const uint64_t ab = s.Enqueue("/a/b");  // blocked by running /a
  const uint64_t z = s.Enqueue("/z");
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(z));
  ASSERT_TRUE(s.Finish(a).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(ab));
}

TEST(SchedulerTest, FifoUpToChildrenMax) {
  Scheduler s(3);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(s.Enqueue(absl::StrCat("/d/", i)));
  EXPECT_EQ(ids.front(), 1u);
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(1, 2, 3));
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());
  EXPECT_EQ(s.blocked(), 0u);  // waiting for a slot, not blocked
  ASSERT_TRUE(s.Finish(2).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(4));
  s.set_children_max(5);
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(5, 6));
}

TEST(SchedulerTest, ChildrenMaxZeroPauses) {
  Scheduler s(0);
  const uint64_t a = s.Enqueue("/a");
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());
  s.set_children_max(1);
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(a));
}

TEST(SchedulerTest, FinishErrors) {
  Scheduler s(1);
  const uint64_t a = s.Enqueue("/a");
  const uint64_t b = s.Enqueue("/b");
  ASSERT_THAT(s.TakeRunnable(), ElementsAre(a));
  EXPECT_EQ(s.Finish(b).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.Finish(99).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(s.Finish(a).ok());
  EXPECT_EQ(s.Finish(a).code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(b));
}

// A parent loading its driver lets the devices below it start, queued or new; its own DEVPATH
// and its parents stay ordered behind it.
TEST(SchedulerTest, ReleasedEventLetsOnlyTheDevicesBelowItStart) {
  Scheduler s(8);
  const uint64_t pci = s.Enqueue("/devices/pci0/04.0");
  ASSERT_THAT(s.TakeRunnable(), ElementsAre(pci));
  const uint64_t child = s.Enqueue("/devices/pci0/04.0/virtio0");
  const uint64_t prefix_trap = s.Enqueue("/devices/pci0/04.0x");  // not below: unrelated anyway
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(prefix_trap));
  ASSERT_TRUE(s.ReleaseDescendants(pci).ok());
  EXPECT_EQ(s.blocked(), 0u);
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(child));
  const uint64_t grandchild_later = s.Enqueue("/devices/pci0/04.0/virtio1/block/vda");
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(grandchild_later));
  const uint64_t same = s.Enqueue("/devices/pci0/04.0");  // e.g. its bind event
  const uint64_t parent = s.Enqueue("/devices/pci0");
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());
  ASSERT_TRUE(s.ReleaseDescendants(pci).ok());  // again: nothing changes
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());
  ASSERT_TRUE(s.Finish(child).ok());
  ASSERT_TRUE(s.Finish(grandchild_later).ok());
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());  // both still wait for the released event itself
  ASSERT_TRUE(s.Finish(pci).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(same));
  ASSERT_TRUE(s.Finish(same).ok());
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());  // /devices/pci0/04.0x is below it too
  ASSERT_TRUE(s.Finish(prefix_trap).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(parent));
  ASSERT_TRUE(s.Finish(parent).ok());
  EXPECT_TRUE(s.idle());
}

TEST(SchedulerTest, ReleaseErrors) {
  Scheduler s(1);
  const uint64_t a = s.Enqueue("/a");
  const uint64_t b = s.Enqueue("/b");
  ASSERT_THAT(s.TakeRunnable(), ElementsAre(a));
  EXPECT_EQ(s.ReleaseDescendants(b).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.ReleaseDescendants(99).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(s.ReleaseDescendants(a).ok());
}

TEST(SchedulerTest, PileOnOneDevpathRunsOneAtATimeInOrder) {
  Scheduler s(8);
  for (int i = 0; i < 1000; ++i) (void)s.Enqueue("/devices/same");
  for (uint64_t expect = 1; expect <= 1000; ++expect) {
    ASSERT_THAT(s.TakeRunnable(), ElementsAre(expect));
    ASSERT_TRUE(s.Finish(expect).ok());
  }
  EXPECT_TRUE(s.idle());
}

// Random trees with prefix traps (/a vs /ab), random finish order, random children_max changes:
// every TakeRunnable must match the O(n^2) model exactly.
TEST(SchedulerTest, AgreesWithTheModel) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> parts = {"a", "b", "ab", "a0"};
  for (int round = 0; round < 300; ++round) {
    const size_t children_max = rng() % 5;
    Scheduler s(children_max);
    ModelScheduler m(children_max);
    std::vector<uint64_t> running;
    for (int step = 0; step < 200; ++step) {
      const uint64_t op = rng() % 10;
      if (op < 5) {
        std::string path;
        const size_t depth = 1 + rng() % 4;
        for (size_t d = 0; d < depth; ++d) absl::StrAppend(&path, "/", parts[rng() % parts.size()]);
        ASSERT_EQ(s.Enqueue(path), m.Enqueue(path));
      } else if (op < 8 && !running.empty()) {
        const size_t i = rng() % running.size();
        ASSERT_TRUE(s.Finish(running[i]).ok());
        m.Finish(running[i]);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (op == 9 && rng() % 4 == 0) {
        const size_t n = rng() % 5;  // a reload changes the limit
        s.set_children_max(n);
        m.set_children_max(n);
      }
      const std::vector<uint64_t> got = s.TakeRunnable();
      ASSERT_EQ(got, m.TakeRunnable()) << "round " << round << " step " << step;
      running.insert(running.end(), got.begin(), got.end());
      ASSERT_EQ(s.running(), running.size());
    }
  }
}

// The keys besides DEVPATH, drawn from small sets so that events share them often: the same
// decisions as udevd's rule written out.
TEST(SchedulerTest, AgreesWithTheModelOnDeviceNumbersIfindexesAndOldPaths) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> parts = {"a", "b", "ab"};
  auto random_path = [&] {
    std::string path;
    const size_t depth = 1 + rng() % 3;
    for (size_t d = 0; d < depth; ++d) absl::StrAppend(&path, "/", parts[rng() % parts.size()]);
    return path;
  };
  for (int round = 0; round < 300; ++round) {
    Scheduler s(1 + rng() % 4);
    ModelScheduler m(s.children_max());
    std::vector<uint64_t> running;
    std::vector<std::string> old_paths;  // kept alive: EventKeys views them
    for (int step = 0; step < 150; ++step) {
      const uint64_t op = rng() % 10;
      if (op < 5) {
        EventKeys keys;
        if (rng() % 2 == 0) {
          keys.has_devnum = true;
          keys.block = rng() % 2 == 0;
          keys.major = static_cast<uint32_t>(rng() % 3);  // 0: no key, as in udevd
          keys.minor = static_cast<uint32_t>(rng() % 2);
        }
        if (rng() % 3 == 0) keys.ifindex = static_cast<int64_t>(rng() % 3);
        if (rng() % 3 == 0) {
          old_paths.push_back(random_path());
          keys.devpath_old = old_paths.back();
        }
        const std::string path = random_path();
        ASSERT_EQ(s.Enqueue(path, keys), m.Enqueue(path, keys));
      } else if (op < 8 && !running.empty()) {
        const size_t i = rng() % running.size();
        ASSERT_TRUE(s.Finish(running[i]).ok());
        m.Finish(running[i]);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
      const std::vector<uint64_t> got = s.TakeRunnable();
      ASSERT_EQ(got, m.TakeRunnable()) << "round " << round << " step " << step;
      running.insert(running.end(), got.begin(), got.end());
    }
  }
}

// The cases udevd's rule is for, by name.
TEST(SchedulerTest, SharedDeviceNumberIfindexOrOldPathBlocksOtherPaths) {
  Scheduler s(10);
  // A network interface renamed: the move (DEVPATH_OLD) waits for what was queued under the old
  // name; an event with the same ifindex under a third path waits too.
  const uint64_t eth0 = s.Enqueue("/devices/virtual/net/eth0", EventKeys{.ifindex = 2});
  const uint64_t move = s.Enqueue("/devices/virtual/net/wan0",
                                  EventKeys{.ifindex = 2, .devpath_old = "/devices/virtual/net/eth0"});
  // The same block device number under another path (a disk replaced): waits; the same numbers
  // of a character device do not tie it to a block device.
  const uint64_t sda = s.Enqueue("/devices/pci0/host0/block/sda",
                                 EventKeys{.has_devnum = true, .block = true, .major = 8, .minor = 0});
  const uint64_t sda_again = s.Enqueue("/devices/pci1/host1/block/sda",
                                       EventKeys{.has_devnum = true, .block = true, .major = 8, .minor = 0});
  const uint64_t char_8_0 = s.Enqueue("/devices/virtual/misc/x",
                                      EventKeys{.has_devnum = true, .block = false, .major = 8, .minor = 0});
  // Major 0 is no key (udevd ignores it).
  const uint64_t zero_a = s.Enqueue("/devices/virtual/z/a", EventKeys{.has_devnum = true, .major = 0});
  const uint64_t zero_b = s.Enqueue("/devices/virtual/z2/b", EventKeys{.has_devnum = true, .major = 0});
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(eth0, sda, char_8_0, zero_a, zero_b));
  EXPECT_EQ(s.blocked(), 2u);
  ASSERT_TRUE(s.Finish(eth0).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(move));
  ASSERT_TRUE(s.Finish(sda).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(sda_again));
  // A running event that lets the devices below it start still holds a shared key.
  const uint64_t later = s.Enqueue("/devices/virtual/net/wan0/queues/rx-0", EventKeys{.ifindex = 2});
  ASSERT_TRUE(s.ReleaseDescendants(move).ok());
  EXPECT_THAT(s.TakeRunnable(), IsEmpty());
  ASSERT_TRUE(s.Finish(move).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(later));
}

TEST(SchedulerTest, KeysComeFromTheEventsProperties) {
  Event disk;
  disk.devpath = "/devices/pci0/block/sda";
  disk.subsystem = "block";
  disk.major = "8";
  disk.minor = "16";
  EventKeys k = KeysOf(disk);
  EXPECT_TRUE(k.has_devnum);
  EXPECT_TRUE(k.block);
  EXPECT_EQ(k.major, 8u);
  EXPECT_EQ(k.minor, 16u);
  EXPECT_EQ(k.ifindex, 0);
  EXPECT_TRUE(k.devpath_old.empty());

  Event net;
  net.subsystem = "net";
  net.env = {{"IFINDEX", "3"}, {"DEVPATH_OLD", "/devices/virtual/net/eth0"}};
  k = KeysOf(net);
  EXPECT_FALSE(k.has_devnum);
  EXPECT_EQ(k.ifindex, 3);
  EXPECT_EQ(k.devpath_old, "/devices/virtual/net/eth0");

  Event bad;
  bad.major = "x";
  bad.minor = "1";
  bad.env = {{"IFINDEX", "-4"}};
  k = KeysOf(bad);
  EXPECT_FALSE(k.has_devnum);
  EXPECT_EQ(k.ifindex, 0);
}

// Long runs over many distinct paths: ended paths linger in the trie and are revived or swept;
// the decisions must not change and the trie must stay bounded.
TEST(SchedulerTest, AgreesWithTheModelWhileDeadPathsAreSwept) {
  std::mt19937_64 rng(11);
  Scheduler s(6);
  ModelScheduler m(6);
  std::vector<uint64_t> running;
  size_t max_nodes = 0;
  for (int step = 0; step < 30000; ++step) {
    if (rng() % 2 == 0) {
      std::string path;
      const size_t depth = 1 + rng() % 3;
      for (size_t d = 0; d < depth; ++d) absl::StrAppend(&path, "/n", rng() % 40);
      ASSERT_EQ(s.Enqueue(path), m.Enqueue(path));
    } else if (!running.empty()) {
      const size_t i = rng() % running.size();
      ASSERT_TRUE(s.Finish(running[i]).ok());
      m.Finish(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const std::vector<uint64_t> got = s.TakeRunnable();
    ASSERT_EQ(got, m.TakeRunnable()) << "step " << step;
    running.insert(running.end(), got.begin(), got.end());
    max_nodes = std::max(max_nodes, s.trie_nodes());
  }
  // 40 + 1600 + 64000 possible nodes; the dead ones are kept to about the sweep bound.
  EXPECT_LE(max_nodes, 600u);
  EXPECT_GT(max_nodes, 100u);  // ended paths do linger (the point of keeping them)
}

TEST(SchedulerTest, DistinctPathsOneAtATimeKeepTheTrieBounded) {
  Scheduler s(1);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t id = s.Enqueue(absl::StrCat("/devices/bench/dev", i));
    ASSERT_THAT(s.TakeRunnable(), ElementsAre(id));
    ASSERT_TRUE(s.Finish(id).ok());
    ASSERT_LE(s.trie_nodes(), 140u) << i;
  }
  // Still exact after sweeps: a parent waits for its live child, a sibling does not.
  const uint64_t child = s.Enqueue("/devices/bench/dev7");
  const uint64_t parent = s.Enqueue("/devices/bench");
  const uint64_t sibling = s.Enqueue("/devices/other");
  s.set_children_max(8);
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(child, sibling));
  ASSERT_TRUE(s.Finish(child).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(parent));
}

// A burst grows the event table and leaves dead trie nodes; once idle they are given back,
// and scheduling after that is as exact as before.
TEST(SchedulerTest, IdleReleaseFreesWhatABurstLeft) {
  Scheduler s(10000);
  for (int i = 0; i < 5000; ++i) (void)s.Enqueue(absl::StrCat("/devices/b", i % 7, "/dev", i));
  const std::vector<uint64_t> burst = s.TakeRunnable();
  ASSERT_EQ(burst.size(), 5000u);
  EXPECT_FALSE(s.ReleaseIdleMemory());  // events are live: nothing changes
  EXPECT_GE(s.entry_capacity(), 5000u);
  for (const uint64_t id : burst) ASSERT_TRUE(s.Finish(id).ok());
  // A last device leaves its path's nodes behind, dead (too few to sweep).
  const uint64_t last = s.Enqueue("/devices/x/y/z");
  ASSERT_THAT(s.TakeRunnable(), ElementsAre(last));
  ASSERT_TRUE(s.Finish(last).ok());
  ASSERT_TRUE(s.idle());
  EXPECT_GE(s.trie_nodes(), 3u);
  EXPECT_GE(s.entry_capacity(), 5000u);  // erasing never shrinks the table

  EXPECT_TRUE(s.ReleaseIdleMemory());
  EXPECT_EQ(s.trie_nodes(), 0u);
  EXPECT_EQ(s.entry_capacity(), 0u);
  // As exact as before: a parent waits for its live child, a sibling does not.
  s.set_children_max(8);
  const uint64_t child = s.Enqueue("/devices/b3/dev7");
  const uint64_t parent = s.Enqueue("/devices/b3");
  const uint64_t sibling = s.Enqueue("/devices/b4");
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(child, sibling));
  ASSERT_TRUE(s.Finish(child).ok());
  EXPECT_THAT(s.TakeRunnable(), ElementsAre(parent));
}

// 100,000 queued events: measures, asserts only correctness. Prints the CPU time per event so
// a quadratic regression is visible in the test log.
struct LoadResult {
  std::vector<uint64_t> start_order;
  double ns_per_event = 0;
};

// CPU time of this thread: the machine may be shared, so wall time would mislead.
double ThreadCpuNs() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

LoadResult RunLoad(const std::vector<std::string>& devpaths, size_t children_max) {
  const double t0 = ThreadCpuNs();
  Scheduler s(children_max);
  for (const std::string& d : devpaths) (void)s.Enqueue(d);
  LoadResult result;
  std::deque<uint64_t> running;
  while (true) {
    for (const uint64_t id : s.TakeRunnable()) {
      running.push_back(id);
      result.start_order.push_back(id);
    }
    if (running.empty()) break;
    if (!s.Finish(running.front()).ok()) break;
    running.pop_front();
  }
  result.ns_per_event = (ThreadCpuNs() - t0) / static_cast<double>(devpaths.size());
  EXPECT_TRUE(s.idle());
  return result;
}

TEST(SchedulerLoadTest, HundredThousandDistinctSiblings) {
  constexpr size_t kN = 100000;
  std::vector<std::string> devpaths;
  for (size_t i = 0; i < kN; ++i) {
    devpaths.push_back(absl::StrCat("/devices/pci0000:00/0000:00:", i % 100, ".0/block/dev", i));
  }
  const LoadResult r = RunLoad(devpaths, 10);
  ASSERT_EQ(r.start_order.size(), kN);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(r.start_order[i], i + 1);
  std::printf("scheduler: %zu distinct siblings: %.0f CPU ns per event (enqueue+start+finish)\n", kN,
              r.ns_per_event);
}

TEST(SchedulerLoadTest, HundredThousandParentsThenChildren) {
  // 1000 parents, then 100 children of each: every child waits on its parent only.
  std::vector<std::string> devpaths;
  for (int p = 0; p < 1000; ++p) devpaths.push_back(absl::StrCat("/devices/usb", p));
  for (int c = 0; c < 100; ++c) {
    for (int p = 0; p < 1000; ++p) devpaths.push_back(absl::StrCat("/devices/usb", p, "/", c));
  }
  const LoadResult r = RunLoad(devpaths, 10);
  ASSERT_EQ(r.start_order.size(), devpaths.size());
  // Parents are released first and unrelated to each other: they start first, in order.
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(r.start_order[i], i + 1);
  std::printf("scheduler: %zu parents+children: %.0f CPU ns per event\n", devpaths.size(),
              r.ns_per_event);
}

// The daemon's usual state: a handful of events in flight, each finishing soon after it starts.
TEST(SchedulerLoadTest, SteadyStateFewInFlight) {
  constexpr size_t kN = 100000;
  std::vector<std::string> devpaths;
  for (size_t i = 0; i < kN; ++i) {
    devpaths.push_back(absl::StrCat("/devices/pci0000:00/0000:00:", i % 100, ".0/block/dev", i));
  }
  Scheduler s(8);
  std::deque<uint64_t> running;
  size_t started = 0;
  const double t0 = ThreadCpuNs();
  for (const std::string& d : devpaths) {
    (void)s.Enqueue(d);
    for (const uint64_t id : s.TakeRunnable()) {
      running.push_back(id);
      ++started;
    }
    if (running.size() == 8) {
      ASSERT_TRUE(s.Finish(running.front()).ok());
      running.pop_front();
    }
  }
  const double ns = (ThreadCpuNs() - t0) / static_cast<double>(kN);
  EXPECT_EQ(started, kN);
  std::printf("scheduler: steady state, 8 in flight: %.0f CPU ns per event\n", ns);
}

TEST(SchedulerLoadTest, ChildrenThenTheirParent) {
  // 100,000 children queued, then their common parent, then one more child: the parent waits on
  // all of them, the last child on the parent.
  constexpr size_t kN = 100000;
  Scheduler s(16);
  for (size_t i = 0; i < kN; ++i) (void)s.Enqueue(absl::StrCat("/devices/bus/c", i));
  const uint64_t parent = s.Enqueue("/devices/bus");
  const uint64_t last = s.Enqueue("/devices/bus/c0");
  size_t started = 0;
  size_t finished = 0;
  std::deque<uint64_t> running;
  std::vector<uint64_t> tail;
  while (true) {
    for (const uint64_t id : s.TakeRunnable()) {
      running.push_back(id);
      ++started;
      if (id == parent) {
        EXPECT_EQ(finished, kN) << "the parent started before its children ended";
      }
      if (id == last) {
        EXPECT_EQ(finished, kN + 1) << "the last child overtook the parent";
      }
      if (id >= parent) tail.push_back(id);
    }
    if (running.empty()) break;
    ASSERT_TRUE(s.Finish(running.front()).ok());
    running.pop_front();
    ++finished;
  }
  EXPECT_EQ(started, kN + 2);
  EXPECT_THAT(tail, ElementsAre(parent, last));
}

}  // namespace
}  // namespace hotring::hotplug

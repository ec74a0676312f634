// Scheduler: decides which released events may start now. Pure logic over ids and DEVPATHs; the
// caller keeps the events (e.g. a map from id to Event) and runs them.
//
// Rule (systemd-udevd's): an event may not start while an EARLIER event (earlier in release
// order, whether still queued or already running) has a DEVPATH equal to, a parent of, or a
// child of its own. Parent/child is a prefix at '/' boundaries: /a/b is a parent of /a/b/c but
// not of /a/bc. Nor, as udevd 252's event_is_blocked (EventKeys), while an earlier one has its
// device number (a block device's only another block device's, a character device's another
// character device's), its network interface index, or its DEVPATH_OLD as DEVPATH: a device
// renamed, moved or replaced under another path waits for what was queued about it before.
// Otherwise events start in release order (FIFO), at most children_max at a time.
// One exception, on request (ReleaseDescendants): a running event whose remaining work is
// loading its device's driver lets the events of the devices below it start.
//
// Use: Enqueue each released event in release order; after every Enqueue or Finish call
// TakeRunnable and start what it returns; call Finish when an event is done.
//
// Bound: the scheduler does not limit its queue. The caller compares queued() with its own bound
// before Enqueue (and drops or pushes back), because only the caller knows what to do with an
// event that does not fit.
//
// Cost: each event remembers which earlier live events block it, and each event which later
// ones wait on it, so Finish touches only the events it was blocking and a blocked event is
// never re-scanned. Live DEVPATHs are kept in a trie of path components, each node counting the
// live events in its subtree: Enqueue walks the event's components (one short-key hash lookup
// each) and visits only subtrees below it that hold live events. When the last event on a
// DEVPATH ends, its own node goes at once, but the ancestors whose subtrees emptied stay in the
// trie for a while (the next device under the same parents walks them without allocating);
// such dead nodes are freed when a walk passes them or, in bulk, once they outnumber the live
// ones (and kMaxDeadNodes), so they cost amortized O(1) each and memory stays bounded. Per DEVPATH only the latest
// live event is waited on (it cannot finish before the earlier ones there), so a pile of events
// on one device stays linear. With distinct DEVPATHs, 100,000 queued events cost
// O(n * depth) in total, never O(n^2); an event whose DEVPATH has k live descendants costs O(k)
// once.
#ifndef HOTRING_HOTPLUG_SCHEDULER_H_
#define HOTRING_HOTPLUG_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "hotplug/event.h"

namespace hotring::hotplug {

// What else than its DEVPATH ties an event to the earlier ones (udevd's event_is_blocked).
struct EventKeys {
  // The device number, when the event has one with a major other than 0 (udevd ignores major
  // 0), and whether it is a block device's (SUBSYSTEM=block).
  bool has_devnum = false;
  bool block = false;
  uint32_t major = 0;
  uint32_t minor = 0;
  int64_t ifindex = 0;              // IFINDEX, when above 0
  absl::string_view devpath_old;    // DEVPATH_OLD (a move), canonical like DEVPATH; or empty
};

// An event's keys: MAJOR and MINOR (with SUBSYSTEM=block), IFINDEX and DEVPATH_OLD; what does
// not parse as a number is no key. devpath_old views the event's own string.
[[nodiscard]] EventKeys KeysOf(const Event& event);

// Owns the live (queued or running) events' blocking relations and the DEVPATH index.
class Scheduler {
 public:
  // children_max: how many events may run at once (the daemon passes 8 + 2 x CPUs by default).
  // 0 means nothing starts until set_children_max raises it.
  explicit Scheduler(size_t children_max);
  Scheduler(Scheduler&&) = default;
  Scheduler& operator=(Scheduler&&) = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues an event; returns its id: 1, 2, 3, ... in release order. `devpath` should be
  // canonical (EventFromEnv guarantees it): starts with '/', no trailing or doubled '/'.
  [[nodiscard]] uint64_t Enqueue(absl::string_view devpath) { return Enqueue(devpath, EventKeys{}); }
  // The same, also waiting on the earlier live events that share one of `keys`.
  [[nodiscard]] uint64_t Enqueue(absl::string_view devpath, const EventKeys& keys);

  // Ids to start now, in release order; they count as running from here on.
  [[nodiscard]] std::vector<uint64_t> TakeRunnable();
  // The same, appended to `out`: a caller that pumps after every event reuses one buffer.
  void TakeRunnable(std::vector<uint64_t>& out);

  // A running event is done. NotFound for an unknown id, FailedPrecondition for one still
  // queued (never returned by TakeRunnable).
  [[nodiscard]] absl::Status Finish(uint64_t id);

  // A running event stops holding back events on DEVPATHs below its own (queued ones and those
  // enqueued later); it still holds back its own DEVPATH and its parents', and keeps its slot
  // until Finish. For a handler whose remaining work is loading the device's driver: the
  // devices below are made by that driver's probe and want drivers of their own. Same errors
  // as Finish; a second call changes nothing.
  [[nodiscard]] absl::Status ReleaseDescendants(uint64_t id);

  [[nodiscard]] size_t queued() const { return entries_.size() - running_; }  // not started
  [[nodiscard]] size_t running() const { return running_; }
  // Queued events waiting on an earlier related event (the rest of queued() wait for a slot).
  [[nodiscard]] size_t blocked() const { return queued() - ready_.size(); }
  [[nodiscard]] bool idle() const { return entries_.empty(); }
  // DEVPATH components held in the trie, live and dead (bounded; see the cost note above).
  [[nodiscard]] size_t trie_nodes() const { return nodes_; }

  // Slots the live-event table has room for: a burst grows it, and only an idle release
  // shrinks it.
  [[nodiscard]] size_t entry_capacity() const { return entries_.capacity(); }

  // When idle (no live event), frees what a burst left: the trie's lingering dead nodes and
  // the event table's room. False (and nothing changes) while an event is live.
  bool ReleaseIdleMemory();

  [[nodiscard]] size_t children_max() const { return children_max_; }
  void set_children_max(size_t children_max) { children_max_ = children_max; }

 private:
  // Dead nodes (no live event in their subtree) kept before a sweep frees them: enough for the
  // paths of the last few dozen devices, few enough to stay in cache.
  static constexpr size_t kMaxDeadNodes = 128;

  // One DEVPATH component. Owns its children. Live while its subtree holds a live event; a dead
  // node lingers until a walk or a sweep frees it.
  struct Node {
    Node* parent = nullptr;
    std::string name;          // this component; the key in parent->children views it
    uint64_t latest = 0;       // the latest live event at exactly this DEVPATH (when live > 0)
    size_t live = 0;           // live events at exactly this DEVPATH
    size_t subtree_live = 0;   // live events here and below
    absl::flat_hash_map<absl::string_view, std::unique_ptr<Node>> children;
    // The child the last walk through here took (one of `children`, or null): consecutive
    // events under the same parents skip the hash lookups. Cleared when that child goes.
    Node* last_child = nullptr;
  };

  struct Entry {
    Node* node = nullptr;            // stable: nodes live on the heap until their subtree empties
    size_t blockers = 0;             // earlier live events this one still waits on
    bool running = false;
    bool released = false;           // ReleaseDescendants: blocks no event below its DEVPATH
    std::vector<uint64_t> waiters;   // later events counting this one in their blockers
    // Later events waiting on this one for a shared key (EventKeys), which ReleaseDescendants
    // keeps waiting: they are not below it for being the same device.
    std::vector<uint64_t> key_waiters;
    uint64_t devnum_key = 0;         // in by_devnum_ (0: none)
    int64_t ifindex = 0;             // in by_ifindex_ (0: none)
  };

  // The latest live event with a key, and how many live events have it. Events with one key
  // wait each on the one before, so the latest ends last and waiting on it covers the others.
  struct KeyLive {
    uint64_t latest = 0;
    size_t live = 0;
  };
  // Registers event `id` under `key`; returns the live event it must wait on (0: none).
  template <typename Key>
  static uint64_t TakeKey(absl::flat_hash_map<Key, KeyLive>& map, Key key, uint64_t id);
  template <typename Key>
  static void DropKey(absl::flat_hash_map<Key, KeyLive>& map, Key key);
  // The live event latest at exactly `devpath` (0: none), creating nothing.
  [[nodiscard]] uint64_t LatestAt(absl::string_view devpath) const;

  // Frees the dead children of `node` (with their subtrees) and calls visit_live(Node&) on the
  // others.
  template <typename Visit>
  void FreeDeadChildren(Node& node, Visit visit_live);
  // Frees every dead node once there are more dead nodes than the bound allows.
  void MaybeSweep();

  size_t children_max_;
  uint64_t next_id_ = 1;
  size_t running_ = 0;
  size_t nodes_ = 0;       // in the trie, root excluded
  size_t live_nodes_ = 0;  // of those, with a live event in their subtree
  std::unique_ptr<Node> root_;  // the empty path; a pointer so moves keep children's parents
  absl::flat_hash_map<uint64_t, Entry> entries_;
  // Live events by device number (block and character apart: see DevnumKey) and by ifindex.
  absl::flat_hash_map<uint64_t, KeyLive> by_devnum_;
  absl::flat_hash_map<int64_t, KeyLive> by_ifindex_;
  // Unblocked queued ids, smallest (earliest) first.
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> ready_;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_SCHEDULER_H_

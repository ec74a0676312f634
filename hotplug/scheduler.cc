#include "hotplug/scheduler.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug {

Scheduler::Scheduler(size_t children_max)
    : children_max_(children_max), root_(std::make_unique<Node>()) {}

namespace {

// Nodes in the subtree at `node`, itself included.
template <typename Node>
size_t CountNodes(const Node& node) {
  size_t count = 1;
  for (const auto& [name, child] : node.children) count += CountNodes(*child);
  return count;
}

// A big map that lost most of its entries gives its memory back: iterating it (the descendant
// walk) costs its capacity, not its size. Small ones keep theirs, so a node whose children come
// and go does not shrink and regrow its table every sweep.
template <typename Map>
void ShrinkIfSparse(Map& map) {
  if (map.capacity() > 512 && map.size() * 4 < map.capacity()) map.rehash(0);
}

}  // namespace

template <typename Visit>
void Scheduler::FreeDeadChildren(Node& node, Visit visit_live) {
  bool freed = false;
  for (auto it = node.children.begin(); it != node.children.end();) {
    Node& child = *it->second;
    if (child.subtree_live == 0) {
      nodes_ -= CountNodes(child);
      if (node.last_child == &child) node.last_child = nullptr;
      node.children.erase(it++);  // destroys the child's subtree; other iterators stay valid
      freed = true;
      continue;
    }
    visit_live(child);
    ++it;
  }
  if (freed) ShrinkIfSparse(node.children);
}

namespace {

// One number per device number and kind: bit 63 tells block from character devices (udevd
// compares a block device only with block devices), never 0.
uint64_t DevnumKey(const EventKeys& keys) {
  return (keys.block ? uint64_t{1} << 63 : uint64_t{1} << 62) |
         (static_cast<uint64_t>(keys.major) << 32) | keys.minor;
}

}  // namespace

EventKeys KeysOf(const Event& event) {
  EventKeys keys;
  uint32_t major = 0;
  uint32_t minor = 0;
  if (absl::SimpleAtoi(event.major, &major) && absl::SimpleAtoi(event.minor, &minor) && major != 0) {
    keys.has_devnum = true;
    keys.block = event.subsystem == "block";
    keys.major = major;
    keys.minor = minor;
  }
  if (const std::optional<absl::string_view> ifindex = event.Get("IFINDEX"); ifindex.has_value()) {
    int64_t n = 0;
    if (absl::SimpleAtoi(*ifindex, &n) && n > 0) keys.ifindex = n;
  }
  if (const std::optional<absl::string_view> old = event.Get("DEVPATH_OLD"); old.has_value()) {
    keys.devpath_old = *old;
  }
  return keys;
}

template <typename Key>
uint64_t Scheduler::TakeKey(absl::flat_hash_map<Key, KeyLive>& map, Key key, uint64_t id) {
  KeyLive& k = map[key];
  const uint64_t before = k.live > 0 ? k.latest : 0;
  k.latest = id;
  ++k.live;
  return before;
}

template <typename Key>
void Scheduler::DropKey(absl::flat_hash_map<Key, KeyLive>& map, Key key) {
  const auto it = map.find(key);
  if (it != map.end() && --it->second.live == 0) map.erase(it);
}

uint64_t Scheduler::LatestAt(absl::string_view devpath) const {
  const Node* node = root_.get();
  absl::string_view rest = devpath;
  if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  while (true) {
    const size_t slash = rest.find('/');
    const auto it = node->children.find(rest.substr(0, slash));
    if (it == node->children.end()) return 0;
    node = it->second.get();
    if (slash == absl::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return node->live > 0 ? node->latest : 0;
}

uint64_t Scheduler::Enqueue(absl::string_view devpath, const EventKeys& keys) {
  const uint64_t id = next_id_++;
  Entry entry;
  auto wait_on = [&](uint64_t blocker) {
    entries_.at(blocker).waiters.push_back(id);
    ++entry.blockers;
  };
  auto wait_on_key = [&](uint64_t blocker) {
    if (blocker == 0) return;
    entries_.at(blocker).key_waiters.push_back(id);
    ++entry.blockers;
  };
  // Before this event's own path is in the trie: a DEVPATH_OLD equal to DEVPATH names itself.
  if (!keys.devpath_old.empty() && keys.devpath_old != devpath) wait_on_key(LatestAt(keys.devpath_old));
  if (keys.has_devnum && keys.major != 0) {
    entry.devnum_key = DevnumKey(keys);
    wait_on_key(TakeKey(by_devnum_, entry.devnum_key, id));
  }
  if (keys.ifindex > 0) {
    entry.ifindex = keys.ifindex;
    wait_on_key(TakeKey(by_ifindex_, entry.ifindex, id));
  }

  // Walk (and create) the components of devpath; note the latest live event of each ancestor.
  absl::InlinedVector<uint64_t, 16> ancestors;
  Node* node = root_.get();
  absl::string_view rest = devpath;
  if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  while (true) {
    const size_t slash = rest.find('/');
    const absl::string_view component = rest.substr(0, slash);
    Node* const parent = node;
    node = parent->last_child;
    if (node == nullptr || node->name != component) {
      // One lookup; a missing component is built in place, keyed by its own copy of the name.
      const auto it = parent->children.lazy_emplace(component, [&](const auto& construct) {
        auto child = std::make_unique<Node>();
        child->parent = parent;
        child->name = std::string(component);
        const absl::string_view key = child->name;
        construct(key, std::move(child));
        ++nodes_;
      });
      node = it->second.get();
      parent->last_child = node;
    }
    if (slash == absl::string_view::npos) break;
    // A released latest event is running, so every earlier one at that DEVPATH has ended.
    if (node->live > 0 && !entries_.at(node->latest).released) ancestors.push_back(node->latest);
    rest.remove_prefix(slash + 1);
  }

  // The latest live event at this exact DEVPATH already waits on every earlier related event
  // that is still live, so waiting on it covers those; only later ones must be added.
  const uint64_t covered = node->live > 0 ? node->latest : 0;
  if (covered != 0) wait_on(covered);
  for (const uint64_t a : ancestors) {
    if (a > covered) wait_on(a);
  }
  // Descendants: only subtrees that hold live events. Dead nodes met on the way are freed, so
  // each costs this walk once.
  if (node->subtree_live > node->live) {
    absl::InlinedVector<Node*, 16> stack = {node};
    while (!stack.empty()) {
      Node* const n = stack.back();
      stack.pop_back();
      FreeDeadChildren(*n, [&](Node& child) {
        if (child.live > 0 && child.latest > covered) wait_on(child.latest);
        if (child.subtree_live > child.live) stack.push_back(&child);
      });
    }
  }

  node->latest = id;
  ++node->live;
  for (Node* n = node; n->parent != nullptr; n = n->parent) {
    if (n->subtree_live++ == 0) ++live_nodes_;
  }
  ++root_->subtree_live;
  entry.node = node;
  if (entry.blockers == 0) ready_.push(id);
  entries_.emplace(id, std::move(entry));
  return id;
}

void Scheduler::MaybeSweep() {
  const size_t dead = nodes_ - live_nodes_;
  if (dead <= kMaxDeadNodes || dead <= live_nodes_) return;
  // Costs the live nodes plus the dead ones freed; runs only when the dead outnumber the live.
  std::vector<Node*> stack = {root_.get()};
  while (!stack.empty()) {
    Node* const n = stack.back();
    stack.pop_back();
    FreeDeadChildren(*n, [&](Node& child) { stack.push_back(&child); });
  }
}

bool Scheduler::ReleaseIdleMemory() {
  if (!entries_.empty()) return false;
  // Nothing is live, so every node is dead and no entry points at one.
  root_ = std::make_unique<Node>();
  nodes_ = 0;
  live_nodes_ = 0;
  entries_ = {};
  ready_ = {};
  by_devnum_ = {};
  by_ifindex_ = {};
  return true;
}

std::vector<uint64_t> Scheduler::TakeRunnable() {
  std::vector<uint64_t> start;
  TakeRunnable(start);
  return start;
}

void Scheduler::TakeRunnable(std::vector<uint64_t>& out) {
  while (running_ < children_max_ && !ready_.empty()) {
    const uint64_t id = ready_.top();
    ready_.pop();
    entries_.at(id).running = true;
    ++running_;
    out.push_back(id);
  }
}

absl::Status Scheduler::Finish(uint64_t id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat("no event ", id));
  if (!it->second.running) {
    return absl::FailedPreconditionError(absl::StrCat("event ", id, " has not started"));
  }
  // Waiters cannot have started (they wait on this one), so each is live.
  for (const std::vector<uint64_t>* list : {&it->second.waiters, &it->second.key_waiters}) {
    for (const uint64_t waiter : *list) {
      if (--entries_.at(waiter).blockers == 0) ready_.push(waiter);
    }
  }
  if (it->second.devnum_key != 0) DropKey(by_devnum_, it->second.devnum_key);
  if (it->second.ifindex != 0) DropKey(by_ifindex_, it->second.ifindex);
  Node* const leaf = it->second.node;
  --leaf->live;
  // Drop the counts up to the root.
  Node* node = leaf;
  for (; node->parent != nullptr; node = node->parent) {
    if (--node->subtree_live == 0) --live_nodes_;
  }
  --node->subtree_live;  // the root
  // A device's own path, once its last event ended, goes at once: paths are mostly distinct
  // devices, and removing it from a small sibling table costs less than leaving it for a sweep.
  // Its ancestors (shared by the next device's path) stay until a walk or sweep frees them.
  if (leaf->subtree_live == 0 && leaf->children.empty()) {
    Node* const parent = leaf->parent;
    if (parent->last_child == leaf) parent->last_child = nullptr;
    parent->children.erase(absl::string_view(leaf->name));  // destroys *leaf
    --nodes_;
  }
  entries_.erase(it);
  --running_;
  MaybeSweep();
  return absl::OkStatus();
}

absl::Status Scheduler::ReleaseDescendants(uint64_t id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat("no event ", id));
  Entry& entry = it->second;
  if (!entry.running) {
    return absl::FailedPreconditionError(absl::StrCat("event ", id, " has not started"));
  }
  if (entry.released) return absl::OkStatus();
  entry.released = true;
  const Node* const own = entry.node;
  auto below = [own](const Node* node) {
    for (node = node->parent; node != nullptr; node = node->parent) {
      if (node == own) return true;
    }
    return false;
  };
  std::vector<uint64_t> kept;
  for (const uint64_t waiter : entry.waiters) {
    Entry& w = entries_.at(waiter);
    if (!below(w.node)) {
      kept.push_back(waiter);
      continue;
    }
    if (--w.blockers == 0) ready_.push(waiter);
  }
  entry.waiters = std::move(kept);
  return absl::OkStatus();
}

}  // namespace hotring::hotplug

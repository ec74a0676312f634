#include "hotplug/scheduler.h"

#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug {

Scheduler::Scheduler(size_t children_max)
    : children_max_(children_max), root_(std::make_unique<Node>()) {}

uint64_t Scheduler::Enqueue(absl::string_view devpath) {
  const uint64_t id = next_id_++;
  Entry entry;
  auto wait_on = [&](uint64_t blocker) {
    entries_.at(blocker).waiters.push_back(id);
    ++entry.blockers;
  };

  // Walk (and create) the components of devpath; note the latest live event of each ancestor.
  absl::InlinedVector<uint64_t, 16> ancestors;
  Node* node = root_.get();
  absl::string_view rest = devpath;
  if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  while (true) {
    const size_t slash = rest.find('/');
    const absl::string_view component = rest.substr(0, slash);
    auto it = node->children.find(component);
    if (it == node->children.end()) {
      auto child = std::make_unique<Node>();
      child->parent = node;
      child->name = std::string(component);
      const absl::string_view key = child->name;
      it = node->children.emplace(key, std::move(child)).first;
    }
    node = it->second.get();
    if (slash == absl::string_view::npos) break;
    if (node->live > 0) ancestors.push_back(node->latest);
    rest.remove_prefix(slash + 1);
  }

  // The latest live event at this exact DEVPATH already waits on every earlier related event
  // that is still live, so waiting on it covers those; only later ones must be added.
  const uint64_t covered = node->live > 0 ? node->latest : 0;
  if (covered != 0) wait_on(covered);
  for (const uint64_t a : ancestors) {
    if (a > covered) wait_on(a);
  }
  // Descendants: only subtrees that hold live events.
  if (node->subtree_live > node->live) {
    absl::InlinedVector<const Node*, 16> stack = {node};
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      for (const auto& [name, child] : n->children) {
        if (child->live > 0 && child->latest > covered) wait_on(child->latest);
        if (child->subtree_live > child->live) stack.push_back(child.get());
      }
    }
  }

  node->latest = id;
  ++node->live;
  for (Node* n = node; n != nullptr; n = n->parent) ++n->subtree_live;
  entry.node = node;
  if (entry.blockers == 0) ready_.push(id);
  entries_.emplace(id, std::move(entry));
  return id;
}

std::vector<uint64_t> Scheduler::TakeRunnable() {
  std::vector<uint64_t> start;
  while (running_ < children_max_ && !ready_.empty()) {
    const uint64_t id = ready_.top();
    ready_.pop();
    entries_.at(id).running = true;
    ++running_;
    start.push_back(id);
  }
  return start;
}

absl::Status Scheduler::Finish(uint64_t id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat("no event ", id));
  if (!it->second.running) {
    return absl::FailedPreconditionError(absl::StrCat("event ", id, " has not started"));
  }
  // Waiters cannot have started (they wait on this one), so each is live.
  for (const uint64_t waiter : it->second.waiters) {
    if (--entries_.at(waiter).blockers == 0) ready_.push(waiter);
  }
  Node* node = it->second.node;
  --node->live;
  // Drop the counts up to the root, freeing nodes whose subtree emptied (children go first, so
  // an emptied node has no children left).
  while (node != nullptr) {
    Node* const parent = node->parent;
    if (--node->subtree_live == 0 && parent != nullptr) {
      const auto child = parent->children.find(absl::string_view(node->name));
      parent->children.erase(child);  // destroys *node
    }
    node = parent;
  }
  entries_.erase(it);
  --running_;
  return absl::OkStatus();
}

}  // namespace hotring::hotplug

// `hotring trigger --needed`: which devices are worth an `add` replay at coldplug. A device is
// needed when the mdev.conf rules act on its add event beyond busybox's built-in default (a node
// with another owner or mode, a `=` move, a `>` link, a `!` that keeps the node away, a command
// run on add), or when its MODALIAS resolves to a driver module that is neither loaded nor built
// in (the modules the alias matched, not their dependencies);
// the parents of a needed device are replayed too, before it, so that whatever handles the
// child finds its parents handled (`trigger --drivers-first` writes the devices waiting for a
// driver before this selection, and so before their parents). Everything else (on a typical board
// thousands of platform, memory and cpu devices) is left alone.
//
// Pure: the decisions take the device's uevent (as ReadUeventFile gives it), the rule set, a
// module resolver and the set of loaded module names, and do no I/O of their own.
#ifndef HOTRING_HOTPLUG_COLDPLUG_TRIGGER_NEEDED_H_
#define HOTRING_HOTPLUG_COLDPLUG_TRIGGER_NEEDED_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "hotplug/event.h"
#include "hotplug/modules/load_plan.h"
#include "hotplug/rules/rule_set.h"

namespace hotring::hotplug {

// What module resolution knows. Borrows both; `resolver` null: no module index (MODALIAS is
// then never a reason).
struct ModuleFacts {
  const modules::Resolver* resolver = nullptr;
  // Names of the modules the kernel has (normalised, '-' as '_'): /proc/modules and
  // /sys/module. Built-in modules need not be here: the resolver marks them.
  const absl::flat_hash_set<std::string>* loaded = nullptr;
};

// Why one device would be replayed; empty: it is not needed on its own account.
struct NeedDecision {
  // One line each, e.g. "rule /etc/mdev.conf:12 (mode 0640, >disk/%1)",
  // "module e1000e not loaded".
  std::vector<std::string> reasons;
  [[nodiscard]] bool needed() const { return !reasons.empty(); }
};

// Decides for one device from its uevent (`event`: DEVPATH, SUBSYSTEM, DEVNAME, MAJOR, MINOR,
// MODALIAS and the rest, as an add event). The owner, mode, `=`, `>` and `!` of a rule count
// only for a device with a node (MAJOR and MINOR); commands count when they run on add (`@`,
// `*`), not `$` ones.
[[nodiscard]] NeedDecision DecideNeeded(const rules::RuleSet& rules, const Event& event,
                                        const ModuleFacts& modules);

// One device picked for the replay.
struct NeededDevice {
  size_t index = 0;  // into the devpaths given to SelectNeeded
  std::vector<std::string> reasons;  // its own, or "parent of DEVPATH"
};

// The needed devices and their parents, in the order of `devpaths` (ScanSysfs order: a parent
// before its children). `decisions[i]` belongs to `devpaths[i]`. A parent is any device of
// `devpaths` whose DEVPATH is a proper prefix, at a '/', of a needed one's; it is named after
// the first needed descendant (in `devpaths` order) unless it is needed itself.
[[nodiscard]] std::vector<NeededDevice> SelectNeeded(absl::Span<const std::string> devpaths,
                                                     absl::Span<const NeedDecision> decisions);

// "DEVPATH  reason; reason" (the --dry-run line).
[[nodiscard]] std::string FormatNeeded(absl::string_view devpath, const NeededDevice& device);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_COLDPLUG_TRIGGER_NEEDED_H_

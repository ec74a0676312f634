// The rules engine: for one event, what the rules say (a pure plan: nodes, links, commands,
// firmware); the plan's node actions are applied on a dev root by hotplug/devroot. Commands are RETURNED, never run here:
// the daemon runs them through its Spawner (async, with timeout and output capture), the mdev
// applet runs them synchronously. Both share this code.
//
//   Device device = DeviceFromEvent(event);           // or built by the mdev applet
//   EventPlan plan = PlanEvent(rule_set, device);     // pure
//   if (plan.action == DeviceAction::kRemove) RunCommands(plan.commands);   // '$' before removal
//   NodeReport report = ApplyNodes(dev_root, plan);   // mknod/chown/chmod/rename/link/unlink
//   if (plan.action != DeviceAction::kRemove) RunCommands(plan.commands);   // '@' after creation
//   if (plan.firmware) LoadFirmware(...);             // see firmware.h
#ifndef HOTRING_HOTPLUG_RULES_ENGINE_H_
#define HOTRING_HOTPLUG_RULES_ENGINE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"
#include "hotplug/devroot/dev_root.h"
#include "hotplug/rules/device.h"
#include "hotplug/rules/rule_set.h"

namespace hotring::hotplug::rules {

// The dev root and its node actions belong to devroot; the rules speak of them as their own.
using devroot::ApplyNodes;
using devroot::DevNodes;
using devroot::DevRoot;
using devroot::IsSafeRelativePath;
using devroot::MakeLinkBeneath;
using devroot::NodeReport;
using devroot::NodeStep;
using devroot::RemoveLinkBeneath;

// One command to run as `/bin/sh -c text`. Owns its strings.
struct Command {
  std::string text;                // from mdev.conf only: event values never go into it
  std::vector<std::string> envp;   // "KEY=VALUE": the device's env, then MDEV=<node path>
  std::string origin;              // the rule's "FILE:LINE"
};

// Everything the rules say about one event. Owns its strings.
struct EventPlan {
  DeviceAction action = DeviceAction::kOther;
  std::vector<NodeStep> nodes;     // in rule order
  std::vector<Command> commands;   // in rule order; remove: run BEFORE ApplyNodes, else after
  std::optional<std::string> firmware;  // add with FIRMWARE: the file to load (validated)
  // Non-empty when something was refused because a name or path would leave the dev root (or
  // firmware root): the reason, e.g. "DEVNAME '../etc/x' leaves the dev root". Count it as
  // dropped_bad_devname. A bad DEVNAME refuses the whole event; a bad substituted path refuses
  // only that rule's node and command.
  std::vector<std::string> refused;
  // Logical counters of the plan: how many rules applied (for logs and tests).
  int rules_matched = 0;
};

// Options of PlanEvent.
struct PlanOptions {
  // mdev -s: the device holding "/" gets a "root" symlink (busybox). nullopt: none.
  std::optional<DevNumber> root_device;
  // busybox removes the node named after the device on every remove event, number or not (its
  // test suite sends remove without MAJOR). The daemon sets this for kernel events, where a
  // missing MAJOR means the device never had a node: nothing of that name is removed then.
  bool remove_needs_number = false;
};

// Matches `device` against `rules` and plans nodes, links, commands and firmware. Pure: no I/O.
[[nodiscard]] EventPlan PlanEvent(const RuleSet& rules, const Device& device,
                                  const PlanOptions& options = {});

// ApplyNodes of the plan's nodes (devroot::ApplyNodes).
inline NodeReport ApplyNodes(const DevRoot& root, const EventPlan& plan) {
  return devroot::ApplyNodes(root, plan.nodes);
}

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_ENGINE_H_

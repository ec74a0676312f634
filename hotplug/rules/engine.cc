#include "hotplug/rules/engine.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug::rules {
namespace {

bool CommandRuns(CommandWhen when, DeviceAction action) {
  switch (when) {
    case CommandWhen::kNever:
      return false;
    case CommandWhen::kAdd:
      return action == DeviceAction::kAdd;
    case CommandWhen::kRemove:
      return action == DeviceAction::kRemove;
    case CommandWhen::kAlways:
      return true;
  }
  return false;
}

// The command's environment: the device's, with MDEV set to the node's path.
std::vector<std::string> CommandEnv(const Device& device, absl::string_view node) {
  std::vector<std::string> envp;
  envp.reserve(device.env.size() + 1);
  for (const auto& [key, value] : device.env) {
    if (key == "MDEV") continue;
    envp.push_back(absl::StrCat(key, "=", value));
  }
  envp.push_back(absl::StrCat("MDEV=", node));
  return envp;
}

}  // namespace

EventPlan PlanEvent(const RuleSet& rules, const Device& device, const PlanOptions& options) {
  EventPlan plan;
  plan.action = device.action;
  // First, whatever the event: a DEVNAME leaving the dev root is always said (found by
  // mdev_conf_fuzz: a remove with FIRMWARE returned before it, silently).
  if (!IsSafeRelativePath(device.name)) {
    plan.refused.push_back(absl::StrCat("DEVNAME '", device.name, "' leaves the dev root"));
    return plan;
  }
  // busybox: a remove event carrying FIRMWARE deleted nodes by mistake; it is ignored.
  if (device.action == DeviceAction::kRemove && !device.firmware.empty()) return plan;
  bool no_node = false;  // a '!' rule suppresses nodes for every later rule too (busybox)
  rules.Match(device, [&](const Rule& rule, absl::string_view subject, const MatchGroups& groups) {
    ++plan.rules_matched;
    std::string node(device.name);
    std::string link;
    switch (rule.node_action) {
      case NodeAction::kKeep:
        break;
      case NodeAction::kNoNode:
        no_node = true;
        break;
      case NodeAction::kMove:
      case NodeAction::kMoveAndLink: {
        std::string path = SubstituteGroups(rule.path, subject, groups);
        if (absl::EndsWith(path, "/")) absl::StrAppend(&path, device.name);
        if (!IsSafeRelativePath(path)) {
          plan.refused.push_back(
              absl::StrCat(rule.Origin(), ": path '", path, "' leaves the dev root"));
          return;
        }
        node = std::move(path);
        if (rule.node_action == NodeAction::kMoveAndLink && node != device.name) {
          link = std::string(device.name);
        }
        break;
      }
    }
    const bool command = CommandRuns(rule.command_when, device.action);
    const bool numbered = device.number.has_value();
    if (!no_node &&
        ((device.action == DeviceAction::kRemove && (numbered || !options.remove_needs_number)) ||
         (device.action == DeviceAction::kAdd && numbered))) {
      NodeStep step;
      step.kind = device.action == DeviceAction::kAdd ? NodeStep::Kind::kCreate
                                                      : NodeStep::Kind::kRemove;
      step.path = node;
      step.name = std::string(device.name);
      step.link = std::move(link);
      step.number = device.number;
      step.block = device.IsBlock();
      step.owner = rule.owner;
      step.mode = rule.mode;
      step.root_link = step.kind == NodeStep::Kind::kCreate && options.root_device.has_value() &&
                       device.number == options.root_device;
      step.origin = rule.Origin();
      plan.nodes.push_back(std::move(step));
    }
    if (command) {
      plan.commands.push_back({rule.command, CommandEnv(device, node), rule.Origin()});
    }
  });
  if (device.action == DeviceAction::kAdd && !device.firmware.empty()) {
    if (IsSafeRelativePath(device.firmware)) {
      plan.firmware = std::string(device.firmware);
    } else {
      plan.refused.push_back(absl::StrCat("FIRMWARE '", device.firmware, "' leaves the firmware root"));
    }
  }
  return plan;
}

}  // namespace hotring::hotplug::rules

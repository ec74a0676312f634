#include "hotplug/coldplug/trigger_needed.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hotplug/rules/device.h"

namespace hotring::hotplug {
namespace {

// What one applying rule does on add beyond the built-in default; empty: nothing.
std::vector<std::string> RuleEffects(const rules::Rule& rule, bool has_node) {
  std::vector<std::string> effects;
  const rules::Rule& fallback = rules::RuleSet::DefaultRule();
  if (has_node) {
    if (!(rule.owner == fallback.owner)) {
      effects.push_back(absl::StrCat("owner ", rule.owner.uid, ":", rule.owner.gid));
    }
    if (rule.mode != fallback.mode) effects.push_back(absl::StrFormat("mode %04o", rule.mode));
    switch (rule.node_action) {
      case rules::NodeAction::kKeep:
        break;
      case rules::NodeAction::kMove:
        effects.push_back(absl::StrCat("=", rule.path));
        break;
      case rules::NodeAction::kMoveAndLink:
        effects.push_back(absl::StrCat(">", rule.path));
        break;
      case rules::NodeAction::kNoNode:
        effects.push_back("! no node");
        break;
    }
  }
  switch (rule.command_when) {
    case rules::CommandWhen::kNever:
    case rules::CommandWhen::kRemove:  // runs only on remove: an add replay does not run it
      break;
    case rules::CommandWhen::kAdd:
      effects.push_back("@command");
      break;
    case rules::CommandWhen::kAlways:
      effects.push_back("*command");
      break;
  }
  return effects;
}

// The modules a MODALIAS asks for (the plan's required modules that no other module of the plan
// needs: the drivers, not their dependencies or softdeps) that are neither loaded nor built in.
// A driver that is there has brought its dependencies with it.
std::vector<std::string> MissingModules(const modules::LoadPlan& plan,
                                        const absl::flat_hash_set<std::string>& loaded) {
  absl::flat_hash_set<std::string> needed_by_others;
  for (const modules::ModuleToLoad& module : plan.modules) {
    for (const std::string& need : module.needs) needed_by_others.insert(need);
  }
  std::vector<std::string> missing;
  for (const modules::ModuleToLoad& module : plan.modules) {
    if (!module.required || needed_by_others.contains(module.name)) continue;
    if (module.builtin || loaded.contains(module.name)) continue;
    missing.push_back(module.name);
  }
  return missing;
}

}  // namespace

NeedDecision DecideNeeded(const rules::RuleSet& rules, const Event& event,
                          const ModuleFacts& modules) {
  NeedDecision decision;
  rules::Device device = rules::DeviceFromEvent(event);
  device.action = rules::DeviceAction::kAdd;  // what the replay will be
  const bool has_node = device.number.has_value();
  const rules::Rule* fallback = &rules::RuleSet::DefaultRule();
  rules.Match(device, [&](const rules::Rule& rule, absl::string_view, const rules::MatchGroups&) {
    if (&rule == fallback) return;
    std::vector<std::string> effects = RuleEffects(rule, has_node);
    if (effects.empty()) return;
    decision.reasons.push_back(
        absl::StrCat("rule ", rule.Origin(), " (", absl::StrJoin(effects, ", "), ")"));
  });

  if (!event.modalias.empty() && modules.resolver != nullptr) {
    absl::StatusOr<modules::LoadPlan> plan = modules.resolver->Resolve(event.modalias, true);
    if (!plan.ok()) {
      // Replaying is what a trigger without --needed would do: the safe side.
      decision.reasons.push_back(absl::StrCat("MODALIAS ", event.modalias,
                                              " could not be resolved: ", plan.status().message()));
    } else {
      static const absl::flat_hash_set<std::string> kNone;
      const std::vector<std::string> missing =
          MissingModules(*plan, modules.loaded != nullptr ? *modules.loaded : kNone);
      if (missing.size() == 1) {
        decision.reasons.push_back(absl::StrCat("module ", missing[0], " not loaded"));
      } else if (!missing.empty()) {
        decision.reasons.push_back(
            absl::StrCat("modules ", absl::StrJoin(missing, ", "), " not loaded"));
      }
    }
  }
  return decision;
}

std::vector<NeededDevice> SelectNeeded(absl::Span<const std::string> devpaths,
                                       absl::Span<const NeedDecision> decisions) {
  absl::flat_hash_map<absl::string_view, size_t> index_of;
  index_of.reserve(devpaths.size());
  for (size_t i = 0; i < devpaths.size(); ++i) index_of.emplace(devpaths[i], i);

  std::vector<std::vector<std::string>> reasons(devpaths.size());
  std::vector<bool> picked(devpaths.size(), false);
  for (size_t i = 0; i < devpaths.size() && i < decisions.size(); ++i) {
    if (!decisions[i].needed()) continue;
    picked[i] = true;
    reasons[i] = decisions[i].reasons;
  }
  for (size_t i = 0; i < devpaths.size() && i < decisions.size(); ++i) {
    if (!decisions[i].needed()) continue;
    absl::string_view ancestor = devpaths[i];
    for (size_t slash = ancestor.rfind('/'); slash != absl::string_view::npos && slash > 0;
         slash = ancestor.rfind('/')) {
      ancestor = ancestor.substr(0, slash);
      const auto found = index_of.find(ancestor);
      if (found == index_of.end()) continue;
      const size_t parent = found->second;
      if (picked[parent]) continue;  // needed itself, or already named after a descendant
      picked[parent] = true;
      reasons[parent].push_back(absl::StrCat("parent of ", devpaths[i]));
    }
  }
  std::vector<NeededDevice> selected;
  for (size_t i = 0; i < devpaths.size(); ++i) {
    if (picked[i]) selected.push_back(NeededDevice{i, std::move(reasons[i])});
  }
  return selected;
}

std::string FormatNeeded(absl::string_view devpath, const NeededDevice& device) {
  return absl::StrCat(devpath, "  ", absl::StrJoin(device.reasons, "; "));
}

}  // namespace hotring::hotplug

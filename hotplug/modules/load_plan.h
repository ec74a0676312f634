// What module resolution hands to module loading: the modules one name or alias needs, each
// with what must be loaded before it. The resolver (kmod's rules: aliases, blacklist, deps,
// softdeps, options, install commands) fills it; the loader (finit_module off the reactor
// thread, scheduled by this graph) consumes it. Plain data, no I/O.
#ifndef HOTRING_HOTPLUG_MODULES_LOAD_PLAN_H_
#define HOTRING_HOTPLUG_MODULES_LOAD_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {

// One module of a plan.
struct ModuleToLoad {
  std::string name;             // normalised: '-' is '_'
  std::string path;             // absolute path of the .ko; empty when builtin
  std::string options;          // parameters, space-separated, as finit_module takes them
  std::string install_command;  // non-empty: run as `/bin/sh -c` instead of loading
  bool builtin = false;         // nothing to load
  // Names of modules of the same plan that must be loaded first (dependencies, softdep pre:;
  // a softdep post: module needs the module it follows).
  std::vector<std::string> needs;
  // The query's own module or one of its dependencies. False for softdep modules and what they
  // pull in: as with kmod, their failure fails nothing else (a need on them only orders).
  bool required = true;
  // The modules the query matched (LoadPlan::matched) whose probe lists hold this one: once
  // every one of them is in the kernel, this one is not needed (kmod skips the whole list).
  std::vector<std::string> wanted_by;

  bool operator==(const ModuleToLoad&) const = default;
};

// The modules that one query needs, dependencies before dependants (a valid serial order).
struct LoadPlan {
  std::string query;  // the name or alias asked for
  std::vector<ModuleToLoad> modules;
  // The alias matched only blacklisted modules (nothing to load, not an error).
  bool blacklisted = false;
  // Load ahead of the other plans: the loader queues these loads before the ones waiting for a
  // thread and raises their threads' CPU priority while they run (set by the modules stage for
  // the drivers of bus controllers: bus_controller.h).
  bool first = false;
  // The modules the query itself matched (not blacklisted), each with its probe list in
  // `modules`. As kmod (modprobe, udev's kmod builtin): a matched module the kernel has already
  // (loaded or builtin) is done, its softdeps and dependencies are not tried again (a softdep
  // that failed on the first device is not retried on every later one).
  std::vector<std::string> matched;
  // Nothing matched (not an error for a MODALIAS: many devices have no driver module).
  [[nodiscard]] bool unmatched() const { return modules.empty() && !blacklisted; }
};

// Resolves a name or alias into a plan. The daemon's modules stage holds one; tests give it a
// fake. Implementations are immutable after construction (a reload builds a new one).
class Resolver {
 public:
  virtual ~Resolver() = default;
  // `alias_lookup`: true for a MODALIAS or any alias (the blacklist applies), false for an
  // explicit module name given by a user (`modprobe NAME`).
  [[nodiscard]] virtual absl::StatusOr<LoadPlan> Resolve(absl::string_view name_or_alias,
                                                         bool alias_lookup) const = 0;
};

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_LOAD_PLAN_H_

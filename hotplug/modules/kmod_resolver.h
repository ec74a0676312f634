// Resolution of a module name or alias exactly as kmod's modprobe does it: the lookup chain
// (configuration aliases, modules.dep names, symbol: aliases, install/remove commands,
// modules.alias, builtin names, builtin aliases; the first source with a match wins), the
// blacklist on what an alias resolved to, and for each matched module kmod's probe list
// (dependencies first, softdep pre:/post: of the module and of each dependency, options,
// install commands). Pure: reads only the ModuleIndex it is given.
#ifndef HOTRING_HOTPLUG_MODULES_KMOD_RESOLVER_H_
#define HOTRING_HOTPLUG_MODULES_KMOD_RESOLVER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "hotplug/modules/load_plan.h"
#include "hotplug/modules/module_index.h"

namespace hotring::hotplug::modules {

// One line of a probe list, as `modprobe --show-depends` would act on it.
struct ProbeStep {
  enum class Action { kInsmod, kInstall, kBuiltin, kNothing };
  Action action = Action::kNothing;  // kNothing: a name with no file, not builtin
  std::string name;
  std::string path;     // kInsmod
  std::string command;  // kInstall: the configured command, $CMDLINE_OPTS not yet replaced
  std::string options;  // exactly what kmod passes (may end in a space)
  // Names of earlier steps of the same probe that this one must follow.
  std::vector<std::string> needs;
  // The module asked for or one of its dependencies: kmod fails the probe when its load
  // fails, and ignores failures of softdeps.
  bool required = false;
};

// The probe of one module the query resolved to.
struct Probe {
  std::string name;              // the module's name (what `modprobe -R` prints)
  bool from_alias = false;       // resolved through an alias (the blacklist applies)
  bool blacklisted = false;      // skipped: nothing to do
  std::vector<ProbeStep> steps;  // kmod's order, duplicates kept
};

// Everything one query resolved to; empty probes: not found.
struct Resolution {
  std::vector<Probe> probes;
};

struct ProbeOptions {
  // modprobe -b: the blacklist applies to every module the query resolved to, names too.
  bool blacklist_all = false;
  // modprobe NAME PARAM=VALUE...: extra options for the matched module itself.
  std::optional<std::string> extra_options;
  // modprobe -i: the matched module's own install command and softdeps are not used (its
  // dependencies keep theirs, as in kmod).
  bool ignore_install = false;
};

// kmod's modprobe resolution over one ModuleIndex. Thread-safe; the negative cache (queries
// that matched nothing, bounded) is the only mutable state.
class KmodResolver final : public Resolver {
 public:
  explicit KmodResolver(std::shared_ptr<const ModuleIndex> index);
  ~KmodResolver() override;

  // `alias_lookup` true applies the blacklist to every module matched (modprobe -b, udev's
  // rule for MODALIAS); false applies it as plain `modprobe` does, only to modules matched
  // through an alias.
  [[nodiscard]] absl::StatusOr<LoadPlan> Resolve(absl::string_view name_or_alias,
                                                 bool alias_lookup) const override;

  // The full probe lists, for `modprobe --show-depends`, `-R` and `-n`.
  [[nodiscard]] Resolution Probe(absl::string_view name_or_alias,
                                 const ProbeOptions& options) const;

  // The modules a query resolves to (modprobe -R), blacklist not applied, duplicates kept.
  [[nodiscard]] std::vector<std::string> Lookup(absl::string_view name_or_alias) const;

  // Queries answered from the negative cache so far.
  [[nodiscard]] uint64_t negative_cache_hits() const;

  const ModuleIndex& index() const { return *index_; }

  struct Compiled;
  struct ModRef;

 private:
  [[nodiscard]] std::vector<ModRef> LookupRefs(absl::string_view query) const;

  std::shared_ptr<const ModuleIndex> index_;
  std::unique_ptr<Compiled> compiled_;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_set<std::string> unmatched_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t negative_hits_ ABSL_GUARDED_BY(mu_) = 0;
};

// kmod's --show-depends lines for a resolution ("insmod PATH OPTS", "install CMD OPTS",
// "builtin NAME"), each ending in '\n'.
[[nodiscard]] std::string FormatShowDepends(const Resolution& resolution);

// The load plan of a resolution: modules deduplicated by name in kmod's order, `needs` edges
// that point only backwards (so the graph has no cycle), $CMDLINE_OPTS replaced in install
// commands.
[[nodiscard]] LoadPlan PlanFromResolution(absl::string_view query, const Resolution& resolution);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_KMOD_RESOLVER_H_

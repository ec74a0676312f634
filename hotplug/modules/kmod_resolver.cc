#include "hotplug/modules/kmod_resolver.h"

#include <fnmatch.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace hotring::hotplug::modules {
namespace {

// Far more than the distinct MODALIAS strings of any machine.
constexpr size_t kMaxUnmatchedCached = 16384;

bool IsGlob(absl::string_view pattern) {
  return pattern.find_first_of("*?[\\") != absl::string_view::npos;
}

bool FnMatch(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}


std::string JoinPath(const std::string& dir, absl::string_view path) {
  if (absl::StartsWith(path, "/")) return std::string(path);
  return absl::StrCat(dir, "/", path);
}

// Lines keyed by a module pattern where the first matching line wins: literal patterns are
// found by hash, only glob patterns are fnmatch'ed.
class FirstMatch {
 public:
  void Add(const std::string& pattern, size_t index) {
    if (IsGlob(pattern)) {
      globs_.emplace_back(index, pattern);
    } else {
      literal_.try_emplace(pattern, index);
    }
  }
  [[nodiscard]] std::optional<size_t> Find(const std::string& name) const {
    std::optional<size_t> best;
    if (auto it = literal_.find(name); it != literal_.end()) best = it->second;
    for (const auto& [index, pattern] : globs_) {
      if (best && index > *best) break;
      if (FnMatch(pattern, name)) return index;
    }
    return best;
  }

 private:
  absl::flat_hash_map<std::string, size_t> literal_;
  std::vector<std::pair<size_t, std::string>> globs_;  // in line order
};

}  // namespace

// What the configuration is asked per module, precomputed.
struct KmodResolver::Compiled {
  absl::flat_hash_set<std::string> blacklist;
  absl::flat_hash_map<std::string, std::vector<size_t>> options;  // name or alias -> lines
  FirstMatch install;
  FirstMatch softdep;
  absl::flat_hash_map<std::string, size_t> install_exact;  // for the commands lookup
  absl::flat_hash_map<std::string, size_t> remove_exact;
};

// One kmod module object: `alias` set when it was created from an alias (then options of the
// alias apply and it is a different object from the plain name).
struct KmodResolver::ModRef {
  enum class Builtin { kUnknown, kYes, kNo };
  std::string name;
  std::optional<std::string> alias;
  Builtin builtin = Builtin::kUnknown;
  std::optional<std::string> install;  // set by the install-commands lookup
  std::optional<absl::string_view> path;  // from a dependency line (in the mapped index)

  std::string Key() const { return alias ? absl::StrCat(name, "\\", *alias) : name; }
};

namespace {

using ModRef = KmodResolver::ModRef;

// Builds one probe list (kmod's __kmod_module_get_probe_list and fill_softdep).
class ProbeBuilder {
 public:
  ProbeBuilder(const ModuleIndex& index, const KmodResolver::Compiled& compiled,
               const std::function<std::vector<ModRef>(absl::string_view)>& lookup)
      : index_(index), compiled_(compiled), lookup_(lookup) {}

  struct Entry {
    ModRef ref;
    bool ignore_command = false;  // the module has softdeps that resolved
  };

  // `ignore_command` (modprobe -i, for the module asked for only): kmod then lists the module
  // without its softdeps and loads its file even when an install command is configured.
  void Visit(const ModRef& mod, bool ignore_command = false) {
    if (!visited_.insert(mod.Key()).second) return;
    std::vector<ModRef> deps = Dependencies(mod.name);
    for (const ModRef& dep : deps) FillSoftdep(dep);
    for (const ModRef& dep : deps) AddEdge(mod.name, dep.name);
    // modules.dep lists every module's whole closure, so kmod's probe list needs only the top
    // module's line. A loader that starts modules in parallel also needs each dependency's own
    // line: core_util must wait for crc even when both are only dependencies of foo_net.
    for (const ModRef& dep : deps) {
      for (const ModRef& sub : Dependencies(dep.name)) AddEdge(dep.name, sub.name);
    }
    if (ignore_command) {
      entries_.push_back({mod, true});
      return;
    }
    FillSoftdep(mod);
  }

  std::vector<Entry>& entries() { return entries_; }
  // (module, what it needs) pairs; few per probe, so a vector.
  const std::vector<std::pair<std::string, std::string>>& edges() const { return edges_; }

  // modules.dep: the module's path and its dependencies in load order (the line lists them
  // the other way round).
  std::optional<absl::string_view> DepLine(const std::string& name) const {
    if (!index_.dep()) return std::nullopt;
    return index_.dep()->Find(name);
  }

  std::vector<ModRef> Dependencies(const std::string& name) const {
    std::vector<ModRef> deps;
    const std::optional<absl::string_view> line = DepLine(name);
    if (!line) return deps;
    const size_t colon = line->find(':');
    if (colon == absl::string_view::npos) return deps;
    absl::string_view rest = line->substr(colon + 1);
    while (!rest.empty()) {
      const size_t start = rest.find_first_not_of(" \t");
      if (start == absl::string_view::npos) break;
      rest.remove_prefix(start);
      const size_t end = std::min(rest.find_first_of(" \t"), rest.size());
      const absl::string_view path = rest.substr(0, end);
      rest.remove_prefix(end);
      ModRef dep;
      dep.name = ModnameOfPath(path);
      // A path whose file name starts with '.' ("kernel/fs/.ko") names no module: nothing can
      // be ordered after it or loaded by name. A corrupt modules.dep; skip the entry.
      if (dep.name.empty()) continue;
      dep.builtin = ModRef::Builtin::kNo;
      dep.path = path;
      deps.push_back(std::move(dep));
    }
    std::reverse(deps.begin(), deps.end());
    return deps;
  }

 private:
  void AddEdge(const std::string& from, const std::string& to) { edges_.emplace_back(from, to); }

  void FillSoftdep(const ModRef& mod) {
    std::vector<ModRef> pre;
    std::vector<ModRef> post;
    if (std::optional<size_t> line = compiled_.softdep.Find(mod.name)) {
      const ModprobeConfig::Softdep& softdep = index_.config().softdeps[*line];
      for (const std::string& name : softdep.pre) {
        for (ModRef& ref : lookup_(name)) pre.push_back(std::move(ref));
      }
      for (const std::string& name : softdep.post) {
        for (ModRef& ref : lookup_(name)) post.push_back(std::move(ref));
      }
    }
    for (const ModRef& ref : pre) {
      Visit(ref);
      AddEdge(mod.name, ref.name);
    }
    entries_.push_back({mod, !pre.empty() || !post.empty()});
    for (const ModRef& ref : post) {
      Visit(ref);
      AddEdge(ref.name, mod.name);
    }
  }

  const ModuleIndex& index_;
  const KmodResolver::Compiled& compiled_;
  const std::function<std::vector<ModRef>(absl::string_view)>& lookup_;
  absl::flat_hash_set<std::string> visited_;
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, std::string>> edges_;
};

}  // namespace

KmodResolver::KmodResolver(std::shared_ptr<const ModuleIndex> index)
    : index_(std::move(index)), compiled_(std::make_unique<Compiled>()) {
  const ModprobeConfig& config = index_->config();
  for (const std::string& name : config.blacklist) compiled_->blacklist.insert(name);
  for (size_t i = 0; i < config.options.size(); ++i) {
    compiled_->options[config.options[i].module].push_back(i);
  }
  for (size_t i = 0; i < config.install.size(); ++i) {
    compiled_->install.Add(config.install[i].module, i);
    compiled_->install_exact.try_emplace(config.install[i].module, i);
  }
  for (size_t i = 0; i < config.remove.size(); ++i) {
    compiled_->remove_exact.try_emplace(config.remove[i].module, i);
  }
  for (size_t i = 0; i < config.softdeps.size(); ++i) {
    compiled_->softdep.Add(config.softdeps[i].pattern, i);
  }
}

KmodResolver::~KmodResolver() = default;

uint64_t KmodResolver::negative_cache_hits() const {
  absl::MutexLock lock(&mu_);
  return negative_hits_;
}

std::vector<KmodResolver::ModRef> KmodResolver::LookupRefs(absl::string_view given) const {
  std::vector<ModRef> refs;
  std::string query(given.substr(0, given.find('\0')));
  if (!NormaliseName(&query)) return refs;
  const ModuleIndex& index = *index_;
  const ModprobeConfig& config = index.config();

  // 1. Configuration aliases: every matching line.
  for (const ModprobeConfig::Alias& alias : config.aliases) {
    if (std::string name = Modname(alias.module); FnMatch(alias.pattern, query) && !name.empty()) {
      refs.push_back({.name = std::move(name), .alias = alias.pattern});
    }
  }
  if (!refs.empty()) return refs;
  // 2. A module of that name (module names have no ':').
  if (query.find(':') == std::string::npos && index.dep() && index.dep()->Find(query)) {
    refs.push_back({.name = ModnameOfPath(query)});
    return refs;
  }
  // 3. symbol:NAME.
  std::vector<IndexValue> values;
  if (absl::StartsWith(query, "symbol:") && index.symbols()) {
    index.symbols()->SearchWild(query, &values);
    for (const IndexValue& v : values) {
      if (std::string name = Modname(v.value); !name.empty()) {
        refs.push_back({.name = std::move(name), .alias = query});
      }
    }
    if (!refs.empty()) return refs;
  }
  // 4. An install command (else a remove command) for exactly this name.
  if (auto it = compiled_->install_exact.find(query); it != compiled_->install_exact.end()) {
    refs.push_back({.name = ModnameOfPath(query), .install = config.install[it->second].command});
    return refs;
  }
  if (compiled_->remove_exact.contains(query)) {
    refs.push_back({.name = ModnameOfPath(query)});
    return refs;
  }
  // 5. modules.alias.
  if (index.alias()) {
    values.clear();
    index.alias()->SearchWild(query, &values);
    for (const IndexValue& v : values) {
      if (std::string name = Modname(v.value); !name.empty()) {
        refs.push_back({.name = std::move(name), .alias = query});
      }
    }
    if (!refs.empty()) return refs;
  }
  // 6. A builtin module of that name, 7. a builtin module's alias.
  if (index.builtin() && index.builtin()->Find(query)) {
    refs.push_back({.name = ModnameOfPath(query), .builtin = ModRef::Builtin::kYes});
    return refs;
  }
  if (index.builtin_alias()) {
    values.clear();
    index.builtin_alias()->SearchWild(query, &values);
    for (const IndexValue& v : values) {
      if (std::string name = Modname(v.value); !name.empty()) {
        refs.push_back({.name = std::move(name), .alias = query, .builtin = ModRef::Builtin::kYes});
      }
    }
  }
  return refs;
}

std::vector<std::string> KmodResolver::Lookup(absl::string_view name_or_alias) const {
  std::vector<std::string> names;
  for (ModRef& ref : LookupRefs(name_or_alias)) names.push_back(std::move(ref.name));
  return names;
}

Resolution KmodResolver::Probe(absl::string_view name_or_alias,
                               const ProbeOptions& options) const {
  Resolution resolution;
  const std::string key(name_or_alias);
  {
    absl::MutexLock lock(&mu_);
    if (unmatched_.contains(key)) {
      ++negative_hits_;
      return resolution;
    }
  }
  const std::vector<ModRef> matched = LookupRefs(name_or_alias);
  if (matched.empty()) {
    absl::MutexLock lock(&mu_);
    // Bounded: distinct strings from a misbehaving sender must not grow it forever.
    if (unmatched_.size() >= kMaxUnmatchedCached) unmatched_.clear();
    unmatched_.insert(key);
    return resolution;
  }
  const ModuleIndex& index = *index_;
  const ModprobeConfig& config = index.config();
  const std::function<std::vector<ModRef>(absl::string_view)> lookup =
      [this](absl::string_view name) { return LookupRefs(name); };

  for (const ModRef& mod : matched) {
    ::hotring::hotplug::modules::Probe probe;
    probe.name = mod.name;
    probe.from_alias = mod.alias.has_value();
    if ((probe.from_alias || options.blacklist_all) && compiled_->blacklist.contains(mod.name)) {
      probe.blacklisted = true;
      resolution.probes.push_back(std::move(probe));
      continue;
    }
    ProbeBuilder builder(index, *compiled_, lookup);
    builder.Visit(mod, options.ignore_install);
    const std::string top_key = mod.Key();
    std::vector<std::string> required = {top_key};
    for (const ModRef& dep : builder.Dependencies(mod.name)) required.push_back(dep.Key());
    std::vector<absl::string_view> earlier;  // names of the steps so far
    for (const ProbeBuilder::Entry& entry : builder.entries()) {
      const ModRef& ref = entry.ref;
      ProbeStep step;
      step.name = ref.name;
      step.required = std::find(required.begin(), required.end(), ref.Key()) != required.end();
      // Options: every line for the module's name or for the alias it was created from.
      std::optional<std::string> module_options;
      static const std::vector<size_t> kNone;
      auto lines_of = [&](const std::string& name) -> const std::vector<size_t>& {
        auto it = compiled_->options.find(name);
        return it == compiled_->options.end() ? kNone : it->second;
      };
      std::vector<size_t> merged;
      const std::vector<size_t>* lines = &lines_of(ref.name);
      if (ref.alias && *ref.alias != ref.name) {
        const std::vector<size_t>& alias_lines = lines_of(*ref.alias);
        if (!alias_lines.empty()) {
          merged = *lines;
          merged.insert(merged.end(), alias_lines.begin(), alias_lines.end());
          std::sort(merged.begin(), merged.end());
          lines = &merged;
        }
      }
      for (const size_t line : *lines) {
        const std::string& text = config.options[line].options;
        if (text.empty()) continue;
        if (module_options) {
          absl::StrAppend(&*module_options, " ", text);
        } else {
          module_options = text;
        }
      }
      const bool top = ref.Key() == top_key;
      if (module_options) {
        step.options = absl::StrCat(*module_options, " ",
                                    top && options.extra_options ? *options.extra_options : "");
      } else if (top && options.extra_options) {
        step.options = *options.extra_options;
      }
      std::optional<std::string> command = ref.install;
      if (!command) {
        if (std::optional<size_t> line = compiled_->install.Find(ref.name)) {
          command = config.install[*line].command;
        }
      }
      std::optional<absl::string_view> relative = ref.path;
      if (!relative) {
        if (std::optional<absl::string_view> line = builder.DepLine(ref.name)) {
          const size_t colon = line->find(':');
          if (colon != absl::string_view::npos) relative = line->substr(0, colon);
        }
      }
      std::optional<std::string> path;
      if (relative) path = JoinPath(index.modules_dir(), *relative);
      if (command && !entry.ignore_command) {
        step.action = ProbeStep::Action::kInstall;
        step.command = *command;
      } else if (path) {
        step.action = ProbeStep::Action::kInsmod;
        step.path = *path;
      } else if (ref.builtin == ModRef::Builtin::kYes ||
                 (ref.builtin == ModRef::Builtin::kUnknown && index.builtin() &&
                  index.builtin()->Find(ref.name))) {
        step.action = ProbeStep::Action::kBuiltin;
      }
      for (const auto& [from, need] : builder.edges()) {
        if (from != ref.name || need == ref.name) continue;
        if (std::find(earlier.begin(), earlier.end(), need) != earlier.end() &&
            std::find(step.needs.begin(), step.needs.end(), need) == step.needs.end()) {
          step.needs.push_back(need);
        }
      }
      earlier.push_back(ref.name);
      probe.steps.push_back(std::move(step));
    }
    resolution.probes.push_back(std::move(probe));
  }
  return resolution;
}

absl::StatusOr<LoadPlan> KmodResolver::Resolve(absl::string_view name_or_alias,
                                               bool alias_lookup) const {
  return PlanFromResolution(name_or_alias, Probe(name_or_alias, {.blacklist_all = alias_lookup}));
}

std::string FormatShowDepends(const Resolution& resolution) {
  std::string out;
  for (const Probe& probe : resolution.probes) {
    if (probe.blacklisted) continue;
    for (const ProbeStep& step : probe.steps) {
      switch (step.action) {
        case ProbeStep::Action::kInsmod:
          absl::StrAppend(&out, "insmod ", step.path, " ", step.options, "\n");
          break;
        case ProbeStep::Action::kInstall:
          absl::StrAppend(&out, "install ", step.command, " ", step.options, "\n");
          break;
        case ProbeStep::Action::kBuiltin:
          absl::StrAppend(&out, "builtin ", step.name, "\n");
          break;
        case ProbeStep::Action::kNothing:
          break;
      }
    }
  }
  return out;
}

LoadPlan PlanFromResolution(absl::string_view query, const Resolution& resolution) {
  LoadPlan plan;
  plan.query = std::string(query);
  // Plans hold a handful of modules: positions by linear search.
  auto position = [&](absl::string_view name) -> size_t {
    for (size_t i = 0; i < plan.modules.size(); ++i) {
      if (plan.modules[i].name == name) return i;
    }
    return plan.modules.size();
  };
  bool any_probe = false;
  for (const Probe& probe : resolution.probes) {
    if (probe.blacklisted) continue;
    any_probe = true;
    if (std::find(plan.matched.begin(), plan.matched.end(), probe.name) == plan.matched.end()) {
      plan.matched.push_back(probe.name);
    }
    for (const ProbeStep& step : probe.steps) {
      const size_t at = position(step.name);
      if (at == plan.modules.size()) {
        ModuleToLoad module;
        module.name = step.name;
        module.options = step.options;
        switch (step.action) {
          case ProbeStep::Action::kInsmod:
            module.path = step.path;
            break;
          case ProbeStep::Action::kInstall:
            module.install_command =
                absl::StrReplaceAll(step.command, {{"$CMDLINE_OPTS", step.options}});
            break;
          case ProbeStep::Action::kBuiltin:
            module.builtin = true;
            break;
          case ProbeStep::Action::kNothing:
            break;
        }
        module.required = step.required;
        plan.modules.push_back(std::move(module));
      }
      ModuleToLoad& module = plan.modules[at];
      module.required |= step.required;
      if (std::find(module.wanted_by.begin(), module.wanted_by.end(), probe.name) == module.wanted_by.end()) {
        module.wanted_by.push_back(probe.name);
      }
      for (const std::string& need : step.needs) {
        if (position(need) >= at) continue;
        if (std::find(module.needs.begin(), module.needs.end(), need) == module.needs.end()) {
          module.needs.push_back(need);
        }
      }
    }
  }
  plan.blacklisted = !resolution.probes.empty() && !any_probe;
  return plan;
}

}  // namespace hotring::hotplug::modules

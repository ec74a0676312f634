#include "hotplug/coldplug/trigger.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/dir_names.h"
#include "core/flags.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/coldplug/trigger_needed.h"
#include "hotplug/devroot/user_db.h"
#include "hotplug/modules/bus_controller.h"
#include "hotplug/modules/kmod_resolver.h"
#include "hotplug/modules/module_index.h"
#include "hotplug/rules/rule_set.h"

namespace hotring::hotplug {
namespace {

// The actions the kernel accepts in a uevent file (lib/kobject_uevent.c kobject_actions).
constexpr absl::string_view kActions[] = {"add",     "remove", "change", "move",
                                          "online",  "offline", "bind",  "unbind"};

// Redraw the progress line every this many writes (a terminal redraw per device would cost
// more than the write itself).
constexpr size_t kProgressEvery = 64;

absl::Status BadArgument(absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("trigger: ", message));
}

bool IsAction(absl::string_view action) {
  for (const absl::string_view known : kActions) {
    if (action == known) return true;
  }
  return false;
}

// Writes `action` into the uevent file at `path`; returns 0 or the errno.
int WriteAction(const std::string& path, absl::string_view action) {
  // O_TRUNC so a fake tree of regular files reads back exactly the action; sysfs ignores it.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd.valid()) return errno;
  for (;;) {
    const ssize_t n = ::write(fd.get(), action.data(), action.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    // sysfs takes a store in one call; anything shorter did not trigger.
    if (static_cast<size_t>(n) != action.size()) return EIO;
    return 0;
  }
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// --drivers-first: the devices under bus/*/devices/ with a `modalias` and no `driver` link,
// as DEVPATHs (symlinks resolved, relative to the resolved root), fewest path components
// first. A light pass (directory entries, one lstat per device, the modalias file read only
// for those without a driver, realpath only for the few it keeps), so the first write does not
// wait for the whole walk of every object.
struct Unbound {
  std::string devpath;
  std::string uevent;  // the file to write
  bool enumerating_bus = false;  // a USB or SD host controller (modules/bus_controller.h)
};
std::vector<Unbound> UnboundDevices(const std::string& sysfs_root) {
  std::vector<Unbound> found;
  char resolved_root[PATH_MAX];
  if (::realpath(sysfs_root.c_str(), resolved_root) == nullptr) return found;
  const absl::string_view root(resolved_root);
  for (const std::string& bus : SortedDirNames(absl::StrCat(sysfs_root, "/bus"))) {
    const std::string devices = absl::StrCat(sysfs_root, "/bus/", bus, "/devices");
    for (const std::string& name : SortedDirNames(devices)) {
      const std::string dir = absl::StrCat(devices, "/", name);
      if (Exists(dir + "/driver")) continue;
      // Opened once: no file, no candidate; its text says whether it is a bus controller.
      std::ifstream in(dir + "/modalias");
      if (!in) continue;
      std::string modalias;
      std::getline(in, modalias);
      char real[PATH_MAX];
      if (::realpath(dir.c_str(), real) == nullptr) continue;
      absl::string_view devpath(real);
      if (!absl::ConsumePrefix(&devpath, root) || !absl::StartsWith(devpath, "/")) continue;
      found.push_back(Unbound{std::string(devpath), dir + "/uevent",
                              modules::IsEnumeratingBusController(modalias)});
    }
  }
  // USB and SD host controllers first: their devices are found only after their driver has
  // bound, by an enumeration that mostly waits on timers (modules/bus_controller.h); the
  // sooner it starts, the more of it overlaps the other loads. Then shallow first: a
  // controller (a PCI function at depth 2) is what a driver binds to before the devices below
  // it can appear and want theirs; deep ACPI namespace objects rarely match a module. Ties
  // keep the bus order.
  std::stable_sort(found.begin(), found.end(), [](const Unbound& a, const Unbound& b) {
    if (a.enumerating_bus != b.enumerating_bus) return a.enumerating_bus;
    return std::count(a.devpath.begin(), a.devpath.end(), '/') <
           std::count(b.devpath.begin(), b.devpath.end(), '/');
  });
  return found;
}

}  // namespace

namespace {

// What a parse fills: the options, and what the checks across flags need after it.
struct TriggerArgs {
  TriggerOptions options;
  bool timeout_given = false;
  bool action_given = false;
  bool type_subsystems = false;
  std::vector<std::string> needed_only;  // flags that mean something only with --needed
};

// A value that must not be empty, handed to `store`.
std::function<absl::Status(absl::string_view)> NonEmpty(
    std::function<absl::Status(const std::string&)> store) {
  return [store = std::move(store)](absl::string_view v) {
    if (v.empty()) return absl::InvalidArgumentError("needs a non-empty value");
    return store(std::string(v));
  };
}

// udevadm trigger's options (and short forms), in the order the usage lists them.
void DeclareTriggerFlags(FlagSet& flags, TriggerArgs& a) {
  TriggerOptions& o = a.options;
  auto append = [](std::vector<std::string>* dest) {
    return NonEmpty([dest](const std::string& v) {
      dest->push_back(v);
      return absl::OkStatus();
    });
  };
  flags
      .Value("--sysfs-root", "DIR", "sysfs to walk (default /sys)",
             NonEmpty([&o](const std::string& v) {
               o.sysfs_root = v;
               return absl::OkStatus();
             }))
      .Value("--action|-c", "ACTION",
             "add, remove, change (default), move, online, offline, bind, unbind",
             NonEmpty([&a](const std::string& v) {
               if (!IsAction(v)) {
                 return absl::InvalidArgumentError(absl::StrCat(
                     "unknown action '", v, "' (one of: ", absl::StrJoin(kActions, ", "), ")"));
               }
               a.options.action = v;
               a.action_given = true;
               return absl::OkStatus();
             }))
      .Value("--type|-t", "TYPE", "all (default), devices or subsystems",
             NonEmpty([&a](const std::string& v) {
               SysfsFilter& filter = a.options.filter;
               if (v == "all") {
                 filter.subsystems = filter.devices = true;
               } else if (v == "devices") {
                 filter.subsystems = false;
                 filter.devices = true;
               } else if (v == "subsystems") {
                 filter.subsystems = true;
                 filter.devices = false;
                 a.type_subsystems = true;
               } else {
                 return absl::InvalidArgumentError(
                     absl::StrCat("unknown type '", v, "' (one of: all, devices, subsystems)"));
               }
               return absl::OkStatus();
             }))
      .Value("--subsystem-match|-s", "GLOB", "only these subsystems (repeatable)",
             append(&o.filter.subsystem_match))
      .Value("--subsystem-nomatch|-S", "GLOB", "not these subsystems (repeatable)",
             append(&o.filter.subsystem_nomatch))
      .Value("--sysname-match|-y", "GLOB", "only objects whose name matches (repeatable)",
             append(&o.filter.sysname_match))
      .Value("--attr-match|-a", "ATTR[=GLOB]", "only objects with this attribute (and value)",
             NonEmpty([&o](const std::string& v) {
               SysfsFilter::Attribute attribute;
               const size_t eq = v.find('=');
               attribute.name = v.substr(0, eq);
               if (eq != std::string::npos) attribute.value = v.substr(eq + 1);
               if (attribute.name.empty() || absl::StartsWith(attribute.name, "/") ||
                   attribute.name == ".." || absl::StartsWith(attribute.name, "../") ||
                   absl::StrContains(attribute.name, "/../") ||
                   absl::EndsWith(attribute.name, "/..")) {
                 return absl::InvalidArgumentError(absl::StrCat(
                     "bad value '", v, "': want ATTR or ATTR=GLOB, ATTR inside the object"));
               }
               o.filter.attr_match.push_back(std::move(attribute));
               return absl::OkStatus();
             }))
      .Bool("--drivers-first", &o.drivers_first,
            "first the devices with a modalias and no driver (their module loads start sooner), "
            "then the rest")
      .Bool("--dry-run|-n", &o.dry_run, "print what would be written, write nothing")
      .Bool("--verbose|-v", &o.verbose, "print each uevent file as it is written")
      .Bool("--settle|-w", &o.settle, "then wait until the daemon has handled everything")
      .Value("--timeout", "SECONDS", "with --settle: give up after this long (default 120)",
             NonEmpty([&a](const std::string& v) {
               absl::StatusOr<absl::Duration> timeout = FlagSet::ParseSeconds(v);
               if (!timeout.ok()) return timeout.status();
               a.options.settle_timeout = *timeout;
               a.timeout_given = true;
               return absl::OkStatus();
             }))
      .Value("--socket", "PATH|@NAME",
             "with --settle: the daemon's control socket (default /run/hotring/control)",
             NonEmpty([&o](const std::string& v) {
               o.socket = v;
               return absl::OkStatus();
             }))
      .Bool("--needed", &o.needed,
            "replay `add` only for devices that mdev.conf rules act on or whose MODALIAS module "
            "is not loaded, and their parents (devices only); with -n: print why")
      .Value("--config", "FILE",
             "with --needed: the rules (default /etc/mdev.conf, then FILE.d/*.conf; missing: "
             "busybox's default)",
             NonEmpty([&a](const std::string& v) {
               a.options.config = v;
               a.needed_only.push_back("--config");
               return absl::OkStatus();
             }))
      .Value("--modules-root", "DIR",
             "with --needed: DIR/lib/modules and DIR's modprobe.d (default /)",
             NonEmpty([&a](const std::string& v) {
               a.options.modules_root = v == "/" ? "" : v;
               a.needed_only.push_back("--modules-root");
               return absl::OkStatus();
             }))
      .Value("--kernel-version", "V", "with --needed: DIR/lib/modules/V (default: running)",
             NonEmpty([&a](const std::string& v) {
               if (v.find('/') != std::string::npos) {
                 return absl::InvalidArgumentError(absl::StrCat("bad value '", v, "'"));
               }
               a.options.kernel_version = v;
               a.needed_only.push_back("--kernel-version");
               return absl::OkStatus();
             }))
      .Text("  --help, -h                 this text");
}

constexpr absl::string_view kTriggerSynopsis =
    "usage: hotring trigger [options]\n"
    "Writes ACTION into each sysfs object's uevent file so the kernel re-sends its uevent\n"
    "(subsystems first, then devices, parents before children).\n\n";

}  // namespace

std::string TriggerUsage() {
  TriggerArgs unused;
  FlagSet flags("trigger", kTriggerSynopsis);
  DeclareTriggerFlags(flags, unused);
  return flags.Usage();
}

absl::StatusOr<std::optional<TriggerOptions>> ParseTriggerArgs(
    const std::vector<std::string>& args, std::FILE* help_out) {
  TriggerArgs a;
  FlagSet flags("trigger", kTriggerSynopsis);
  DeclareTriggerFlags(flags, a);
  HOTRING_ASSIGN_OR_RETURN(const FlagsParsed parsed, flags.Parse(args, help_out));
  if (parsed == FlagsParsed::kHelpShown) return std::nullopt;
  TriggerOptions& options = a.options;
  if (a.timeout_given && !options.settle) return BadArgument("--timeout needs --settle");
  if (!options.needed && !a.needed_only.empty()) {
    return BadArgument(absl::StrCat(a.needed_only.front(), " needs --needed"));
  }
  if (options.needed) {
    // What a replay of a needed device is: the add its rules and modules act on.
    if (a.action_given && options.action != "add") {
      return BadArgument(absl::StrCat("--needed replays add events, not '", options.action, "'"));
    }
    if (a.type_subsystems) {
      return BadArgument("--needed selects devices; --type subsystems has none");
    }
    options.action = "add";
    options.filter.subsystems = false;
    options.filter.devices = true;
  }
  return std::move(options);
}

namespace {

std::string NormalisedModuleName(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

// The modules the kernel has: every directory of SYSFS/module (loaded modules, and built-in
// ones with parameters), and on the real /sys also /proc/modules. A fake sysfs root stands
// for another machine, whose /proc is not ours.
absl::flat_hash_set<std::string> LoadedModules(const std::string& sysfs_root) {
  absl::flat_hash_set<std::string> loaded;
  const std::string dir_path = absl::StrCat(sysfs_root, "/module");
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(dir_path.c_str()), ::closedir);
  if (dir != nullptr) {
    while (const dirent* entry = ::readdir(dir.get())) {
      const absl::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      loaded.insert(NormalisedModuleName(name));
    }
  }
  if (sysfs_root == kDefaultSysfsRoot) {
    std::ifstream proc("/proc/modules");
    std::string line;
    while (std::getline(proc, line)) {
      const std::string name = line.substr(0, line.find(' '));
      if (!name.empty()) loaded.insert(NormalisedModuleName(name));
    }
  }
  return loaded;
}

// What --needed decides with: the rules, the module resolver and the loaded modules.
struct NeededContext {
  rules::RuleSet rules;
  std::unique_ptr<modules::KmodResolver> resolver;  // null: no module index
  absl::flat_hash_set<std::string> loaded;
};

// The rules side of --needed's decision (users, mdev.conf): what can fail, so it is loaded
// before anything is written.
absl::StatusOr<NeededContext> LoadNeededContext(const TriggerOptions& options) {
  NeededContext context;
  absl::StatusOr<devroot::UserDb> users = devroot::UserDb::Load("/");
  if (!users.ok()) return users.status();
  absl::StatusOr<rules::RuleSet> rules = rules::LoadRules({.file = options.config}, *users);
  if (!rules.ok()) return rules.status();
  context.rules = std::move(*rules);
  return context;
}

// The module side of the decision: the index and what is loaded. No error: without a module
// tree (everything built in) no missing module could be loaded.
void LoadModuleFacts(const TriggerOptions& options, const TriggerEnvironment& env,
                     NeededContext& context) {
  modules::ModuleIndexOptions index_options;
  index_options.modules_dir =
      options.kernel_version.empty()
          ? modules::DefaultModulesDir(options.modules_root)
          : absl::StrCat(options.modules_root, "/lib/modules/", options.kernel_version);
  index_options.config_paths = modules::DefaultConfigPaths(options.modules_root);
  absl::StatusOr<std::unique_ptr<modules::ModuleIndex>> index =
      modules::ModuleIndex::Load(index_options);
  if (index.ok()) {
    context.resolver = std::make_unique<modules::KmodResolver>(
        std::shared_ptr<const modules::ModuleIndex>(std::move(*index)));
  } else {
    // No module tree (everything built in): no module can be missing that could be loaded.
    std::fprintf(env.err, "hotring trigger: no module index in %s (%s): MODALIAS not considered\n",
                 index_options.modules_dir.c_str(),
                 std::string(index.status().message()).c_str());
  }
  context.loaded = LoadedModules(options.sysfs_root);
}

// --needed: keeps the entries worth replaying, in scan order, each with the dry-run line that
// says why. Devices whose uevent cannot be read are counted as failed or vanished.
std::vector<std::pair<SysfsEntry, std::string>> PickNeeded(
    const TriggerOptions& options, const TriggerEnvironment& env, const NeededContext& context,
    std::vector<SysfsEntry> entries, const absl::flat_hash_set<std::string>& written_first,
    TriggerReport& report) {
  const ModuleFacts facts{context.resolver.get(), &context.loaded};
  std::vector<std::string> devpaths;
  std::vector<NeedDecision> decisions;
  std::vector<SysfsEntry> readable;
  devpaths.reserve(entries.size());
  decisions.reserve(entries.size());
  size_t written = 0;
  for (SysfsEntry& entry : entries) {
    // Written by the drivers-first pass already (needed or not: a device waiting for a driver
    // always goes first); neither read nor picked again.
    if (written_first.contains(entry.devpath)) {
      ++written;
      continue;
    }
    absl::StatusOr<Event> event =
        ReadUeventFile(options.sysfs_root, entry, "add", EventSource::kResync);
    if (!event.ok()) {
      if (absl::IsNotFound(event.status())) {
        ++report.vanished;
      } else {
        std::fprintf(env.err, "hotring trigger: cannot read %s: %s\n",
                     UeventPath(options.sysfs_root, entry).c_str(),
                     std::string(event.status().message()).c_str());
        ++report.failed;
        ++report.failure_reasons["unreadable"];
      }
      continue;
    }
    devpaths.push_back(entry.devpath);
    NeedDecision decision = DecideNeeded(context.rules, *event, facts);
    if (!decision.needed() && options.needed_keeps_waitable) {
      if (!event->devname.empty()) {
        decision.reasons.push_back("a node (settle --for may wait for it)");
      } else if (event->subsystem == "net") {
        decision.reasons.push_back("a network interface (settle --for may wait for it)");
      }
    }
    decisions.push_back(std::move(decision));
    readable.push_back(std::move(entry));
  }
  report.devices_considered = readable.size() + written;
  std::vector<std::pair<SysfsEntry, std::string>> picked;
  for (const NeededDevice& device : SelectNeeded(devpaths, decisions)) {
    picked.emplace_back(std::move(readable[device.index]),
                        FormatNeeded(devpaths[device.index], device));
  }
  report.devices_needed = picked.size();
  report.devices_first = written;
  return picked;
}

}  // namespace

absl::StatusOr<TriggerReport> Trigger(const TriggerOptions& options,
                                      const TriggerEnvironment& env) {
  std::optional<NeededContext> needed;
  if (options.needed) {
    absl::StatusOr<NeededContext> context = LoadNeededContext(options);
    if (!context.ok()) return context.status();
    needed = std::move(*context);
  }
  TriggerReport report;
  // Written by the --drivers-first pass: the walk below skips them. With --needed too, and
  // before the needed decision is even loaded: a device waiting for a driver is what a module
  // load acts on, and its load is the long part of a coldplug, so it starts while the rest of
  // the tree is read and decided on.
  absl::flat_hash_set<std::string> written_first;
  const SysfsFilter& filter = options.filter;
  if (options.drivers_first && filter.devices && filter.subsystem_match.empty() &&
      filter.subsystem_nomatch.empty() && filter.sysname_match.empty() &&
      filter.attr_match.empty()) {
    for (const Unbound& device : UnboundDevices(options.sysfs_root)) {
      if (!written_first.insert(device.devpath).second) continue;
      if (options.dry_run) {
        if (options.needed) {  // the needed walk's form: "DEVPATH  why"
          std::fprintf(env.out, "%s  waits for a driver (written first)\n", device.devpath.c_str());
        } else {
          std::fprintf(env.out, "%s -> %s\n", options.action.c_str(), device.uevent.c_str());
        }
        ++report.triggered;
        report.written.push_back(device.uevent);
        continue;
      }
      // A failure here is not counted: the walk below writes the device again and reports.
      if (WriteAction(device.uevent, options.action) != 0) {
        written_first.erase(device.devpath);
        continue;
      }
      if (!report.first_write.has_value()) report.first_write = MonoNow();
      ++report.triggered;
      report.written.push_back(device.uevent);
      if (options.verbose) std::fprintf(env.out, "%s\n", device.uevent.c_str());
    }
  }
  if (env.after_drivers_first) env.after_drivers_first();
  if (needed.has_value()) LoadModuleFacts(options, env, *needed);
  absl::StatusOr<SysfsScan> scan = ScanSysfs(options.sysfs_root, options.filter);
  if (!scan.ok()) return scan.status();
  report.vanished = scan->vanished;
  for (const SysfsProblem& problem : scan->problems) {
    std::fprintf(env.err, "hotring trigger: cannot read %s: %s\n", problem.path.c_str(),
                 std::string(problem.status.message()).c_str());
    ++report.failed;
    ++report.failure_reasons["unreadable"];
  }
  // What to write, in order, with the line a dry run prints for it.
  std::vector<std::pair<SysfsEntry, std::string>> targets;
  if (needed.has_value()) {
    targets = PickNeeded(options, env, *needed, std::move(scan->entries), written_first, report);
  } else {
    targets.reserve(scan->entries.size());
    for (SysfsEntry& entry : scan->entries) {
      if (entry.kind == SysfsEntryKind::kDevice && written_first.contains(entry.devpath)) continue;
      std::string line =
          absl::StrCat(options.action, " -> ", UeventPath(options.sysfs_root, entry));
      targets.emplace_back(std::move(entry), std::move(line));
    }
  }
  const bool progress = env.progress.has_value() ? *env.progress : ::isatty(::fileno(env.out)) != 0;
  const bool draw_progress = progress && !options.verbose && !options.dry_run;
  const size_t total = targets.size();
  size_t done = 0;
  for (const auto& [entry, dry_run_line] : targets) {
    const std::string path = UeventPath(options.sysfs_root, entry);
    ++done;
    if (options.dry_run) {
      std::fprintf(env.out, "%s\n", dry_run_line.c_str());
      ++report.triggered;
      report.written.push_back(path);
      continue;
    }
    const int err = WriteAction(path, options.action);
    if (err == 0) {
      if (!report.first_write.has_value()) report.first_write = MonoNow();
      ++report.triggered;
      report.written.push_back(path);
      if (options.verbose) std::fprintf(env.out, "%s\n", path.c_str());
    } else if (IsVanishedErrno(err)) {
      ++report.vanished;
      if (options.verbose) std::fprintf(env.out, "%s: vanished\n", path.c_str());
    } else {
      ++report.failed;
      ++report.failure_reasons[std::strerror(err)];
      if (draw_progress) std::fputs("\r\033[K", env.out);
      std::fflush(env.out);
      std::fprintf(env.err, "hotring trigger: %s: %s\n", path.c_str(), std::strerror(err));
    }
    if (draw_progress && (done % kProgressEvery == 0 || done == total)) {
      std::fprintf(env.out, "\r\033[Ktriggering %zu/%zu %s", done, total, entry.devpath.c_str());
      std::fflush(env.out);
    }
  }
  if (draw_progress && total > 0) std::fputs("\r\033[K", env.out);
  return report;
}

std::string FormatTriggerSummary(const TriggerReport& report, bool dry_run) {
  std::string line;
  if (report.devices_considered.has_value()) {
    line = absl::StrCat("needed: ", report.devices_needed, " of ", *report.devices_considered,
                        " devices");
    if (report.devices_first > 0) {
      absl::StrAppend(&line, ", ", report.devices_first, " waiting for a driver written first");
    }
    absl::StrAppend(&line, "; ");
  }
  if (dry_run) return absl::StrCat(line, report.triggered, " would be triggered (dry run)");
  absl::StrAppend(&line, report.triggered, " triggered, ", report.failed, " failed");
  if (!report.failure_reasons.empty()) {
    std::vector<std::string> reasons;
    for (const auto& [reason, count] : report.failure_reasons) {
      reasons.push_back(absl::StrCat(reason, ": ", count));
    }
    absl::StrAppend(&line, " (", absl::StrJoin(reasons, ", "), ")");
  }
  if (report.vanished > 0) absl::StrAppend(&line, ", ", report.vanished, " vanished");
  return line;
}

int RunTrigger(const std::vector<std::string>& args) {
  return RunTrigger(args, TriggerEnvironment());
}

int RunTrigger(const std::vector<std::string>& args, const TriggerEnvironment& env) {
  absl::StatusOr<std::optional<TriggerOptions>> parsed = ParseTriggerArgs(args, env.out);
  if (!parsed.ok()) {
    std::fprintf(env.err, "hotring %s\n%s", std::string(parsed.status().message()).c_str(),
                 TriggerUsage().c_str());
    return 2;
  }
  if (!parsed->has_value()) return 0;  // --help
  const TriggerOptions* options = &**parsed;
  if (options->settle && !env.settle) {
    std::fprintf(env.err,
                 "hotring trigger: --settle is not available here (no connection to the daemon); "
                 "run `hotring settle` afterwards\n");
    return 2;
  }
  absl::StatusOr<TriggerReport> report = Trigger(*options, env);
  if (!report.ok()) {
    std::fprintf(env.err, "hotring trigger: %s\n", report.status().ToString().c_str());
    return 1;
  }
  std::fprintf(env.out, "%s\n", FormatTriggerSummary(*report, options->dry_run).c_str());
  std::fflush(env.out);
  int code = report->failed > 0 ? 1 : 0;
  if (options->settle && !options->dry_run) {
    const absl::Status settled = env.settle(options->socket, options->settle_timeout);
    if (!settled.ok()) {
      const std::string why =
          absl::IsDeadlineExceeded(settled)
              ? absl::StrCat("timed out after ", absl::FormatDuration(options->settle_timeout))
              : settled.ToString();
      std::fprintf(env.err, "hotring trigger: settle: %s\n", why.c_str());
      code = 1;
    }
  }
  return code;
}

}  // namespace hotring::hotplug

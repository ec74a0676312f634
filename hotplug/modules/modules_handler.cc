#include "hotplug/modules/modules_handler.h"

#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/modules/bus_controller.h"
#include "hotplug/modules/kmod_resolver.h"
#include "hotplug/modules/module_index.h"

namespace hotring::hotplug::modules {
namespace {

std::string RunningKernelVersion() {
  struct utsname u;
  if (::uname(&u) != 0) return "";
  return u.release;
}

std::string ReadProcCmdline() {
  std::ifstream in("/proc/cmdline");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// 2 x CPUs, at least 4. A load mostly sleeps in its driver's probe, so more threads look free,
// but 16 against 4 on a one- or two-vCPU boot was inconclusive on a loaded host (later in two
// rounds, earlier in one: docs/benchmarks.md), so the default stays; hotring.modules_threads=N
// tries other values. Threads start on demand.
size_t DefaultThreads() {
  const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<size_t>(2 * cpus, 4, 16);
}

}  // namespace

void AddModulesFlags(FlagSet& flags, ModulesOptions& options) {
  flags.Text("modules (MODALIAS of add events; on by default):")
      .Store("--no-modules", &options.enabled, false, "do not load kernel modules")
      .Value("--modules-root", "DIR", "modules and modprobe.d under DIR (default /)",
             [&options](absl::string_view v) {
               options.root = v == "/" ? "" : std::string(v);
               return absl::OkStatus();
             })
      .Value("--kernel-version", "V", "use DIR/lib/modules/V (default: the running kernel)",
             [&options](absl::string_view v) {
               if (v.empty() || v.find('/') != absl::string_view::npos) {
                 return absl::InvalidArgumentError("needs a version like 6.1.0-13-amd64");
               }
               options.kernel_version = std::string(v);
               return absl::OkStatus();
             })
      .Bool("--modules-serial", &options.serial,
            "load one module at a time (also hotring.modules_serial on the kernel command line)")
      .Text("  (hotring.modules_threads=N on the kernel command line: N loads at once; default")
      .Text("   2 x CPUs, at least 4, at most 16)")
      .Store("--no-controllers-first", &options.controllers_first, false,
             "load drivers in the order their devices came; by default the drivers of USB and "
             "SD host controllers go first, at a higher CPU priority, since the devices behind "
             "them are enumerated only after them (also hotring.controllers_first=0 on the "
             "kernel command line; hotring.controllers_nice=N sets their nice value, default "
             "-10, 0 for order alone)")
      .Value("--kernel-cmdline", "TEXT",
             "read TEXT instead of /proc/cmdline (tests, image building)",
             [&options](absl::string_view v) {
               options.kernel_cmdline = std::string(v);
               return absl::OkStatus();
             })
      .String("--modules-dry-run-log", "FILE", &options.dry_run_log,
              "load nothing: append `load NAME PATH OPTIONS` and `install NAME COMMAND` lines "
              "to FILE (tests, image building)")
      .Seconds("--modules-dry-run-delay", "S", &options.dry_run_delay,
               "each dry-run load takes S seconds (tests)");
}

bool KernelCmdlineFlag(absl::string_view cmdline, absl::string_view name) {
  bool on = false;
  for (absl::string_view word : absl::StrSplit(cmdline, absl::ByAnyChar(" \t\n"),
                                               absl::SkipEmpty())) {
    if (word == name) {
      on = true;
      continue;
    }
    if (word.size() <= name.size() || word.substr(0, name.size()) != name ||
        word[name.size()] != '=') {
      continue;
    }
    const std::string value = absl::AsciiStrToLower(word.substr(name.size() + 1));
    if (value == "1" || value == "y" || value == "yes" || value == "on" || value == "true") {
      on = true;
    } else if (value == "0" || value == "n" || value == "no" || value == "off" ||
               value == "false") {
      on = false;
    }
  }
  return on;
}

absl::StatusOr<std::unique_ptr<ModulesHandler>> ModulesHandler::Create(
    ResolverFactory factory, std::shared_ptr<Kernel> kernel, Loader::Options loader_options,
    absl::Status* start_error) {
  if (!factory) return absl::InvalidArgumentError("modules: no resolver factory");
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader,
                           Loader::Create(loader_options, std::move(kernel)));
  std::unique_ptr<ModulesHandler> handler(
      new ModulesHandler(std::move(factory), std::move(loader)));
  absl::StatusOr<std::shared_ptr<const Resolver>> resolver = handler->factory_();
  if (resolver.ok()) {
    handler->resolver_ = std::move(*resolver);
  } else if (start_error != nullptr) {
    *start_error = resolver.status();
  }
  return handler;
}

void ModulesHandler::RecordSteps(const Event& event, const PlanResult& loaded,
                                 MonoTime asked_at) const {
  // The loads this event waited for that started after it asked (a load it merely joined was
  // recorded by the event that started it); the loader keeps the durations.
  for (const ModuleResult& m : loaded.modules) {
    if (m.outcome != ModuleOutcome::kLoaded && m.outcome != ModuleOutcome::kInstalled &&
        m.outcome != ModuleOutcome::kFailed) {
      continue;
    }
    const std::deque<LoadRecord>& records = loader_->records();
    for (auto it = records.rbegin(); it != records.rend(); ++it) {
      if (it->name != m.name) continue;
      if (it->start >= asked_at) {
        recorder_->Step(event, m.name, it->start, it->duration, IsSuccess(m.outcome));
      }
      break;
    }
  }
}

Task<HandlerResult> ModulesHandler::Handle(io::Reactor& reactor, const Event& event) {
  if (event.action != "add" || event.modalias.empty()) co_return HandlerResult{};
  ++counters_.events;
  // Ours for this event, whatever a reload does meanwhile.
  const std::shared_ptr<const Resolver> resolver = resolver_;
  if (resolver == nullptr) {
    ++counters_.no_index;
    co_return HandlerResult{};
  }
  absl::StatusOr<LoadPlan> plan = resolver->Resolve(event.modalias, /*alias_lookup=*/true);
  if (!plan.ok()) {
    ++counters_.resolve_errors;
    LogError("%s MODALIAS=%s: modules: %s", EventLabel(event), event.modalias,
             plan.status().ToString());
    co_return HandlerResult{.detail = "modules: resolution failed"};
  }
  if (plan->blacklisted) {
    ++counters_.blacklisted;
    LogInfo("%s MODALIAS=%s: modules: only blacklisted modules match", EventLabel(event),
            event.modalias);
    co_return HandlerResult{};
  }
  if (plan->unmatched()) {
    ++counters_.unmatched;
    LogDebug("%s MODALIAS=%s: modules: no module matches", EventLabel(event), event.modalias);
    co_return HandlerResult{};
  }
  plan->first = controllers_first_ && IsEnumeratingBusController(event.modalias);
  const size_t wanted = plan->modules.size();
  const MonoTime asked_at = MonoNow();
  // A device without a node (a PCI function, a USB interface) whose driver is about to load:
  // the devices that driver's probe creates below it need not wait for the load to end (udevd
  // makes them wait; here virtio_net would wait for all of virtio_pci's init). A device with a
  // node keeps the strict order: the rules after this link make its node for those below.
  if (recorder_ != nullptr && event.devname.empty()) recorder_->LetDevicesBelowStart(event);
  const PlanResult loaded = co_await loader_->Load(reactor, std::move(*plan));
  if (recorder_ != nullptr) RecordSteps(event, loaded, asked_at);
  const size_t failures = loaded.failures();
  if (failures == 0) co_return HandlerResult{};
  // Each failed module was logged with its errno by the loader; this line ties them to the
  // event.
  ++counters_.events_with_failures;
  std::string failed;
  for (const ModuleResult& m : loaded.modules) {
    if (IsSuccess(m.outcome)) continue;
    absl::StrAppend(&failed, failed.empty() ? "" : ", ", m.name, " (", OutcomeName(m.outcome),
                    ")");
  }
  LogWarning("%s MODALIAS=%s: modules: %d of %d failed: %s", EventLabel(event), event.modalias,
             failures, wanted, failed);
  co_return HandlerResult{.detail = absl::StrCat("modules: ", failures, " failed")};
}

Task<absl::Status> ModulesHandler::LoadModules(io::Reactor& reactor,
                                               absl::Span<const std::string> names) {
  const std::shared_ptr<const Resolver> resolver = resolver_;
  if (resolver == nullptr) {
    ++counters_.no_index;
    co_return absl::FailedPreconditionError("modules: no index to resolve with");
  }
  std::string failed;
  for (const std::string& name : names) {
    ++counters_.asked;
    absl::StatusOr<LoadPlan> plan = resolver->Resolve(name, /*alias_lookup=*/true);
    if (!plan.ok()) {
      ++counters_.resolve_errors;
      absl::StrAppend(&failed, failed.empty() ? "" : ", ", name, " (", plan.status().message(), ")");
      continue;
    }
    if (plan->blacklisted) {
      ++counters_.blacklisted;
      continue;
    }
    if (plan->unmatched()) {
      ++counters_.unmatched;
      continue;
    }
    const PlanResult loaded = co_await loader_->Load(reactor, std::move(*plan));
    for (const ModuleResult& m : loaded.modules) {
      if (!IsSuccess(m.outcome)) {
        absl::StrAppend(&failed, failed.empty() ? "" : ", ", m.name, " (", OutcomeName(m.outcome), ")");
      }
    }
  }
  if (failed.empty()) co_return absl::OkStatus();
  co_return absl::InternalError(absl::StrCat("modules failed: ", failed));
}

absl::Status ModulesHandler::Reload() {
  ++counters_.reloads;
  absl::StatusOr<std::shared_ptr<const Resolver>> resolver = factory_();
  if (!resolver.ok()) {
    ++counters_.reload_failures;
    LogError("modules: reload failed, %s: %s", resolver_ ? "keeping the previous index" : "no index",
             resolver.status().ToString());
    return resolver.status();
  }
  resolver_ = std::move(*resolver);
  LogNotice("modules: index reloaded");
  return absl::OkStatus();
}

void ModulesHandler::AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const {
  const LoaderCounters& l = loader_->counters();
  out.emplace_back("modules_events", counters_.events);
  out.emplace_back("modules_loaded", l.loaded);
  out.emplace_back("modules_already_loaded", l.already_loaded);
  out.emplace_back("modules_builtin", l.builtin);
  out.emplace_back("modules_installed", l.installed);
  out.emplace_back("modules_failed", l.failed);
  out.emplace_back("modules_dependency_failed", l.dependency_failed);
  out.emplace_back("modules_joined", l.joined);
  out.emplace_back("modules_first", l.first);
  out.emplace_back("modules_timed_out", l.timed_out);
  out.emplace_back("modules_blacklisted", counters_.blacklisted);
  out.emplace_back("aliases_unmatched", counters_.unmatched);
  out.emplace_back("modules_resolve_errors", counters_.resolve_errors);
  out.emplace_back("modules_no_index", counters_.no_index);
  out.emplace_back("modules_in_flight", loader_->in_flight());
  out.emplace_back("modules_peak_in_flight", l.peak_in_flight);
  out.emplace_back("modules_load_us", absl::ToInt64Microseconds(l.load_time));
  out.emplace_back("modules_reloads", counters_.reloads);
  out.emplace_back("modules_reload_failures", counters_.reload_failures);
  out.emplace_back("modules_asked_by_stages", counters_.asked);
}

absl::StatusOr<std::unique_ptr<ModulesHandler>> MakeDaemonModulesLink(
    const ModulesOptions& options, const std::string& sysfs_root, absl::Duration install_timeout,
    absl::Duration install_kill_grace) {
  const std::string running = RunningKernelVersion();
  const std::string version = options.kernel_version.empty() ? running : options.kernel_version;
  const std::string cmdline =
      options.kernel_cmdline.has_value() ? *options.kernel_cmdline : ReadProcCmdline();

  std::shared_ptr<Kernel> kernel;
  if (!options.dry_run_log.empty()) {
    HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<DryRunKernel> dry,
                             DryRunKernel::Create(options.dry_run_log, options.dry_run_delay));
    kernel = std::move(dry);
  } else if (version != running) {
    return absl::InvalidArgumentError(absl::StrCat(
        "daemon: --kernel-version ", version, " is not the running kernel (", running,
        "): its modules cannot be loaded here (use --modules-dry-run-log, or --no-modules)"));
  } else {
    kernel = std::make_shared<SysKernel>(sysfs_root);
  }

  Loader::Options loader_options;
  loader_options.serial = options.serial || KernelCmdlineFlag(cmdline, "hotring.modules_serial");
  loader_options.threads = options.threads > 0 ? options.threads : DefaultThreads();
  // hotring.modules_threads=N (1 to 64) on the kernel command line, unless the flag said.
  for (absl::string_view word : absl::StrSplit(cmdline, absl::ByAnyChar(" \t\n"),
                                               absl::SkipEmpty())) {
    size_t n = 0;
    if (options.threads == 0 && absl::ConsumePrefix(&word, "hotring.modules_threads=") &&
        absl::SimpleAtoi(word, &n) && n >= 1 && n <= 64) {
      loader_options.threads = n;
    }
    // hotring.controllers_nice=N (-20 to 19): the nice value of a bus controller's load.
    int nice = 0;
    if (absl::ConsumePrefix(&word, "hotring.controllers_nice=") && absl::SimpleAtoi(word, &nice) &&
        nice >= -20 && nice <= 19) {
      loader_options.first_nice = nice;
    }
  }
  loader_options.install_timeout = install_timeout;
  loader_options.install_kill_grace = install_kill_grace;
  // Longer than an install command may take: the daemon's deadlines outlast its children's.
  loader_options.wait_limit = install_timeout + install_kill_grace + absl::Seconds(5);

  ModuleIndexOptions index_options;
  index_options.modules_dir = absl::StrCat(options.root, "/lib/modules/", version);
  index_options.config_paths = DefaultConfigPaths(options.root);
  index_options.kernel_cmdline = cmdline;
  ModulesHandler::ResolverFactory factory =
      [index_options]() -> absl::StatusOr<std::shared_ptr<const Resolver>> {
    const MonoTime start = MonoNow();
    HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<ModuleIndex> index, ModuleIndex::Load(index_options));
    // Once per load: a damaged index answers nothing until depmod is run and the index reloaded.
    for (const std::string& damaged : index->DamagedIndexes()) {
      LogWarning("modules: %s; nothing is looked up in it", damaged);
    }
    for (const std::string& error : index->config().errors) LogWarning("modules: %s", error);
    auto resolver = std::make_shared<const KmodResolver>(
        std::shared_ptr<const ModuleIndex>(std::move(index)));
    LogInfo("modules: index of %s ready in %.2fms", index_options.modules_dir,
            absl::ToDoubleMilliseconds(Since(start, MonoNow())));
    return resolver;
  };

  absl::Status start_error;
  HOTRING_ASSIGN_OR_RETURN(
      std::unique_ptr<ModulesHandler> handler,
      ModulesHandler::Create(std::move(factory), std::move(kernel), loader_options, &start_error));
  // On unless the flag or the command line (hotring.controllers_first=0) turns it off.
  handler->set_controllers_first(
      options.controllers_first &&
      KernelCmdlineFlag(absl::StrCat("hotring.controllers_first ", cmdline),
                        "hotring.controllers_first"));
  if (!start_error.ok()) {
    // No module tree (an initramfs with everything built in) is not a reason to stop handling
    // events; a reload tries again.
    LogNotice("modules: no index, modules will not be loaded until a reload finds one: %s",
              start_error.ToString());
  }
  LogInfo("modules: loading the modules of %s%s%s", version,
          loader_options.serial ? ", one at a time" : "",
          options.dry_run_log.empty() ? "" : absl::StrCat(", dry run into ", options.dry_run_log));
  return handler;
}

}  // namespace hotring::hotplug::modules

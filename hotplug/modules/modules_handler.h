// The daemon's modules link: the first link of the handler chain. For an `add` event with a
// MODALIAS it resolves the alias (kmod's rules, blacklist applied, as udev does) and loads the
// modules it names, and the event counts as handled only once they are loaded, so the links
// after it (rules, --exec) see the driver bound and `settle` covers the loads and the uevents
// they cause. A module that fails is logged (module and errno) and counted, and does not fail
// the event: the device still gets its node and its handler.
#ifndef HOTRING_HOTPLUG_MODULES_MODULES_HANDLER_H_
#define HOTRING_HOTPLUG_MODULES_MODULES_HANDLER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/flags.h"
#include "core/task.h"
#include "hotplug/event.h"
#include "hotplug/handler.h"
#include "hotplug/module_loading.h"
#include "hotplug/modules/load_plan.h"
#include "hotplug/modules/loader.h"
#include "io/reactor.h"

namespace hotring::hotplug::modules {

// The daemon's modules flags.
struct ModulesOptions {
  bool enabled = true;         // --no-modules turns the link off
  std::string root;            // --modules-root DIR: modules and modprobe.d under DIR ("" is /)
  std::string kernel_version;  // --kernel-version V; empty: the running kernel's (uname -r)
  bool serial = false;         // --modules-serial (or hotring.modules_serial on the command line)
  // Kernel command line text (modprobe.blacklist=, MOD.PARAM=, hotring.modules_serial);
  // unset: /proc/cmdline. --kernel-cmdline, for tests and image building.
  std::optional<std::string> kernel_cmdline;
  // --modules-dry-run-log FILE: load nothing, append what would be loaded to FILE (tests and
  // image building); --modules-dry-run-delay S makes each such load take S seconds.
  std::string dry_run_log;
  absl::Duration dry_run_delay = absl::ZeroDuration();
  size_t threads = 0;  // loads at once; 0: 2 x CPUs, at least 4, at most 16
  // The drivers of USB and SD host controllers first (bus_controller.h): their loads go ahead
  // of the others and run at a higher CPU priority. --no-controllers-first (or
  // hotring.controllers_first=0) loads every driver in the order its device came.
  bool controllers_first = true;
};

// Declares the daemon's modules flags in `flags` (with a heading and their help lines), each
// storing into `options`, which must outlive the parse.
void AddModulesFlags(FlagSet& flags, ModulesOptions& options);

// True when the kernel command line turns `name` on: `name`, or `name=` 1, y, yes, on, true
// (the last occurrence wins; `name=0`, n, no, off, false turn it off).
[[nodiscard]] bool KernelCmdlineFlag(absl::string_view cmdline, absl::string_view name);

struct ModulesCounters {
  uint64_t events = 0;          // add events with a MODALIAS
  uint64_t blacklisted = 0;     // aliases that matched only blacklisted modules
  uint64_t unmatched = 0;       // aliases that matched nothing
  uint64_t resolve_errors = 0;  // the resolver failed
  uint64_t no_index = 0;        // events seen while there was no index to resolve with
  uint64_t events_with_failures = 0;
  uint64_t reloads = 0;
  uint64_t reload_failures = 0;  // reloads that kept the previous index
  uint64_t asked = 0;            // names other stages asked to load (LoadModules)
};

// Owns the resolver (replaced whole on reload), the loader, and the counters. Also serves other
// stages' loads (ModuleLoading: udev's kmod builtin) through the same resolver and loader.
class ModulesHandler final : public Handler, public ModuleLoading {
 public:
  // Builds a resolver: at start and on every reload.
  using ResolverFactory = std::function<absl::StatusOr<std::shared_ptr<const Resolver>>()>;

  // A factory that fails at start leaves the link without an index (events pass through,
  // counted as no_index) until a reload succeeds; `start_error` receives its error.
  static absl::StatusOr<std::unique_ptr<ModulesHandler>> Create(
      ResolverFactory factory, std::shared_ptr<Kernel> kernel, Loader::Options loader_options,
      absl::Status* start_error = nullptr);

  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override;
  // udev's `kmod load NAME...`: each name resolved as an alias (blacklist applied) and loaded;
  // loads already done or in flight are joined.
  Task<absl::Status> LoadModules(io::Reactor& reactor, absl::Span<const std::string> names) override;
  // Builds a new resolver; on failure the previous one stays in use.
  absl::Status Reload() override;
  [[nodiscard]] std::string Name() const override { return "modules"; }
  void AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const override;
  // Each load this stage ran for an event becomes a step on the daemon's timeline.
  void SetStepRecorder(StepRecorder* recorder) override { recorder_ = recorder; }
  // Mark the plans of bus controllers' MODALIASes `first` (ModulesOptions::controllers_first).
  void set_controllers_first(bool on) { controllers_first_ = on; }

  [[nodiscard]] const ModulesCounters& counters() const { return counters_; }
  [[nodiscard]] const Loader& loader() const { return *loader_; }
  [[nodiscard]] bool has_index() const { return resolver_ != nullptr; }

 private:
  void RecordSteps(const Event& event, const PlanResult& loaded, MonoTime asked_at) const;
  ModulesHandler(ResolverFactory factory, std::unique_ptr<Loader> loader)
      : factory_(std::move(factory)), loader_(std::move(loader)) {}

  ResolverFactory factory_;
  // Shared with the Handle calls in flight, so a reload never pulls it from under them.
  std::shared_ptr<const Resolver> resolver_;
  ModulesCounters counters_;
  std::unique_ptr<Loader> loader_;
  StepRecorder* recorder_ = nullptr;  // the daemon's timeline; not owned
  bool controllers_first_ = false;
};

// The daemon's modules link from its flags: the kmod resolver over ROOT/lib/modules/VERSION
// and ROOT's modprobe.d, and the real kernel (SysKernel on `sysfs_root`), or the dry-run log.
// Loading modules of another kernel than the running one is refused unless it is a dry run.
// `install_timeout` bounds install commands (the daemon's --event-timeout).
absl::StatusOr<std::unique_ptr<ModulesHandler>> MakeDaemonModulesLink(
    const ModulesOptions& options, const std::string& sysfs_root, absl::Duration install_timeout,
    absl::Duration install_kill_grace);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_MODULES_HANDLER_H_

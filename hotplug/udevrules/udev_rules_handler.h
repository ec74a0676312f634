// UdevRulesHandler: the daemon's udev rules link (modules -> rules -> udev rules -> exec), on
// with --udev-compat when rule files are found. It loads a distribution's rules.d and udev.conf
// once (again on `control reload`/SIGHUP), and for each event does what systemd-udevd 252 does:
// the rules, the interface rename, the node's owner/group/mode, the links and their claims, the
// tags and the /run/udev database (udev_event.h: on its blocking pool, so the reactor never
// waits for sysfs, programs or probes), then RUN (programs through the Spawner, without a shell,
// with the device's properties as their environment and event_timeout; `kmod load` through
// the modules stage; other builtins on the pool), then the libudev announcement on netlink
// group 2 (counted and logged as udevcompat does: udev/stage_report.h). Owns the rules, the
// pool, the Spawner, the reporter (with the sender socket), and the world its jobs share
// (database, dev root, builtins, blocking spawner).
#ifndef HOTRING_HOTPLUG_UDEVRULES_UDEV_RULES_HANDLER_H_
#define HOTRING_HOTPLUG_UDEVRULES_UDEV_RULES_HANDLER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/task.h"
#include "hotplug/event.h"
#include "hotplug/handler.h"
#include "hotplug/module_loading.h"
#include "hotplug/udev/stage_report.h"
#include "hotplug/udevrules/builtin_calls.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/rule_files.h"
#include "io/blocking_pool.h"
#include "io/process/spawner.h"
#include "io/reactor.h"

namespace hotring::hotplug::udevrules {

struct UdevWorld;

class UdevRulesHandler final : public Handler {
 public:
  struct Options {
    // Rules directories, highest priority first; empty: udevd's (DefaultRulesDirs()).
    std::vector<std::string> rules_dirs;
    std::string udev_conf = "/etc/udev/udev.conf";  // "" reads none
    // udevd's --resolve-names; set, it wins over udev.conf's resolve_names.
    std::optional<ResolveNames> resolve_names;
    std::string run_dir = "/run/udev";
    std::string dev_root = "/dev";
    std::string sysfs_root = "/sys";
    std::string proc_sys = "/proc/sys";
    std::string kernel_cmdline = "/proc/cmdline";  // IMPORT{cmdline}; "" reads none
    std::string users_root = "/";  // OWNER/GROUP names from ROOT/etc/passwd and group
    bool monitor = true;           // announce on netlink group 2
    bool rename_interfaces = true; // NAME= renames interfaces (tests without a namespace: off)
    // The daemon's --event-timeout and --kill-grace; udev.conf's event_timeout wins when set.
    absl::Duration event_timeout = absl::Seconds(180);
    absl::Duration kill_grace = absl::Seconds(5);
    // Worker threads; 0: udev.conf's children_max (at most 16), else 4.
    size_t threads = 0;
    // hwdb.bin candidates and .link directories for the builtins; empty: udevd's.
    std::vector<std::string> hwdb_paths;
    std::vector<std::string> network_dirs;
    // `kmod load` goes here (the modules link; borrowed, outlives this). Null: modules are off,
    // and `kmod load` is counted and skipped.
    ModuleLoading* modules = nullptr;
  };

  // Reads udev.conf (exec_delay and malformed values are errors), loads the rules (a rule with
  // a problem is dropped and logged as "FILE:LINE: what"; the rest loads), applies static_node
  // permissions and tags. An error: a directory or udev.conf cannot be read.
  static absl::StatusOr<std::unique_ptr<UdevRulesHandler>> Create(Options options);
  ~UdevRulesHandler() override;

  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override;
  // Loads the rules, hwdb.bin and the .link files again (as udevd's reload); the old rules stay
  // in use when a directory cannot be read. Running events finish with what they started with.
  absl::Status Reload() override;
  [[nodiscard]] std::string Name() const override { return "udevrules"; }
  void AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const override;
  // Drops the sysfs answers kept across events (udev::DeviceShapes): a burst's devices' parents.
  void ReleaseIdleMemory() override;
  // Forgets what was kept of a device the event adds, removes or moves, and the uevent file of
  // any device an event starts for (ForgetShapesOf), before
  // an earlier link of the chain can let the events below it start. No event below that
  // device starts before this one does (the scheduler's rule).
  void Starting(const Event& event) override;
  [[nodiscard]] std::string Describe(const Event& event) const override;
  // The watched nodes (OPTIONS+="watch"): a close after a write becomes a `change` of the
  // device, as udevd's (watches.h).
  Task<void> Serve(io::Reactor& reactor) override;

  // The rules in use (tests, benchmarks).
  [[nodiscard]] std::shared_ptr<const CompiledRules> rules() const { return rules_; }

 private:
  class ExecutorPool;
  // What this stage counts beyond udev::StageCounters.
  struct Counters {
    uint64_t lines_matched = 0;
    uint64_t nodes_set = 0;
    uint64_t renamed = 0;
    uint64_t run_programs = 0;
    uint64_t run_failed = 0;
    uint64_t run_timed_out = 0;
    uint64_t run_builtins = 0;
    uint64_t builtins_missing = 0;
    uint64_t kmod_loads = 0;
    uint64_t reloads = 0;
    uint64_t rule_problems = 0;  // diagnostics of the last load
    uint64_t watches_added = 0;   // nodes watched after an event (restored ones too)
    uint64_t watch_closes = 0;    // watched nodes closed after a write
    uint64_t watch_changes = 0;   // `change` written for them
    uint64_t watch_rereads = 0;   // partition tables the kernel re-read instead
  };

  UdevRulesHandler(Options options, UdevConf conf, std::shared_ptr<UdevWorld> world,
                   udev::StageReporter reporter, std::unique_ptr<io::process::Spawner> spawner);
  absl::StatusOr<std::shared_ptr<const CompiledRules>> LoadAndReport();
  // hwdb.bin and the .link files (what is missing is logged; the builtins needing it fail).
  std::shared_ptr<const BuiltinWorld> LoadBuiltins() const;
  Task<void> RunList(io::Reactor& reactor, const Event& event, const std::vector<RunEntry>& run,
                     const std::vector<std::string>& env, MonoTime deadline);
  Task<void> RunBuiltin(io::Reactor& reactor, const Event& event, const RunEntry& entry,
                        const std::vector<std::string>& env);
  // A RUN program that could not start or failed: a warning the first times for each program.
  void LogRunFailure(const Event& event, const RunEntry& entry, absl::string_view why);
  // udevd's cleanup of /run/udev/links once idle: the ".lock" files and empty claim directories.
  Task<void> CleanUpClaims(io::Reactor& reactor);
  // After RUN: the node watched again (EventWork::watch).
  Task<void> BeginWatch(io::Reactor& reactor, const Event& event, std::string device_id);

  Options options_;
  UdevConf conf_;
  ExecuteOptions execute_options_;
  std::shared_ptr<UdevWorld> world_;  // shared with pool jobs, which may outlive a dropped task
  std::shared_ptr<const CompiledRules> rules_;  // replaced whole on reload
  BuiltinSources builtin_sources_;
  std::shared_ptr<const BuiltinWorld> builtins_;  // replaced whole on reload, as rules_
  std::shared_ptr<ExecutorPool> executors_;
  udev::StageReporter reporter_;
  std::unique_ptr<io::process::Spawner> spawner_;
  std::unique_ptr<io::BlockingPool> pool_;
  Counters counters_;
  // What each running event waits for (the daemon keeps running events at stable addresses).
  absl::flat_hash_map<const Event*, std::string> waiting_;
  bool claims_to_clean_ = false;  // an event used a claim directory since the last cleanup
  // RUN failures so far by program (argv[0]), for LogRunFailure; bounded.
  absl::flat_hash_map<std::string, uint32_t> run_failures_;
};

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_UDEV_RULES_HANDLER_H_

// RulesHandler: the daemon's rules link (modules -> rules -> --exec). For each event it plans
// with the current RuleSet, applies node actions on the dev root, runs the rules' commands as
// `/bin/sh -c COMMAND` through the Spawner (same timeout, kill and output capture as --exec),
// and loads firmware. Owns the rule set (replaced whole on reload), the dev root and a Spawner.
#ifndef HOTRING_HOTPLUG_RULES_RULES_HANDLER_H_
#define HOTRING_HOTPLUG_RULES_RULES_HANDLER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/task.h"
#include "hotplug/event.h"
#include "hotplug/handler.h"
#include "hotplug/rules/engine.h"
#include "hotplug/rules/firmware.h"
#include "hotplug/rules/rule_set.h"
#include "io/process/spawner.h"
#include "io/reactor.h"

namespace hotring::hotplug::rules {

class RulesHandler final : public Handler {
 public:
  struct Options {
    ConfigPaths config;               // --config FILE (and FILE.d/*.conf)
    std::string dev_root = "/dev";    // --dev-root DIR
    DevNodes nodes = DevNodes::kReal;  // --dev-root-placeholders: kPlaceholders
    std::string sysfs_root = "/sys";  // --sysfs-root DIR: `dev` files, firmware loading
    std::string firmware_root = "/lib/firmware";
    std::string users_root = "/";     // where etc/passwd and etc/group are read
    // Runs commands as `SHELL -c TEXT` (`daemon --rules-shell`: replay's recording wrapper).
    std::string shell = "/bin/sh";
    absl::Duration timeout = absl::Seconds(180);   // per command, as --event-timeout
    absl::Duration kill_grace = absl::Seconds(5);
    absl::Duration firmware_retry = kFirmwareRetryInterval;
  };

  // Loads the configuration; a broken file is an error "FILE:LINE: ..." (the daemon exits).
  static absl::StatusOr<std::unique_ptr<RulesHandler>> Create(Options options);

  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override;
  // Re-reads the configuration. On error the old rules stay in force, the error is counted
  // (rules_config_errors) and returned for the log.
  absl::Status Reload() override;
  [[nodiscard]] std::string Name() const override { return "rules"; }
  void AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const override;

  [[nodiscard]] const RuleSet& rule_set() const { return *rules_; }

 private:
  RulesHandler(Options options, std::shared_ptr<const RuleSet> rules, DevRoot dev_root,
               std::unique_ptr<io::process::Spawner> spawner)
      : options_(std::move(options)), rules_(std::move(rules)), dev_root_(std::move(dev_root)),
        spawner_(std::move(spawner)) {}
  Task<bool> RunCommand(io::Reactor& reactor, const Event& event, const Command& command);
  Task<void> LoadFirmware(io::Reactor& reactor, const Event& event, std::string firmware);

  struct Counters {
    uint64_t nodes_made = 0;
    uint64_t chowned = 0;
    uint64_t renamed = 0;
    uint64_t linked = 0;
    uint64_t removed = 0;
    uint64_t commands_run = 0;
    uint64_t commands_failed = 0;
    uint64_t config_errors = 0;
    uint64_t dropped_bad_devname = 0;
    uint64_t node_errors = 0;
    uint64_t firmware_loaded = 0;
    uint64_t firmware_failed = 0;
  };

  Options options_;
  // Shared with the events in flight: a reload swaps the pointer, running events finish with
  // the rules they started with.
  std::shared_ptr<const RuleSet> rules_;
  DevRoot dev_root_;
  std::unique_ptr<io::process::Spawner> spawner_;
  Counters counters_;
};

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_RULES_HANDLER_H_

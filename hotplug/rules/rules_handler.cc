#include "hotplug/rules/rules_handler.h"

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"
#include "io/ops.h"

namespace hotring::hotplug::rules {
namespace {

absl::StatusOr<std::shared_ptr<const RuleSet>> LoadConfig(const RulesHandler::Options& options) {
  HOTRING_ASSIGN_OR_RETURN(UserDb users, UserDb::Load(options.users_root));
  HOTRING_ASSIGN_OR_RETURN(RuleSet rules, LoadRules(options.config, users));
  return std::make_shared<const RuleSet>(std::move(rules));
}

std::string DescribeSources(const RuleSet& rules) {
  if (rules.sources().empty()) return "built-in default (root:root 0660)";
  std::string out;
  for (const std::string& source : rules.sources()) {
    if (!out.empty()) out += ", ";
    out += source;
  }
  return out;
}

// /sys$DEVPATH/dev for an add event without MAJOR/MINOR (mdev reads the same file). A short
// read of a sysfs attribute: it does not block.
std::optional<DevNumber> ReadDevFile(const std::string& sysfs_root, absl::string_view devpath) {
  if (devpath.find("/../") != absl::string_view::npos || absl::EndsWith(devpath, "/..")) {
    return std::nullopt;
  }
  const std::string path = absl::StrCat(sysfs_root, devpath, "/dev");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buffer[32];
  const ssize_t n = read(fd, buffer, sizeof(buffer));
  close(fd);
  if (n <= 0) return std::nullopt;
  return ParseDevNumber(absl::string_view(buffer, static_cast<size_t>(n)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RulesHandler>> RulesHandler::Create(Options options) {
  if (options.dev_root.find('\'') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dev-root '", options.dev_root, "' must not contain a quote"));
  }
  HOTRING_ASSIGN_OR_RETURN(std::shared_ptr<const RuleSet> rules, LoadConfig(options));
  HOTRING_ASSIGN_OR_RETURN(DevRoot dev_root, DevRoot::Open(options.dev_root, options.nodes));
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<io::process::Spawner> spawner,
                           io::process::Spawner::Create());
  LogNotice("rules: %d rules from %s; dev root %s%s", static_cast<int>(rules->rules().size()),
            DescribeSources(*rules), dev_root.path(),
            dev_root.devtmpfs()       ? " (devtmpfs)"
            : dev_root.placeholders() ? " (node placeholders)"
                                      : " (nodes made by hotring)");
  return std::unique_ptr<RulesHandler>(new RulesHandler(
      std::move(options), std::move(rules), std::move(dev_root), std::move(spawner)));
}

absl::Status RulesHandler::Reload() {
  absl::StatusOr<std::shared_ptr<const RuleSet>> rules = LoadConfig(options_);
  if (!rules.ok()) {
    ++counters_.config_errors;
    return absl::Status(rules.status().code(),
                        absl::StrCat(rules.status().message(), " (old rules kept)"));
  }
  rules_ = std::move(*rules);
  LogNotice("rules: reloaded %d rules from %s", static_cast<int>(rules_->rules().size()),
            DescribeSources(*rules_));
  return absl::OkStatus();
}

Task<HandlerResult> RulesHandler::Handle(io::Reactor& reactor, const Event& event) {
  // Keeps this event's rules alive across a reload while its commands run.
  const std::shared_ptr<const RuleSet> rules = rules_;
  Device device = DeviceFromEvent(event);
  if (device.action == DeviceAction::kAdd && !device.number.has_value()) {
    device.number = ReadDevFile(options_.sysfs_root, event.devpath);
  }
  const EventPlan plan =
      PlanEvent(*rules, device, {.remove_needs_number = event.source == EventSource::kKernel});
  for (const std::string& reason : plan.refused) {
    ++counters_.dropped_bad_devname;
    LogWarning("%s rules: dropped: %s", EventLabel(event), reason);
  }
  HandlerResult result;
  int failed = 0;
  if (plan.action == DeviceAction::kRemove) {
    for (const Command& command : plan.commands) {
      if (!co_await RunCommand(reactor, event, command)) ++failed;
    }
  }
  const NodeReport report = ApplyNodes(dev_root_, plan);
  counters_.nodes_made += report.nodes_made;
  counters_.chowned += report.chowned;
  counters_.renamed += report.renamed;
  counters_.linked += report.linked;
  counters_.removed += report.removed;
  counters_.dropped_bad_devname += report.refused;
  counters_.node_errors += report.errors.size();
  for (const std::string& error : report.errors) {
    LogWarning("%s rules: %s", EventLabel(event), error);
  }
  if (plan.action != DeviceAction::kRemove) {
    for (const Command& command : plan.commands) {
      if (!co_await RunCommand(reactor, event, command)) ++failed;
    }
  }
  if (plan.firmware.has_value()) co_await LoadFirmware(reactor, event, *plan.firmware);
  // A failed rule command does not stop the chain (busybox ignores its status too); it is
  // counted and logged, and named in the result's detail.
  result.outcome = HandlerOutcome::kHandled;
  result.detail = failed == 0 ? absl::StrCat(plan.rules_matched, " rules")
                              : absl::StrCat(failed, " rule commands failed");
  co_return result;
}

Task<bool> RulesHandler::RunCommand(io::Reactor& reactor, const Event& event,
                                    const Command& command) {
  io::process::SpawnRequest request;
  request.program = options_.shell;
  // busybox runs commands from /dev (relative paths in mdev.conf commands mean the dev root).
  // The dev root comes from the command line, never from an event, and has no quote in it.
  request.argv = {"/bin/sh", "-c",
                  absl::StrCat("cd '", dev_root_.path(), "' || exit 126\n", command.text)};
  request.envp = command.envp;
  bool has_home = false;
  bool has_path = false;
  for (const std::string& entry : request.envp) {
    has_home |= absl::StartsWith(entry, "HOME=");
    has_path |= absl::StartsWith(entry, "PATH=");
  }
  if (!has_home) request.envp.push_back("HOME=/");
  if (!has_path) request.envp.push_back("PATH=/sbin:/bin:/usr/sbin:/usr/bin");
  request.label = absl::StrCat(EventLabel(event), " ", command.origin);
  request.timeout = options_.timeout;
  request.kill_grace = options_.kill_grace;
  ++counters_.commands_run;
  absl::StatusOr<io::process::SpawnResult> run =
      co_await spawner_->Run(reactor, std::move(request));
  if (!run.ok()) {
    ++counters_.commands_failed;
    LogWarning("%s %s: command failed to start: %s", EventLabel(event), command.origin,
               run.status().ToString());
    co_return false;
  }
  if (run->timed_out || !run->exit.success()) {
    ++counters_.commands_failed;
    LogWarning("%s %s: command %s", EventLabel(event), command.origin,
               run->timed_out ? std::string("timed out")
               : run->exit.exited ? absl::StrCat("exit ", run->exit.code)
                                  : absl::StrCat("signal ", run->exit.code));
    co_return false;
  }
  co_return true;
}

Task<void> RulesHandler::LoadFirmware(io::Reactor& reactor, const Event& event,
                                      std::string firmware) {
  const FirmwarePaths paths{.firmware_root = options_.firmware_root,
                            .sysfs_root = options_.sysfs_root};
  for (int attempt = 0; attempt < kFirmwareTries; ++attempt) {
    if (attempt > 0) (void)co_await io::Sleep(reactor, options_.firmware_retry);
    absl::StatusOr<FirmwareOutcome> outcome = TryLoadFirmware(paths, event.devpath, firmware);
    if (!outcome.ok()) {
      ++counters_.firmware_failed;
      LogWarning("%s firmware %s: %s", EventLabel(event), firmware, outcome.status().ToString());
      co_return;
    }
    switch (*outcome) {
      case FirmwareOutcome::kNotReady:
        continue;
      case FirmwareOutcome::kLoaded:
        ++counters_.firmware_loaded;
        LogInfo("%s firmware %s loaded", EventLabel(event), firmware);
        co_return;
      case FirmwareOutcome::kMissing:
      case FirmwareOutcome::kFailed:
        ++counters_.firmware_failed;
        LogWarning("%s firmware %s: %s", EventLabel(event), firmware,
                   *outcome == FirmwareOutcome::kMissing ? "not found" : "copy failed");
        co_return;
    }
  }
  ++counters_.firmware_failed;
  LogWarning("%s firmware %s: no loading file after %d tries", EventLabel(event), firmware,
             kFirmwareTries);
}

void RulesHandler::AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const {
  out.emplace_back("rules_nodes_made", counters_.nodes_made);
  out.emplace_back("rules_chowned", counters_.chowned);
  out.emplace_back("rules_renamed", counters_.renamed);
  out.emplace_back("rules_linked", counters_.linked);
  out.emplace_back("rules_removed", counters_.removed);
  out.emplace_back("rules_node_errors", counters_.node_errors);
  out.emplace_back("rules_commands_run", counters_.commands_run);
  out.emplace_back("rules_commands_failed", counters_.commands_failed);
  out.emplace_back("rules_config_errors", counters_.config_errors);
  out.emplace_back("rules_firmware_loaded", counters_.firmware_loaded);
  out.emplace_back("rules_firmware_failed", counters_.firmware_failed);
  out.emplace_back("dropped_bad_devname", counters_.dropped_bad_devname);
}

}  // namespace hotring::hotplug::rules

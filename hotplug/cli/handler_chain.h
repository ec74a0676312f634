// The daemon's handler chain as `hotring daemon`'s flags ask for it, in pipeline order:
// modules (MODALIAS) -> rules (mdev.conf: nodes, links, commands) -> udev (with --udev-compat:
// the udev rules of rules.d when there are any, else the built-in fallback; both keep the
// database and announce on libudev's group 2) -> --exec. Each link is optional; with
// none, events are only ordered. The chain is where every stage meets: only the commands build
// it, the daemon and the stages know none of the others.
#ifndef HOTRING_HOTPLUG_CLI_HANDLER_CHAIN_H_
#define HOTRING_HOTPLUG_CLI_HANDLER_CHAIN_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/flags.h"
#include "hotplug/handler.h"
#include "hotplug/modules/modules_handler.h"
#include "hotplug/rules/rules_handler.h"
#include "hotplug/udevcompat/udevcompat_handler.h"
#include "hotplug/udevrules/udev_rules_handler.h"

namespace hotring::hotplug {

// What the chain is made of. Owns its options.
struct ChainOptions {
  modules::ModulesOptions modules;
  // The rules link runs only when asked for: without --config/--dev-root nothing touches /dev.
  bool rules = false;
  bool rules_config_given = false;  // --config itself (not only --dev-root)
  rules::RulesHandler::Options rules_options;
  bool udev_compat = false;
  udevcompat::UdevCompatHandler::Options udev_options;
  // --udev-rules-dir (repeatable): these directories instead of udevd's; given, the udev rules
  // link runs even when they hold no rule yet.
  std::vector<std::string> udev_rules_dirs;
  std::string udev_conf = "/etc/udev/udev.conf";
  std::optional<udevrules::ResolveNames> udev_resolve_names;  // over udev.conf's when set
  std::vector<std::string> udev_hwdb;       // --udev-hwdb: hwdb.bin candidates; empty: udevd's
  std::vector<std::string> udev_link_dirs;  // --udev-link-dir: .link directories; empty: udevd's
  bool udev_fallback = false;  // --udev-fallback: the built-in stage even where rules exist
  std::string exec_program;  // --exec; empty: no exec link
  // A handler's (and a rule command's) deadline: SIGTERM, then SIGKILL after the grace.
  absl::Duration event_timeout = absl::Seconds(180);
  absl::Duration kill_grace = absl::Seconds(5);
};

// Declares the stages' flags (--config, --dev-root, --exec, --udev-compat, the modules' ...).
void AddChainFlags(FlagSet& flags, ChainOptions& chain);

// True when --udev-compat should run udev's rules (the udev rules link) rather than the
// built-in fallback: --udev-rules-dir was given, or udevd's directories hold a rules file.
[[nodiscard]] bool WantsUdevRules(const ChainOptions& chain);

// Builds the chain; `sysfs_root` is the daemon's. An error names the link that failed.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Handler>> BuildHandlerChain(
    ChainOptions chain, const std::string& sysfs_root);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLI_HANDLER_CHAIN_H_

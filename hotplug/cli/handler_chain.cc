#include "hotplug/cli/handler_chain.h"

#include <utility>
#include <vector>

namespace hotring::hotplug {

void AddChainFlags(FlagSet& flags, ChainOptions& chain) {
  flags
      .Value("--config", "FILE",
             "mdev.conf rules, then FILE.d/*.conf (default /etc/mdev.conf; missing: root:root "
             "0660 for every node); enables rules",
             [&chain](absl::string_view v) {
               chain.rules_options.config.file = std::string(v);
               chain.rules = true;
               return absl::OkStatus();
             })
      .Value("--dev-root", "DIR", "where rules make nodes and links (default /dev); enables rules",
             [&chain](absl::string_view v) {
               chain.rules_options.dev_root = std::string(v);
               chain.rules = true;
               return absl::OkStatus();
             })
      .Store("--dev-root-placeholders", &chain.rules_options.nodes,
             rules::DevNodes::kPlaceholders,
             "a regular file saying which node it stands for instead of each device node: no "
             "mknod, no privilege (replay uses it)")
      .String("--firmware-root", "DIR", &chain.rules_options.firmware_root,
              "firmware for FIRMWARE events (default /lib/firmware)")
      .String("--users-root", "DIR", &chain.rules_options.users_root,
              "owner names from DIR/etc/passwd and DIR/etc/group (default /)")
      .String("--rules-shell", "PROGRAM", &chain.rules_options.shell,
              "runs rule commands instead of /bin/sh (replay records them)")
      .String("--exec", "PROGRAM", &chain.exec_program,
              "run PROGRAM SUBSYSTEM with the event's environment")
      .Seconds("--event-timeout", "S", &chain.event_timeout,
               "SIGTERM a handler after S seconds (default 180)")
      .Seconds("--kill-grace", "S", &chain.kill_grace,
               "then SIGKILL after S more seconds (default 5)")
      .Bool("--udev-compat", &chain.udev_compat,
            "serve libudev's consumers: udev's properties and seat tags, /run/udev/data and "
            "tags/, libudev-format events on netlink group 2, /dev/disk/by-* and /dev/input/by-* "
            "links beneath --dev-root (docs/udev-compat.md)")
      .String("--udev-run", "DIR", &chain.udev_options.run_dir,
              "where the udev database goes (default /run/udev)");
  modules::AddModulesFlags(flags, chain.modules);
}

absl::StatusOr<std::unique_ptr<Handler>> BuildHandlerChain(ChainOptions chain,
                                                           const std::string& sysfs_root) {
  std::vector<std::unique_ptr<Handler>> links;
  if (chain.modules.enabled) {
    absl::StatusOr<std::unique_ptr<modules::ModulesHandler>> link = modules::MakeDaemonModulesLink(
        chain.modules, sysfs_root, chain.event_timeout, chain.kill_grace);
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  }
  chain.udev_options.dev_root = chain.rules_options.dev_root;  // the same dev root as rules
  if (chain.rules) {
    chain.rules_options.sysfs_root = sysfs_root;
    chain.rules_options.timeout = chain.event_timeout;
    chain.rules_options.kill_grace = chain.kill_grace;
    absl::StatusOr<std::unique_ptr<rules::RulesHandler>> link =
        rules::RulesHandler::Create(std::move(chain.rules_options));
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  }
  if (chain.udev_compat) {
    chain.udev_options.sysfs_root = sysfs_root;
    absl::StatusOr<std::unique_ptr<udevcompat::UdevCompatHandler>> link =
        udevcompat::UdevCompatHandler::Create(std::move(chain.udev_options));
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  }
  if (!chain.exec_program.empty()) {
    absl::StatusOr<std::unique_ptr<ExecHandler>> link =
        ExecHandler::Create({.program = chain.exec_program,
                             .timeout = chain.event_timeout,
                             .kill_grace = chain.kill_grace});
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  }
  if (links.empty()) return std::make_unique<NullHandler>();
  if (links.size() == 1) return std::move(links.front());
  return std::make_unique<HandlerChain>(std::move(links));
}

}  // namespace hotring::hotplug

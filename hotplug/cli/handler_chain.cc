#include "hotplug/cli/handler_chain.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "hotplug/udevrules/rule_files.h"
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
               chain.rules_config_given = true;
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
            "serve libudev's consumers as systemd-udevd does: with rule files (udevd's "
            "rules.d directories, or --udev-rules-dir) it runs them (docs/udev-rules.md: nodes' "
            "owners and modes, links, NAME, RUN, the /run/udev database, libudev-format events "
            "on netlink group 2; mdev.conf rules then run only with --config); an image without "
            "any rule file gets the built-in fallback: Debian's storage, input and seat rules "
            "in code (docs/udev-compat.md)")
      .Value("--udev-rules-dir", "DIR",
             "read udev rules from DIR instead of /etc/udev/rules.d, /run/udev/rules.d, "
             "/usr/local/lib/udev/rules.d, /usr/lib/udev/rules.d, /lib/udev/rules.d "
             "(repeatable, first wins; implies the rules with --udev-compat)",
             [&chain](absl::string_view v) {
               chain.udev_rules_dirs.emplace_back(v);
               return absl::OkStatus();
             })
      .Bool("--udev-fallback", &chain.udev_fallback,
            "with --udev-compat: the built-in fallback even where rule files exist")
      .String("--udev-conf", "FILE", &chain.udev_conf,
              "udev.conf for the udev rules: udev_log, children_max, event_timeout, "
              "resolve_names (default /etc/udev/udev.conf; exec_delay is refused)")
      .Value("--udev-resolve-names", "early|late|never",
             "when the udev rules' OWNER/GROUP names become numbers (udevd's --resolve-names; "
             "over udev.conf's resolve_names)",
             [&chain](absl::string_view v) {
               chain.udev_resolve_names = udevrules::ParseResolveNames(v);
               if (!chain.udev_resolve_names.has_value()) {
                 return absl::InvalidArgumentError(
                     absl::StrCat("--udev-resolve-names: '", v, "' is not early, late or never"));
               }
               return absl::OkStatus();
             })
      .Value("--udev-hwdb", "FILE",
             "the builtins' hwdb.bin (repeatable, first found wins; default udevd's "
             "/etc/udev/hwdb.bin, /usr/lib/udev/hwdb.bin)",
             [&chain](absl::string_view v) {
               chain.udev_hwdb.emplace_back(v);
               return absl::OkStatus();
             })
      .Value("--udev-link-dir", "DIR",
             "net_setup_link's .link files from DIR instead of udevd's network directories "
             "(repeatable, first wins)",
             [&chain](absl::string_view v) {
               chain.udev_link_dirs.emplace_back(v);
               return absl::OkStatus();
             })
      .String("--udev-run", "DIR", &chain.udev_options.run_dir,
              "where the udev database goes (default /run/udev)");
  modules::AddModulesFlags(flags, chain.modules);
}

bool WantsUdevRules(const ChainOptions& chain) {
  if (chain.udev_fallback) return false;
  if (!chain.udev_rules_dirs.empty()) return true;
  const absl::StatusOr<std::vector<udevrules::RulesFile>> files =
      udevrules::ListRulesFiles(udevrules::DefaultRulesDirs());
  if (!files.ok()) return true;  // the link will say what is wrong with the directories
  for (const udevrules::RulesFile& f : *files) {
    if (!f.masked) return true;
  }
  return false;
}

namespace {

absl::StatusOr<std::unique_ptr<Handler>> MakeUdevRulesLink(ChainOptions& chain, const std::string& sysfs_root,
                                                          ModuleLoading* modules) {
  udevrules::UdevRulesHandler::Options options;
  options.rules_dirs = chain.udev_rules_dirs;
  options.udev_conf = chain.udev_conf;
  options.resolve_names = chain.udev_resolve_names;
  options.hwdb_paths = chain.udev_hwdb;
  options.network_dirs = chain.udev_link_dirs;
  options.run_dir = chain.udev_options.run_dir;
  options.dev_root = chain.rules_options.dev_root;
  options.sysfs_root = sysfs_root;
  options.users_root = chain.rules_options.users_root.empty() ? "/" : chain.rules_options.users_root;
  options.event_timeout = chain.event_timeout;
  options.kill_grace = chain.kill_grace;
  options.modules = modules;
  absl::StatusOr<std::unique_ptr<udevrules::UdevRulesHandler>> link =
      udevrules::UdevRulesHandler::Create(std::move(options));
  if (!link.ok()) return absl::Status(link.status().code(), absl::StrCat("udev rules: ", link.status().message()));
  return std::unique_ptr<Handler>(*std::move(link));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Handler>> BuildHandlerChain(ChainOptions chain,
                                                           const std::string& sysfs_root) {
  std::vector<std::unique_ptr<Handler>> links;
  ModuleLoading* modules_link = nullptr;  // owned by `links`, which outlives every use
  if (chain.modules.enabled) {
    absl::StatusOr<std::unique_ptr<modules::ModulesHandler>> link = modules::MakeDaemonModulesLink(
        chain.modules, sysfs_root, chain.event_timeout, chain.kill_grace);
    if (!link.ok()) return link.status();
    modules_link = link->get();
    links.push_back(*std::move(link));
  }
  chain.udev_options.dev_root = chain.rules_options.dev_root;  // the same dev root as rules
  const bool udev_rules = chain.udev_compat && WantsUdevRules(chain);
  // udev's rules own the nodes then: mdev.conf's run only when asked for by name.
  if (chain.rules && (!udev_rules || chain.rules_config_given)) {
    chain.rules_options.sysfs_root = sysfs_root;
    chain.rules_options.timeout = chain.event_timeout;
    chain.rules_options.kill_grace = chain.kill_grace;
    absl::StatusOr<std::unique_ptr<rules::RulesHandler>> link =
        rules::RulesHandler::Create(std::move(chain.rules_options));
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  }
  if (udev_rules) {
    absl::StatusOr<std::unique_ptr<Handler>> link = MakeUdevRulesLink(chain, sysfs_root, modules_link);
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  } else if (chain.udev_compat) {
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

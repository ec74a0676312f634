// `mdev` (argv[0], or `hotring mdev`): busybox's mdev (hotplug/rules/mdev_applet.h), whose
// `mdev -d` runs the daemon through the one launcher every daemon starts with.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "hotplug/cli/commands.h"
#include "hotplug/daemon/launch.h"
#include "hotplug/rules/mdev_applet.h"
#include "hotplug/rules/rules_handler.h"

namespace hotring::hotplug {
namespace {

int RunMdevDaemon(rules::MdevDaemon mdev) {
  DaemonOptions options;
  options.socket = mdev.socket;
  options.sysfs_root = mdev.sysfs_root;
  LaunchOptions launch;
  launch.name = "mdev";
  launch.daemonize = !mdev.foreground;
  launch.setup = [&mdev] {
    (void)InitLogging(mdev.syslog ? LogSink::kKmsg : LogSink::kStderr, mdev.level, "mdev");
    if (mdev.scan_first) mdev.scan();
    return absl::OkStatus();
  };
  launch.make_handler = [&mdev]() -> absl::StatusOr<std::unique_ptr<Handler>> {
    absl::StatusOr<std::unique_ptr<rules::RulesHandler>> handler =
        rules::RulesHandler::Create(std::move(mdev.handler));
    if (!handler.ok()) return handler.status();
    return std::unique_ptr<Handler>(*std::move(handler));
  };
  launch.before_ready = [&mdev] {
    if (!mdev.scan_first) mdev.scan();
  };
  // The scan's output went to the caller's terminal; from now on nobody reads it (with -S the
  // log goes to the kernel's, and stdout and stderr stay, as busybox leaves them).
  launch.detach_stdout = launch.detach_stderr = !mdev.syslog;
  return LaunchDaemon(std::move(options), std::move(launch));
}

}  // namespace

int MdevCommand(const std::vector<std::string>& args) {
  return rules::RunMdevApplet(args, RunMdevDaemon);
}

}  // namespace hotring::hotplug

// What `hotring daemon`'s command line says, and starting a daemon from it: shared by `hotring
// daemon` and by the systemd-udevd drop-in, which turns udevd's options into these flags.
#ifndef HOTRING_HOTPLUG_CLI_DAEMON_CONFIG_H_
#define HOTRING_HOTPLUG_CLI_DAEMON_CONFIG_H_

#include <optional>
#include <string>

#include "core/flags.h"
#include "core/log.h"
#include "hotplug/cli/handler_chain.h"
#include "hotplug/daemon/daemon.h"
#include "hotplug/daemon/launch.h"

namespace hotring::hotplug {

// Everything a daemon's command line tells. Owns its options.
struct DaemonConfig {
  DaemonOptions daemon;
  ChainOptions chain;
  LogLevel level = LogLevel::kNotice;
  // --log-kmsg, --log-file, --log-syslog; unset: stderr, or /dev/kmsg once daemonized.
  std::optional<LogSink> sink;
  std::string log_path;  // --log-file
  std::string log_tag = "hotring";
  std::optional<int> ready_fd;
  bool daemonize = false;
};

// Declares every flag of `hotring daemon` (the event flow's, the chain's, the process's).
void AddDaemonFlags(FlagSet& flags, DaemonConfig& config);

// Checks what the flags cannot (an error for ReportError), then runs the daemon through
// LaunchDaemon: logging set up in the process that serves, the handler chain the options ask
// for, readiness on --ready-fd and NOTIFY_SOCKET. `launch` says the rest (name, what stays of
// stdout/stderr when daemonized). Returns the process's exit code.
int LaunchConfiguredDaemon(DaemonConfig config, LaunchOptions launch);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLI_DAEMON_CONFIG_H_

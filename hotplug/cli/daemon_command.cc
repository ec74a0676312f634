// `hotring daemon`: its flags, the handler chain they ask for, readiness, then the daemon.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/flags.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/cli/commands.h"
#include "hotplug/daemon/daemon.h"
#include "hotplug/daemon/readiness.h"
#include "hotplug/handler.h"
#include "hotplug/modules/modules_handler.h"
#include "hotplug/rules/rules_handler.h"
#include "hotplug/udevcompat/monitor.h"
#include "hotplug/udevcompat/udevcompat_handler.h"

namespace hotring::hotplug {

int DaemonCommand(const std::vector<std::string>& args) {
  DaemonOptions options;
  modules::ModulesOptions modules_options;
  LogLevel level = LogLevel::kNotice;
  LogSink sink = LogSink::kStderr;
  std::optional<int> ready_fd;
  bool daemonize = false;
  // The rules link runs only when asked for: without --config/--dev-root nothing touches /dev.
  bool rules_enabled = false;
  rules::RulesHandler::Options rules_options;
  bool udev_compat = false;
  udevcompat::UdevCompatHandler::Options udev_options;
  FlagSet flags("daemon", "usage: hotring daemon [options]");
  flags
      .String("--socket", "PATH|@NAME", &options.socket,
              "control socket (default /run/hotring/control)")
      .Value("--config", "FILE",
             "mdev.conf rules, then FILE.d/*.conf (default /etc/mdev.conf; missing: root:root "
             "0660 for every node); enables rules",
             [&](absl::string_view v) {
               rules_options.config.file = std::string(v);
               rules_enabled = true;
               return absl::OkStatus();
             })
      .Value("--dev-root", "DIR", "where rules make nodes and links (default /dev); enables rules",
             [&](absl::string_view v) {
               rules_options.dev_root = std::string(v);
               rules_enabled = true;
               return absl::OkStatus();
             })
      .Store("--dev-root-placeholders", &rules_options.nodes, rules::DevNodes::kPlaceholders,
             "a regular file saying which node it stands for instead of each device node: no "
             "mknod, no privilege (replay uses it)")
      .String("--firmware-root", "DIR", &rules_options.firmware_root,
              "firmware for FIRMWARE events (default /lib/firmware)")
      .String("--users-root", "DIR", &rules_options.users_root,
              "owner names from DIR/etc/passwd and DIR/etc/group (default /)")
      .String("--rules-shell", "PROGRAM", &rules_options.shell,
              "runs rule commands instead of /bin/sh (replay records them)")
      .String("--exec", "PROGRAM", &options.exec_program,
              "run PROGRAM SUBSYSTEM with the event's environment")
      .Seconds("--event-timeout", "S", &options.event_timeout,
               "SIGTERM a handler after S seconds (default 180)")
      .Seconds("--kill-grace", "S", &options.kill_grace,
               "then SIGKILL after S more seconds (default 5)")
      .Int("--children-max", "N", &options.children_max, 1, 4096,
           "events handled at once (default 8 + 2 x CPUs)")
      // For fault tests that overflow the completion queue.
      .Int("--ring-entries", "N", &options.ring_entries, 1, 4096, "")
      .Hidden()
      .Int("--max-pending", "N", &options.max_pending, 1, 10'000'000,
           "events held+queued+running before netlink reading waits and other events are "
           "dropped (default 4096)")
      .Seconds("--reorder-timeout", "S", &options.reorder_timeout,
               "wait at most S seconds for a missing SEQNUM (default 5)")
      .Int("--expect-seqnum", "N", &options.expect_seqnum, 0, INT64_MAX,
           "first SEQNUM expected")
      .String("--seqnum-file", "PATH", &options.seqnum_file,
              "default /sys/kernel/uevent_seqnum ('' to ignore)")
      .Store("--no-netlink", &options.netlink, false, "do not listen to kernel uevents")
      .Int("--netlink-rcvbuf", "BYTES", &options.netlink_rcvbuf, 4096, INT32_MAX / 2,
           "netlink receive buffer (default 128 MiB)")
      .Value("--netlink-fd", "N",
             "take over the inherited kernel uevent socket N (bound to group 1) instead of "
             "opening one; what it queued is kept",
             [&](absl::string_view v) -> absl::Status {
               HOTRING_ASSIGN_OR_RETURN(const int64_t n, FlagSet::ParseInt(v, 0, INT32_MAX));
               // Ours from here, and not for whatever the daemon starts (as --ready-fd).
               if (::fcntl(static_cast<int>(n), F_SETFD, FD_CLOEXEC) != 0) {
                 return absl::InvalidArgumentError(absl::StrCat(n, ": ", std::strerror(errno)));
               }
               options.netlink_fd = UniqueFd(static_cast<int>(n));
               return absl::OkStatus();
             })
      .Bool("--netlink-trust-userspace", &options.netlink_trust_userspace,
            "accept uevents from any sender (tests only)")
      .String("--sysfs-root", "DIR", &options.sysfs_root,
              "tree the overrun resync walks (default /sys)")
      .Int("--rebroadcast", "GROUP", &options.rebroadcast_group, 2, 32,
           "re-send handled events to netlink group 2..32")
      .Bool("--udev-compat", &udev_compat,
            "serve libudev's consumers: udev's properties and seat tags, /run/udev/data and "
            "tags/, libudev-format events on netlink group 2, /dev/disk/by-* and /dev/input/by-* "
            "links beneath --dev-root (docs/udev-compat.md)")
      .String("--udev-run", "DIR", &udev_options.run_dir,
              "where the udev database goes (default /run/udev)")
      .String("--record-timeline", "FILE", &options.record_timeline,
              "write one line per event transition to FILE (hotring report)")
      .Int("--timeline-keep", "N", &options.timeline_keep, 0, 10'000'000,
           "timeline lines kept in memory for `report` (default 4096)")
      .String("--probe-dev-root", "DIR", &options.probe_dev_root,
              "where DEVNAME nodes are for settle --for LABEL=, PARTUUID=.. (default /dev)")
      .Value("--log-level", "LEVEL", "error|warning|notice|info|debug (default notice)",
             [&level](absl::string_view v) {
               if (!ParseLogLevel(std::string(v), &level)) {
                 return absl::InvalidArgumentError(absl::StrCat("unknown log level ", v));
               }
               return absl::OkStatus();
             })
      .Store("--log-kmsg", &sink, LogSink::kKmsg, "log to /dev/kmsg (initramfs)")
      .Int("--ready-fd", "N", &ready_fd, 0, INT32_MAX,
           "write a newline to fd N and close it once serving")
      .Bool("--daemonize|--daemon|-d", &daemonize,
            "run in the background: exit 0 once the daemon serves, or non-zero with its error "
            "(stdin/stdout to /dev/null, stderr kept for the log)")
      .Text("Serving means the control socket (and netlink, when on) is bound: a request sent "
            "from then")
      .Text("on is answered. With NOTIFY_SOCKET set, READY=1 is sent there too (sd_notify).");
  modules::AddModulesFlags(flags, modules_options);
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  if (udev_compat && options.rebroadcast_group == udevcompat::kUdevMonitorGroup) {
    // libudev would take the kernel-format copies on group 2 for udev's own announcements.
    return ReportError("daemon", absl::InvalidArgumentError(
                                     "--rebroadcast 2 and --udev-compat both send on group 2"));
  }
  const char* notify_socket = std::getenv("NOTIFY_SOCKET");
  absl::StatusOr<ReadinessNotifier> readiness =
      ReadinessNotifier::Create(ready_fd, notify_socket != nullptr ? notify_socket : "");
  if (!readiness.ok()) return ReportError("daemon", readiness.status());
  ::unsetenv("NOTIFY_SOCKET");  // ours alone: nothing we start may report in our name
  if (daemonize) {
    // Before anything starts threads or creates an io_uring: only the child goes on.
    absl::StatusOr<std::optional<int>> parent_exit = readiness->Daemonize();
    if (!parent_exit.ok()) return ReportError("daemon", parent_exit.status());
    if (parent_exit->has_value()) return **parent_exit;
  }
  // A start-up error goes to whoever waits for readiness: the --daemonize parent prints it.
  auto fail = [&](const absl::Status& status) {
    readiness->Failed(status.message());
    if (daemonize) return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
    return ReportError("daemon", status);
  };
  if (absl::Status logging = InitLogging(sink, level); !logging.ok()) {
    (void)InitLogging(LogSink::kStderr, level);
    LogWarning("cannot log to /dev/kmsg (%s); logging to stderr", logging.ToString());
  }
  // The handler chain, in pipeline order: modules (MODALIAS) -> rules (nodes, links,
  // commands) -> udev compatibility (properties, database, by-* links, group 2) -> --exec. Each link is optional; with none, events are only ordered.
  std::vector<std::unique_ptr<Handler>> links;
  if (modules_options.enabled) {
    absl::StatusOr<std::unique_ptr<modules::ModulesHandler>> link =
        modules::MakeDaemonModulesLink(modules_options, options.sysfs_root,
                                       options.event_timeout, options.kill_grace);
    if (!link.ok()) return fail(link.status());
    links.push_back(std::move(*link));
  }
  udev_options.dev_root = rules_options.dev_root;  // the same dev root as rules (moved below)
  if (rules_enabled) {
    rules_options.sysfs_root = options.sysfs_root;
    rules_options.timeout = options.event_timeout;
    rules_options.kill_grace = options.kill_grace;
    absl::StatusOr<std::unique_ptr<rules::RulesHandler>> rules_link =
        rules::RulesHandler::Create(std::move(rules_options));
    if (!rules_link.ok()) return fail(rules_link.status());
    links.push_back(std::move(*rules_link));
  }
  if (udev_compat) {
    udev_options.sysfs_root = options.sysfs_root;
    absl::StatusOr<std::unique_ptr<udevcompat::UdevCompatHandler>> udev_link =
        udevcompat::UdevCompatHandler::Create(std::move(udev_options));
    if (!udev_link.ok()) return fail(udev_link.status());
    links.push_back(std::move(*udev_link));
  }
  if (!options.exec_program.empty()) {
    absl::StatusOr<std::unique_ptr<ExecHandler>> exec = ExecHandler::Create(
        {.program = options.exec_program,
         .timeout = options.event_timeout,
         .kill_grace = options.kill_grace});
    if (!exec.ok()) return fail(exec.status());
    links.push_back(std::move(*exec));
  }
  std::unique_ptr<Handler> handler;
  if (links.empty()) {
    handler = std::make_unique<NullHandler>();
  } else if (links.size() == 1) {
    handler = std::move(links.front());
  } else {
    handler = std::make_unique<HandlerChain>(std::move(links));
  }
  options.on_ready = [&readiness] { readiness->Ready(); };
  absl::StatusOr<std::unique_ptr<Daemon>> daemon =
      Daemon::Create(std::move(options), std::move(handler));
  if (!daemon.ok()) return fail(daemon.status());
  const absl::Status run = (*daemon)->Run();
  if (!run.ok()) return ReportError("daemon", run);
  return 0;
}

}  // namespace hotring::hotplug

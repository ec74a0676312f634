#include "hotplug/cli.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/flags.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/bench/bench_memory.h"
#include "hotplug/bench/bench_modules.h"
#include "hotplug/bench/bench_rules.h"
#include "hotplug/bench/bench_startup.h"
#include "hotplug/bench_coldplug.h"
#include "hotplug/bench_events.h"
#include "hotplug/client.h"
#include "hotplug/commands.h"
#include "hotplug/daemon/daemon.h"
#include "hotplug/handler.h"
#include "hotplug/modules/modules_handler.h"
#include "hotplug/daemon/readiness.h"
#include "hotplug/replay/replay_command.h"
#include "hotplug/rules/rules_handler.h"
#include "hotplug/trigger.h"
#include "hotplug/udev/monitor.h"
#include "hotplug/udevcompat/udevcompat_handler.h"

namespace hotring::hotplug {
namespace {

constexpr absl::string_view kDaemonUsage =
    "usage: hotring daemon [options]\n"
    "  --socket PATH|@NAME        control socket (default /run/hotring/control)\n"
    "  --config FILE              mdev.conf rules, then FILE.d/*.conf (default /etc/mdev.conf;\n"
    "                             missing: root:root 0660 for every node); enables rules\n"
    "  --dev-root DIR             where rules make nodes and links (default /dev); enables rules\n"
    "  --dev-root-placeholders    a regular file saying which node it stands for instead of\n"
    "                             each device node: no mknod, no privilege (replay uses it)\n"
    "  --firmware-root DIR        firmware for FIRMWARE events (default /lib/firmware)\n"
    "  --users-root DIR           owner names from DIR/etc/passwd and DIR/etc/group (default /)\n"
    "  --rules-shell PROGRAM      runs rule commands instead of /bin/sh (replay records them)\n"
    "  --exec PROGRAM             run PROGRAM SUBSYSTEM with the event's environment\n"
    "  --event-timeout S          SIGTERM a handler after S seconds (default 180)\n"
    "  --kill-grace S             then SIGKILL after S more seconds (default 5)\n"
    "  --children-max N           events handled at once (default 8 + 2 x CPUs)\n"
    "  --max-pending N            events held+queued+running before netlink reading waits and\n"
    "                             other events are dropped (default 4096)\n"
    "  --reorder-timeout S        wait at most S seconds for a missing SEQNUM (default 5)\n"
    "  --expect-seqnum N          first SEQNUM expected\n"
    "  --seqnum-file PATH         default /sys/kernel/uevent_seqnum ('' to ignore)\n"
    "  --no-netlink               do not listen to kernel uevents\n"
    "  --netlink-rcvbuf BYTES     netlink receive buffer (default 128 MiB)\n"
    "  --netlink-fd N             take over the inherited kernel uevent socket N (bound to\n"
    "                             group 1) instead of opening one; what it queued is kept\n"
    "  --netlink-trust-userspace  accept uevents from any sender (tests only)\n"
    "  --sysfs-root DIR           tree the overrun resync walks (default /sys)\n"
    "  --rebroadcast GROUP        re-send handled events to netlink group 2..32\n"
    "  --udev-compat              serve libudev's consumers: udev's properties and seat tags,\n"
    "                             /run/udev/data and tags/, libudev-format events on netlink\n"
    "                             group 2, /dev/disk/by-* and /dev/input/by-* links beneath\n"
    "                             --dev-root (docs/udev-compat.md)\n"
    "  --udev-run DIR             where the udev database goes (default /run/udev)\n"
    "  --record-timeline FILE     write one line per event transition to FILE (hotring report)\n"
    "  --timeline-keep N          timeline lines kept in memory for `report` (default 4096)\n"
    "  --probe-dev-root DIR       where DEVNAME nodes are for settle --for LABEL=, PARTUUID=..\n"
    "                             (default /dev)\n"
    "  --log-level LEVEL          error|warning|notice|info|debug (default notice)\n"
    "  --log-kmsg                 log to /dev/kmsg (initramfs)\n"
    "  --ready-fd N               write a newline to fd N and close it once serving\n"
    "  --daemonize, --daemon, -d  run in the background: exit 0 once the daemon serves, or\n"
    "                             non-zero with its error (stdin/stdout to /dev/null, stderr\n"
    "                             kept for the log)\n"
    "Serving means the control socket (and netlink, when on) is bound: a request sent from then\n"
    "on is answered. With NOTIFY_SOCKET set, READY=1 is sent there too (sd_notify).\n";

}  // namespace

int ReportError(absl::string_view command, const absl::Status& status) {
  absl::string_view message = status.message();
  // FlagReader's messages already start with the command's name.
  const std::string prefix = absl::StrCat(command, ": ");
  if (absl::StartsWith(message, prefix)) message.remove_prefix(prefix.size());
  std::fprintf(stderr, "hotring %s: %s\n", std::string(command).c_str(),
               std::string(message).c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

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
  FlagReader flags("daemon", args);
  auto parse = [&]() -> absl::Status {
    while (flags.Next()) {
      const std::string& f = flags.flag();
      HOTRING_ASSIGN_OR_RETURN(const bool modules_flag,
                               modules::ParseModulesFlag(flags, modules_options));
      if (modules_flag) continue;
      if (f == "--help") {
        std::fputs(kDaemonUsage.data(), stdout);
        std::fputs(modules::kModulesDaemonUsage.data(), stdout);
        std::exit(0);
      } else if (f == "--socket") {
        HOTRING_ASSIGN_OR_RETURN(options.socket, flags.String());
      } else if (f == "--config") {
        HOTRING_ASSIGN_OR_RETURN(rules_options.config.file, flags.String());
        rules_enabled = true;
      } else if (f == "--dev-root") {
        HOTRING_ASSIGN_OR_RETURN(rules_options.dev_root, flags.String());
        rules_enabled = true;
      } else if (f == "--dev-root-placeholders") {
        HOTRING_RETURN_IF_ERROR(flags.NoValue());
        rules_options.nodes = rules::DevNodes::kPlaceholders;
      } else if (f == "--firmware-root") {
        HOTRING_ASSIGN_OR_RETURN(rules_options.firmware_root, flags.String());
      } else if (f == "--users-root") {
        HOTRING_ASSIGN_OR_RETURN(rules_options.users_root, flags.String());
      } else if (f == "--rules-shell") {
        HOTRING_ASSIGN_OR_RETURN(rules_options.shell, flags.String());
      } else if (f == "--exec") {
        HOTRING_ASSIGN_OR_RETURN(options.exec_program, flags.String());
      } else if (f == "--event-timeout") {
        HOTRING_ASSIGN_OR_RETURN(options.event_timeout, flags.Seconds());
      } else if (f == "--kill-grace") {
        HOTRING_ASSIGN_OR_RETURN(options.kill_grace, flags.Seconds());
      } else if (f == "--children-max") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(1, 4096));
        options.children_max = static_cast<size_t>(n);
      } else if (f == "--ring-entries") {
        // Not in the usage: for fault tests that overflow the completion queue.
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(1, 4096));
        options.ring_entries = static_cast<unsigned>(n);
      } else if (f == "--max-pending") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(1, 10'000'000));
        options.max_pending = static_cast<size_t>(n);
      } else if (f == "--reorder-timeout") {
        HOTRING_ASSIGN_OR_RETURN(options.reorder_timeout, flags.Seconds());
      } else if (f == "--expect-seqnum") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(0, INT64_MAX));
        options.expect_seqnum = static_cast<uint64_t>(n);
      } else if (f == "--seqnum-file") {
        HOTRING_ASSIGN_OR_RETURN(options.seqnum_file, flags.String());
      } else if (f == "--no-netlink") {
        HOTRING_RETURN_IF_ERROR(flags.NoValue());
        options.netlink = false;
      } else if (f == "--netlink-rcvbuf") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(4096, INT32_MAX / 2));
        options.netlink_rcvbuf = static_cast<int>(n);
      } else if (f == "--netlink-fd") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(0, INT32_MAX));
        // Ours from here, and not for whatever the daemon starts (as --ready-fd).
        if (::fcntl(static_cast<int>(n), F_SETFD, FD_CLOEXEC) != 0) {
          return flags.Error(absl::StrCat("--netlink-fd ", n, ": ", std::strerror(errno)));
        }
        options.netlink_fd = UniqueFd(static_cast<int>(n));
      } else if (f == "--netlink-trust-userspace") {
        HOTRING_RETURN_IF_ERROR(flags.NoValue());
        options.netlink_trust_userspace = true;
      } else if (f == "--sysfs-root") {
        HOTRING_ASSIGN_OR_RETURN(options.sysfs_root, flags.String());
      } else if (f == "--rebroadcast") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(2, 32));
        options.rebroadcast_group = static_cast<uint32_t>(n);
      } else if (f == "--udev-compat") {
        HOTRING_RETURN_IF_ERROR(flags.NoValue());
        udev_compat = true;
      } else if (f == "--udev-run") {
        HOTRING_ASSIGN_OR_RETURN(udev_options.run_dir, flags.String());
      } else if (f == "--record-timeline") {
        HOTRING_ASSIGN_OR_RETURN(options.record_timeline, flags.String());
      } else if (f == "--timeline-keep") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(0, 10'000'000));
        options.timeline_keep = static_cast<size_t>(n);
      } else if (f == "--probe-dev-root") {
        HOTRING_ASSIGN_OR_RETURN(options.probe_dev_root, flags.String());
      } else if (f == "--log-level") {
        HOTRING_ASSIGN_OR_RETURN(const std::string name, flags.String());
        if (!ParseLogLevel(name, &level)) return flags.Error("unknown log level " + name);
      } else if (f == "--log-kmsg") {
        HOTRING_RETURN_IF_ERROR(flags.NoValue());
        sink = LogSink::kKmsg;
      } else if (f == "--ready-fd") {
        HOTRING_ASSIGN_OR_RETURN(const int64_t n, flags.IntInRange(0, INT32_MAX));
        ready_fd = static_cast<int>(n);
      } else if (f == "--daemonize" || f == "--daemon" || f == "-d") {
        HOTRING_RETURN_IF_ERROR(flags.NoValue());
        daemonize = true;
      } else {
        return flags.Unknown();
      }
    }
    return absl::OkStatus();
  };
  if (absl::Status parsed = parse(); !parsed.ok()) return ReportError("daemon", parsed);
  if (udev_compat && options.rebroadcast_group == udev::kUdevMonitorGroup) {
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

namespace {

int TriggerCommand(const std::vector<std::string>& args) {
  // --socket names the daemon that --settle waits for; the rest is trigger's own.
  std::string socket(kDefaultSocket);
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socket = args[++i];
    } else if (absl::StartsWith(args[i], "--socket=")) {
      socket = args[i].substr(9);
    } else {
      rest.push_back(args[i]);
    }
  }
  TriggerEnvironment env;
  env.settle = [socket](absl::Duration timeout) {
    absl::Status settled = Settle(socket, timeout);
    if (absl::IsDeadlineExceeded(settled)) {
      std::fprintf(stderr, "hotring trigger: still pending after %s:\n",
                   absl::FormatDuration(timeout).c_str());
      (void)PrintPending(socket, stderr);
    }
    return settled;
  };
  return RunTrigger(rest, env);
}

struct Command {
  absl::string_view name;
  int (*run)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"daemon", DaemonCommand},         {"send", SendCommand},
    {"settle", SettleCommand},         {"control", ControlCommandMain},
    {"monitor", MonitorCommand},       {"trigger", TriggerCommand},
    {"report", ReportCommand},
    {"record", replay::RecordCommand}, {"replay", replay::ReplayCommand},
};

}  // namespace

bool IsHotplugCommand(const std::string& command) {
  for (const Command& c : kCommands) {
    if (c.name == command) return true;
  }
  return false;
}

int RunHotplugCommand(const std::string& command, const std::vector<std::string>& args) {
  for (const Command& c : kCommands) {
    if (c.name == command) return c.run(args);
  }
  std::fprintf(stderr, "hotring: unknown command '%s'\n", command.c_str());
  return 2;
}

bool IsHotplugBench(const std::string& name) {
  return name == "events" || name == "coldplug" || name == "startup" || name == "rules" ||
         name == "modules" || name == "memory";
}

int RunHotplugBench(const std::string& name, const std::vector<std::string>& args) {
  if (name == "events") return BenchEventsCommand(args);
  if (name == "coldplug") return BenchColdplugCommand(args);
  if (name == "startup") return BenchStartupCommand(args);
  if (name == "rules") return bench::BenchRulesCommand(args);
  if (name == "modules") return bench::BenchModulesCommand(args);
  if (name == "memory") return bench::BenchMemoryCommand(args);
  std::fprintf(stderr, "hotring: bench '%s' is not available in this build\n", name.c_str());
  return 2;
}

int RunAsUeventHelper(const std::vector<std::string>& args) {
  std::vector<std::string> send_args = {"--autostart"};
  send_args.insert(send_args.end(), args.begin(), args.end());
  return SendCommand(send_args);
}

}  // namespace hotring::hotplug

// `hotring daemon`: its flags, then the daemon through the one launcher (hotplug/daemon/
// launch.h) with the handler chain the flags ask for. The flags and the launch are shared with
// the systemd-udevd drop-in (daemon_config.h).
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
#include "hotplug/cli/daemon_config.h"
#include "hotplug/cli/handler_chain.h"
#include "hotplug/daemon/daemon.h"
#include "hotplug/daemon/launch.h"
#include "hotplug/udev/monitor.h"

namespace hotring::hotplug {
namespace {

// `--udev-control[=PATH]`'s default: where udevadm and libudev look.
constexpr char kUdevControl[] = "/run/udev/control";

// The queue file beside a udev control socket: udevadm and libudev look for them side by side.
std::string QueueBeside(const std::string& control) {
  return control.substr(0, control.rfind('/') + 1) + "queue";
}

// The event flow's own flags: sockets, ordering, bounds, timeline.
void AddFlowFlags(FlagSet& flags, DaemonOptions& options) {
  flags
      .String("--socket", "PATH|@NAME", &options.socket,
              "control socket (default /run/hotring/control)")
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
             [&options](absl::string_view v) -> absl::Status {
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
      .String("--record-timeline", "FILE", &options.record_timeline,
              "write one line per event transition to FILE (hotring report)")
      .Int("--timeline-keep", "N", &options.timeline_keep, 0, 10'000'000,
           "timeline lines kept in memory for `report` (default 4096)")
      .String("--probe-dev-root", "DIR", &options.probe_dev_root,
              "where DEVNAME nodes are for settle --for LABEL=, PARTUUID=.. (default /dev)")
      .OptionalValue("--udev-control", "PATH",
                     "serve udev 252's control socket (udevadm control, udevadm settle) at PATH "
                     "(default /run/udev/control), and the queue file beside it",
                     [&options](std::optional<absl::string_view> v) -> absl::Status {
                       options.udev_control = v.has_value() ? std::string(*v) : kUdevControl;
                       if (options.udev_control.empty() || options.udev_control[0] != '/') {
                         return absl::InvalidArgumentError("wants an absolute path");
                       }
                       if (options.udev_queue.empty()) {
                         options.udev_queue = QueueBeside(options.udev_control);
                       }
                       return absl::OkStatus();
                     })
      .OptionalValue("--udev-queue", "PATH",
                     "keep udevd's queue file at PATH (default /run/udev/queue) while events are "
                     "held, queued or running (libudev's udev_queue, udevadm settle)",
                     [&options](std::optional<absl::string_view> v) -> absl::Status {
                       options.udev_queue = v.has_value() ? std::string(*v) : "/run/udev/queue";
                       if (options.udev_queue.empty() || options.udev_queue[0] != '/') {
                         return absl::InvalidArgumentError("wants an absolute path");
                       }
                       return absl::OkStatus();
                     });
}

// How the daemon logs and tells its starter that it serves.
void AddProcessFlags(FlagSet& flags, DaemonConfig& config) {
  flags
      .Value("--log-level", "LEVEL", "error|warning|notice|info|debug (default notice)",
             [&config](absl::string_view v) {
               if (!ParseLogLevel(std::string(v), &config.level)) {
                 return absl::InvalidArgumentError(absl::StrCat("unknown log level ", v));
               }
               return absl::OkStatus();
             })
      .Store("--log-kmsg", &config.sink, std::optional<LogSink>(LogSink::kKmsg),
             "log to /dev/kmsg (initramfs)")
      .Value("--log-file", "FILE", "append the log to FILE (with the time of each line)",
             [&config](absl::string_view v) {
               if (v.empty()) return absl::InvalidArgumentError("--log-file needs a file name");
               config.sink = LogSink::kFile;
               config.log_path = std::string(v);
               return absl::OkStatus();
             })
      .Store("--log-syslog", &config.sink, std::optional<LogSink>(LogSink::kSyslog),
             "log to syslog (/dev/log, facility daemon)")
      .Int("--ready-fd", "N", &config.ready_fd, 0, INT32_MAX,
           "write a newline to fd N and close it once serving")
      .Bool("--daemonize|--daemon|-d", &config.daemonize,
            "run in the background: exit 0 once the daemon serves, or non-zero with its error; "
            "then stdin, stdout and stderr go to /dev/null and the log to /dev/kmsg (nowhere "
            "when it cannot be opened) unless --log-file, --log-syslog or --log-kmsg say")
      .Text("Serving means the control socket (and netlink, when on) is bound: a request sent "
            "from then")
      .Text("on is answered. With NOTIFY_SOCKET set, READY=1 is sent there too (sd_notify).");
}

// Where the daemon logs: where a flag says; else stderr in the foreground, and /dev/kmsg once
// daemonized (as udevd --daemon), or nowhere when /dev/kmsg cannot be opened there. A --log-file
// or --log-syslog that cannot be opened is a start-up error.
absl::Status SetUpLogging(const DaemonConfig& config) {
  const LogSink sink = config.sink.value_or(config.daemonize ? LogSink::kKmsg : LogSink::kStderr);
  const absl::Status logging = InitLogging(sink, config.level, config.log_tag, config.log_path);
  if (logging.ok() || sink != LogSink::kKmsg) return logging;
  if (!config.daemonize) {
    (void)InitLogging(LogSink::kStderr, config.level, config.log_tag);
    LogWarning("cannot log to /dev/kmsg (%s); logging to stderr", logging.ToString());
    return absl::OkStatus();
  }
  (void)InitLogging(LogSink::kNone, config.level);
  if (config.sink.has_value()) {
    // Asked for: the caller's stderr is still ours until the daemon serves.
    std::fprintf(stderr, "%s: cannot log to /dev/kmsg (%s); not logging\n",
                 config.log_tag.c_str(), logging.ToString().c_str());
  }
  return absl::OkStatus();
}


}  // namespace

void AddDaemonFlags(FlagSet& flags, DaemonConfig& config) {
  AddFlowFlags(flags, config.daemon);
  AddChainFlags(flags, config.chain);
  AddProcessFlags(flags, config);
}

int LaunchConfiguredDaemon(DaemonConfig config, LaunchOptions launch) {
  if (config.chain.udev_compat && config.daemon.rebroadcast_group == udev::kUdevMonitorGroup) {
    // libudev would take the kernel-format copies on group 2 for udev's own announcements.
    return ReportError(launch.name, absl::InvalidArgumentError(
                                        "--rebroadcast 2 and --udev-compat both send on group 2"));
  }
  launch.daemonize = config.daemonize;
  launch.ready_fd = config.ready_fd;
  if (const char* notify_socket = std::getenv("NOTIFY_SOCKET"); notify_socket != nullptr) {
    launch.notify_socket = notify_socket;
  }
  ::unsetenv("NOTIFY_SOCKET");  // ours alone: nothing we start may report in our name
  launch.setup = [&config] { return SetUpLogging(config); };
  const std::string sysfs_root = config.daemon.sysfs_root;
  launch.make_handler = [&config, &sysfs_root] {
    return BuildHandlerChain(std::move(config.chain), sysfs_root);
  };
  return LaunchDaemon(std::move(config.daemon), std::move(launch));
}

int DaemonCommand(const std::vector<std::string>& args) {
  DaemonConfig config;
  FlagSet flags("daemon", "usage: hotring daemon [options]");
  AddDaemonFlags(flags, config);
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  LaunchOptions launch;
  launch.name = "hotring daemon";
  return LaunchConfiguredDaemon(std::move(config), std::move(launch));
}

}  // namespace hotring::hotplug

#include "hotplug/rules/mdev_applet.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/log.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/rules/device.h"
#include "hotplug/rules/engine.h"
#include "hotplug/rules/firmware.h"
#include "hotplug/rules/mdev_scan.h"
#include "hotplug/rules/mdev_seq.h"
#include "hotplug/rules/rule_set.h"
#include "hotplug/rules/rules_handler.h"
#include "hotplug/devroot/user_db.h"

extern char** environ;

namespace hotring::hotplug::rules {
namespace {

constexpr char kUsage[] =
    "Usage: mdev [-vS] { [-s] | [-df] }\n"
    "\n"
    "\t-v\tVerbose\n"
    "\t-S\tLog to the kernel log (/dev/kmsg) too\n"
    "\t-s\tScan /sys and populate /dev\n"
    "\t-d\tDaemon, listen on netlink\n"
    "\t-f\tRun in foreground\n"
    "\n"
    "Bare mdev is a kernel hotplug helper. To activate it:\n"
    "\techo /sbin/mdev >/proc/sys/kernel/hotplug\n"
    "\n"
    "It uses /etc/mdev.conf (then /etc/mdev.conf.d/*.conf) with lines\n"
    "\t[-][ENV=regex;]...DEVNAME UID:GID PERM [>|=PATH]|[!] [@|$|*PROG]\n"
    "where DEVNAME is device name regex, @major,minor[-minor2], or\n"
    "environment variable regex.\n"
    "\n"
    "If /dev/mdev.seq file exists, mdev will wait for its value\n"
    "to match $SEQNUM variable. This prevents plug/unplug races.\n"
    "To activate this feature, create empty /dev/mdev.seq at boot.\n";

constexpr char kDevRoot[] = "/dev";
constexpr char kSysRoot[] = "/sys";
constexpr char kConfig[] = "/etc/mdev.conf";

struct Flags {
  bool scan = false;
  bool syslog = false;
  bool daemon = false;
  bool foreground = false;
  int verbose = 0;
};

// getopt32("sSdfv"): bundled short options; the first non-option ends them (the rest is
// ignored, as busybox ignores it). False on an unknown option.
bool ParseFlags(const std::vector<std::string>& args, Flags& flags) {
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') break;
    for (size_t i = 1; i < arg.size(); ++i) {
      switch (arg[i]) {
        case 's': flags.scan = true; break;
        case 'S': flags.syslog = true; break;
        case 'd': flags.daemon = true; break;
        case 'f': flags.foreground = true; break;
        case 'v': ++flags.verbose; break;
        default:
          std::fprintf(stderr, "mdev: invalid option -- '%c'\n", arg[i]);
          return false;
      }
    }
  }
  return true;
}

void Warn(absl::string_view message) {
  std::fprintf(stderr, "mdev: %.*s\n", static_cast<int>(message.size()), message.data());
}

// The kernel starts its hotplug helper without stdin/stdout/stderr: give the missing ones
// /dev/null so that nothing we open lands on fd 0..2 (busybox's bb_sanitize_stdio).
void SanitizeStdio() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) continue;
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd < 0) return;  // a bare /dev: carry on without
    if (null_fd != fd) {
      ::dup2(null_fd, fd);
      ::close(null_fd);
    }
  }
}

using EnvPairs = std::vector<std::pair<std::string, std::string>>;

EnvPairs ProcessEnvironment() {
  EnvPairs env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos || eq == 0) continue;
    env.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

// Sets `key` in `env` (the first occurrence, or appended), as putenv does.
void SetEnv(EnvPairs& env, absl::string_view key, absl::string_view value) {
  for (auto& [k, v] : env) {
    if (k == key) {
      v.assign(value.data(), value.size());
      return;
    }
  }
  env.emplace_back(std::string(key), std::string(value));
}

std::optional<absl::string_view> GetEnv(const EnvPairs& env, absl::string_view key) {
  for (const auto& [k, v] : env) {
    if (k == key) return absl::string_view(v);
  }
  return std::nullopt;
}

// `/bin/sh -c TEXT` with the command's environment, waited for, as busybox's system() call:
// stdio inherited, SIGINT and SIGQUIT ignored by us while it runs.
void RunCommand(const Command& command, int verbose) {
  if (verbose > 0) Warn(absl::StrCat("running: ", command.text));
  std::vector<char*> envp;
  envp.reserve(command.envp.size() + 1);
  for (const std::string& e : command.envp) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char sh[] = "sh";
  char dash_c[] = "-c";
  std::string text = command.text;
  char* argv[] = {sh, dash_c, text.data(), nullptr};

  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction old_int = {};
  struct sigaction old_quit = {};
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGQUIT);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, "/bin/sh", nullptr, &attr, argv, envp.data());
  posix_spawnattr_destroy(&attr);
  if (err == 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  } else if (err != ENOENT && err != EACCES) {
    // No shell is what system() reports as exit 127, silently; anything else is a failure to
    // start at all, which busybox reports.
    Warn(absl::StrCat("can't run '", command.text, "': ", std::strerror(err)));
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
}

// What every mode shares: the rules, the dev root, how to plan.
struct Context {
  RuleSet rules;
  DevRoot root;
  PlanOptions plan_options;
  int verbose = 0;
};

// Plans and carries out one device: '$' commands before removal, nodes, then '@' commands.
// Returns the plan's firmware to load, if any.
std::optional<std::string> Execute(const Context& ctx, const Device& device) {
  EventPlan plan = PlanEvent(ctx.rules, device, ctx.plan_options);
  for (const std::string& reason : plan.refused) Warn(reason);
  const bool remove = plan.action == DeviceAction::kRemove;
  if (remove) {
    for (const Command& command : plan.commands) RunCommand(command, ctx.verbose);
  }
  const NodeReport report = ApplyNodes(ctx.root, plan);
  for (const std::string& error : report.errors) Warn(error);
  if (!remove) {
    for (const Command& command : plan.commands) RunCommand(command, ctx.verbose);
  }
  return std::move(plan.firmware);
}

absl::StatusOr<RuleSet> LoadMdevRules() {
  HOTRING_ASSIGN_OR_RETURN(UserDb users, UserDb::Load("/"));
  ParseOptions options;
  options.skip_bad_lines = true;  // busybox reports a bad line and goes on without it
  HOTRING_ASSIGN_OR_RETURN(RuleSet rules, LoadRules({.file = kConfig}, users, options));
  for (const std::string& warning : rules.warnings()) Warn(warning);
  return rules;
}

// mdev (no arguments): the event in our environment.
int HandleEnvironmentEvent(const Context& ctx) {
  const EnvPairs env = ProcessEnvironment();
  const std::optional<absl::string_view> action = GetEnv(env, "ACTION");
  const std::optional<absl::string_view> devpath = GetEnv(env, "DEVPATH");
  if (!action || !devpath) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  SeqTicket ticket;
  if (const std::optional<absl::string_view> seqnum = GetEnv(env, "SEQNUM")) {
    // atoll: the leading digits; "" or junk is 0, as busybox reads it.
    uint64_t value = 0;
    for (char c : *seqnum) {
      if (c < '0' || c > '9') break;
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    ticket = WaitForSeqTurn(ctx.root.fd(), value);
  }

  Device device;
  device.action = ParseDeviceAction(*action);
  device.devpath = *devpath;
  device.subsystem = GetEnv(env, "SUBSYSTEM").value_or("");
  device.firmware = GetEnv(env, "FIRMWARE").value_or("");
  device.env = env;
  const std::optional<absl::string_view> devname = GetEnv(env, "DEVNAME");
  const std::string sys_dir = absl::StrCat(kSysRoot, *devpath);
  // Busybox reads `dev` only for add (remove never needs the number), and `uevent` only
  // when DEVNAME is absent.
  const bool add = device.action == DeviceAction::kAdd;
  SysfsDeviceFiles files;
  if (add || !devname) files = ReadSysfsDevice(sys_dir, add, /*read_uevent=*/!devname);
  if (devname) {
    device.name = *devname;
  } else if (std::optional<absl::string_view> from_uevent = DevnameFromUevent(files.uevent)) {
    device.name = *from_uevent;
  } else {
    device.name = LastComponent(sys_dir);
  }
  if (add && !files.dev.empty()) device.number = ParseDevNumber(files.dev);

  const std::optional<std::string> firmware = Execute(ctx, device);
  if (add && firmware) {
    absl::StatusOr<FirmwareOutcome> loaded =
        LoadFirmwareBlocking({.firmware_root = "/lib/firmware", .sysfs_root = kSysRoot},
                             device.devpath, *firmware);
    if (!loaded.ok()) Warn(loaded.status().message());
  }
  ticket.Finish();
  return 0;
}

// mdev -s: every device under /sys/dev, with ACTION=add and the device's SUBSYSTEM in the
// environment rules and commands see (and no DEVPATH, as busybox gives none).
void ScanAll(const Context& ctx) {
  EnvPairs env = ProcessEnvironment();
  SetEnv(env, "ACTION", "add");
  // Busybox keeps the last subsystem it found when a device has no subsystem link.
  std::string subsystem;
  bool have_subsystem = false;
  const absl::Status walked =
      ScanSysDev(absl::StrCat(kSysRoot, "/dev"), [&](const ScannedDevice& scanned) {
        if (scanned.subsystem) {
          subsystem.assign(scanned.subsystem->data(), scanned.subsystem->size());
          have_subsystem = true;
          SetEnv(env, "SUBSYSTEM", subsystem);
        }
        Device device;
        device.action = DeviceAction::kAdd;
        // "/sys/dev/block/8:0" -> "/dev/block/8:0": "/block/" in it makes a block node.
        device.devpath = scanned.path.substr(std::strlen(kSysRoot));
        device.subsystem = have_subsystem ? absl::string_view(subsystem) : absl::string_view();
        device.name = scanned.name;
        if (!scanned.dev.empty()) device.number = ParseDevNumber(scanned.dev);
        device.env = env;
        (void)Execute(ctx, device);
      });
  if (!walked.ok()) Warn(walked.message());
}

// mdev -d: the daemon with mdev's defaults. Like busybox, the netlink socket is open before the
// scan (no uevent falls between them) and the caller gets control back only once the scan is
// done (the daemon says it is ready after it).
int RunDaemon(std::shared_ptr<Context> ctx, const Flags& flags,
              const MdevDaemonRunner& run_daemon) {
  MdevDaemon daemon;
  daemon.handler.config.file = kConfig;
  daemon.handler.dev_root = kDevRoot;
  daemon.handler.sysfs_root = kSysRoot;
  // The control socket where hotring's clients look for it; in a root with no /run (a bare
  // chroot), an abstract socket of the same name instead.
  struct stat run_dir;
  daemon.socket = ::stat("/run", &run_dir) != 0 || !S_ISDIR(run_dir.st_mode)
                      ? "@/run/hotring/control"
                      : "/run/hotring/control";
  daemon.sysfs_root = kSysRoot;
  daemon.foreground = flags.foreground;
  daemon.syslog = flags.syslog;
  daemon.level = flags.verbose >= 2   ? LogLevel::kDebug
                 : flags.verbose == 1 ? LogLevel::kInfo
                                      : LogLevel::kWarning;  // busybox says nothing
  // Commands' stdin is /dev/null, which the handler opens when it is made. In an empty /dev the
  // scan comes first, to make /dev/null from /sys/dev/char/1:3 (the window between scan and
  // netlink socket is then open, as it is not otherwise).
  daemon.scan_first = ::access("/dev/null", F_OK) != 0;
  daemon.scan = [ctx] { ScanAll(*ctx); };
  return run_daemon(std::move(daemon));
}

}  // namespace

int RunMdevApplet(const std::vector<std::string>& args, const MdevDaemonRunner& run_daemon) {
  for (const std::string& arg : args) {
    if (arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  Flags flags;
  if (!ParseFlags(args, flags)) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  SanitizeStdio();
  // The configuration's modes exactly, whatever our caller's umask.
  ::umask(0);
  if (::chdir(kDevRoot) != 0) {
    Warn(absl::StrCat("can't change directory to '", kDevRoot, "': ", std::strerror(errno)));
    return 1;
  }
  absl::StatusOr<RuleSet> rules = LoadMdevRules();
  if (!rules.ok()) {
    Warn(rules.status().message());
    return 1;
  }
  absl::StatusOr<DevRoot> root = DevRoot::Open(kDevRoot);
  if (!root.ok()) {
    Warn(root.status().message());
    return 1;
  }
  auto ctx = std::make_shared<Context>(
      Context{.rules = std::move(*rules), .root = std::move(*root), .verbose = flags.verbose});
  if (flags.daemon || flags.scan) {
    // The device holding "/" gets a "root" link (busybox, scan only).
    struct stat st;
    if (::stat("/", &st) == 0) {
      ctx->plan_options.root_device =
          DevNumber{.major = ::major(st.st_dev), .minor = ::minor(st.st_dev)};
    }
  }
  if (flags.daemon) return RunDaemon(std::move(ctx), flags, run_daemon);
  if (flags.scan) {
    ScanAll(*ctx);
    return 0;
  }
  return HandleEnvironmentEvent(*ctx);
}

}  // namespace hotring::hotplug::rules

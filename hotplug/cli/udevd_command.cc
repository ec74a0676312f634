// `systemd-udevd` / `udevd` (argv[0], or `hotring udevd`): a drop-in for systemd-udevd 252, so
// that an initramfs or a board image that runs `systemd-udevd --daemon`, `udevadm trigger`,
// `udevadm settle` and `udevadm control --exit` runs hotring. It reads udevd's settings where
// udevd does (udevd_options.h), turns them into `hotring daemon` flags (udev's control socket and
// queue file, udev compatibility, modules, children_max, the event timeout, the level), adds
// /etc/hotring/udevd.args, and runs the daemon through the one launcher, with hotring's own
// control socket at its usual path (`hotring send`, `settle --for` and `report` keep working).
// Logging as udevd 252 does (log.c's "auto" target): /dev/kmsg when stderr is the journal's or
// SYSTEMD_LOG_TARGET asks for the kernel log, else the console (stderr); --daemon then points
// stdin and stdout, and below the debug level stderr too, at /dev/null once it serves, so a
// daemonized udevd says little after "ready", as udevd says nothing after "Starting".
#include <sched.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/flags.h"
#include "core/log.h"
#include "hotplug/cli/commands.h"
#include "hotplug/cli/daemon_config.h"
#include "hotplug/cli/udevd_options.h"
#include "hotplug/udevrules/rule_files.h"

namespace hotring::hotplug {
namespace {

// The udev whose interfaces the drop-in serves: what `--version` prints, as udevadm 252's
// `--version` prints its major number, for scripts that compare it.
constexpr char kServedVersion[] = "252";
constexpr char kName[] = "udevd";

// A missing file reads as empty (udevd goes on without it); any other error is said.
absl::StatusOr<std::string> ReadOptionalFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return std::string();
    return absl::FailedPreconditionError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// systemd's in_initrd(): $SYSTEMD_IN_INITRD (a boolean, or "lenient": the file alone) or
// /etc/initrd-release on a root that is tmpfs or ramfs.
bool InInitrd() {
  bool lenient = false;
  if (const char* e = std::getenv("SYSTEMD_IN_INITRD"); e != nullptr && *e != '\0') {
    bool value = false;
    if (absl::SimpleAtob(e, &value)) return value;
    lenient = absl::string_view(e) == "lenient";
  }
  struct stat st;
  if (::stat("/etc/initrd-release", &st) != 0) return false;
  if (lenient) return true;
  struct statfs fs;
  constexpr long kTmpfsMagic = 0x01021994;
  constexpr long kRamfsMagic = static_cast<long>(0x858458f6);
  return ::statfs("/", &fs) == 0 &&
         (static_cast<long>(fs.f_type) == kTmpfsMagic || static_cast<long>(fs.f_type) == kRamfsMagic);
}

// JOURNAL_STREAM="DEV:INODE" names stderr when systemd connected it to the journal.
bool StderrIsJournal() {
  const char* e = std::getenv("JOURNAL_STREAM");
  if (e == nullptr) return false;
  struct stat st;
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return absl::string_view(e) == absl::StrCat(st.st_dev, ":", st.st_ino);
}

// Where udevd's log.c would write: the kernel log or the console. One change on purpose: udevd
// --daemon below the debug level points its console at /dev/null before it reads the rules, so
// its rule warnings are lost; here they go to the kernel log instead (dmesg has them, a `quiet`
// boot's console does not).
LogSink UdevdLogSink(bool debug, bool daemonize) {
  if (debug) return LogSink::kStderr;  // --debug: the console
  const char* target = std::getenv("SYSTEMD_LOG_TARGET");
  const absl::string_view t = target == nullptr ? "auto" : target;
  if (t == "kmsg" || t == "journal" || t == "journal-or-kmsg" || t == "syslog" ||
      t == "syslog-or-kmsg") {
    return LogSink::kKmsg;  // no journal or syslog here: their fallback
  }
  if (t == "auto" && (::getpid() == 1 || StderrIsJournal() || daemonize)) return LogSink::kKmsg;
  return LogSink::kStderr;
}

unsigned OnlineCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return static_cast<unsigned>(CPU_COUNT(&set));
}

uint64_t PhysicalMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * page_size : 0;
}

}  // namespace

int UdevdCommand(const std::vector<std::string>& args) {
  // The hidden path options say where udev.conf is, which comes before the command line.
  UdevdSettings paths;
  (void)ApplyUdevdArgs(args, paths, nullptr);
  UdevdSettings settings;
  settings.udev_conf = paths.udev_conf;
  settings.kernel_cmdline = paths.kernel_cmdline;
  settings.hotring_args = paths.hotring_args;
  absl::StatusOr<udevrules::UdevConf> conf = udevrules::ReadUdevConf(settings.udev_conf);
  if (!conf.ok()) return ReportError(kName, conf.status());
  ApplyUdevConf(*conf, settings);
  if (const char* level = std::getenv("SYSTEMD_LOG_LEVEL"); level != nullptr) {
    ApplyLogLevelEnvironment(level, settings);
  }
  if (absl::Status parsed = ApplyUdevdArgs(args, settings, stdout); !parsed.ok()) {
    return ReportError(kName, parsed);
  }
  if (settings.help_shown) return 0;
  if (settings.version) {
    std::printf("%s\n", kServedVersion);
    return 0;
  }
  absl::StatusOr<std::string> cmdline = ReadOptionalFile(settings.kernel_cmdline);
  if (!cmdline.ok()) {
    settings.warnings.push_back(absl::StrCat("cannot read the kernel command line: ",
                                             cmdline.status().message(), ", ignoring"));
  } else {
    ApplyKernelCmdline(*cmdline, InInitrd(), settings);
  }
  if (::geteuid() != 0) {
    return ReportError(kName, absl::PermissionDeniedError("this program requires root privileges"));
  }

  std::vector<std::string> daemon_args =
      UdevdDaemonArgs(settings, UdevdDefaultChildrenMax(OnlineCpus(), PhysicalMemory()));
  if (cmdline.ok() && settings.kernel_cmdline != "/proc/cmdline") {
    // The modules stage reads the kernel command line too (modprobe.blacklist=, options).
    daemon_args.insert(daemon_args.end(),
                       {"--kernel-cmdline", std::string(absl::StripAsciiWhitespace(*cmdline))});
  }
  absl::StatusOr<std::string> extra = ReadOptionalFile(settings.hotring_args);
  if (!extra.ok()) return ReportError(kName, extra.status());
  const std::vector<std::string> extra_args = ParseArgsFile(*extra);
  daemon_args.insert(daemon_args.end(), extra_args.begin(), extra_args.end());

  DaemonConfig config;
  FlagSet flags(kName, "");
  AddDaemonFlags(flags, config);
  if (absl::StatusOr<FlagsParsed> parsed = flags.Parse(daemon_args, nullptr); !parsed.ok()) {
    return ReportError(kName, absl::InvalidArgumentError(absl::StrCat(
                                  settings.hotring_args, ": ", parsed.status().message())));
  }
  config.daemonize = settings.daemonize;
  config.sink = UdevdLogSink(settings.debug, settings.daemonize);
  config.log_tag = kName;
  LaunchOptions launch;
  launch.name = kName;
  // udevd's make_null_stdio() when daemonized below the debug level.
  launch.detach_stdout = true;
  launch.detach_stderr = config.level != LogLevel::kDebug;
  // Said once logging is set up, in the process that serves.
  const std::vector<std::string> warnings = settings.warnings;
  const bool names_late = settings.resolve_names != udevrules::ResolveNames::kEarly;
  launch.before_ready = [warnings, names_late] {
    for (const std::string& warning : warnings) LogWarning("%s", warning);
    if (names_late) LogInfo("--resolve-names: user and group names are resolved when read");
  };
  return LaunchConfiguredDaemon(std::move(config), std::move(launch));
}

}  // namespace hotring::hotplug

#include "hotplug/cli/udevd_options.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/flags.h"

namespace hotring::hotplug {
namespace {

// hotring's log level names for a syslog level (the ones above error become error).
absl::string_view HotringLevelName(int syslog_level) {
  static const char* const kNames[] = {"error", "error",  "error", "error",
                                       "warning", "notice", "info", "debug"};
  return kNames[std::clamp(syslog_level, 0, 7)];
}

void SetChildrenMax(absl::string_view value, absl::string_view where, UdevdSettings& s) {
  unsigned n = 0;
  if (absl::SimpleAtoi(value, &n)) {
    s.children_max = n;
  } else {
    s.warnings.push_back(absl::StrCat("failed to parse ", where, " value '", value, "', ignoring"));
  }
}

void SetDuration(absl::string_view value, absl::string_view where, absl::Duration* out,
                 UdevdSettings& s) {
  absl::Duration d;
  if (udevrules::ParseSeconds(value, &d)) {
    *out = d;
  } else {
    s.warnings.push_back(absl::StrCat("failed to parse ", where, " value '", value, "', ignoring"));
  }
}

void SetTimeoutSignal(absl::string_view value, absl::string_view where, UdevdSettings& s) {
  int signal = 0;
  if (udevrules::ParseSignalName(value, &signal)) {
    s.timeout_signal = signal;
  } else {
    s.warnings.push_back(absl::StrCat("failed to parse ", where, " value '", value, "', ignoring"));
  }
}

void SetLogLevel(absl::string_view value, absl::string_view where, UdevdSettings& s) {
  int level = 0;
  if (udevrules::ParseSyslogLevel(value, &level)) {
    s.log_level = level;
  } else {
    s.warnings.push_back(absl::StrCat("failed to parse ", where, " value '", value, "', ignoring"));
  }
}

// The kernel's own splitting of the command line: blanks separate words, double quotes group
// (and are dropped).
std::vector<std::string> CmdlineWords(absl::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false;
  bool any = false;
  for (const char c : text) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (any) words.push_back(std::move(word));
      word.clear();
      any = false;
    } else {
      word.push_back(c);
      any = true;
    }
  }
  if (any) words.push_back(std::move(word));
  return words;
}

// systemd's proc_cmdline_key_streq: '-' and '_' are the same.
bool KeyIs(absl::string_view key, absl::string_view want) {
  if (key.size() != want.size()) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    const char a = key[i] == '-' ? '_' : key[i];
    const char b = want[i] == '-' ? '_' : want[i];
    if (a != b) return false;
  }
  return true;
}

}  // namespace

void ApplyUdevConf(const udevrules::UdevConf& conf, UdevdSettings& settings) {
  if (conf.log_level.has_value()) settings.log_level = *conf.log_level;
  if (conf.children_max.has_value()) settings.children_max = *conf.children_max;
  if (conf.event_timeout.has_value()) settings.event_timeout = *conf.event_timeout;
  if (conf.resolve_names.has_value()) settings.resolve_names = *conf.resolve_names;
  if (conf.timeout_signal.has_value()) settings.timeout_signal = *conf.timeout_signal;
  settings.warnings.insert(settings.warnings.end(), conf.warnings.begin(), conf.warnings.end());
}

void ApplyLogLevelEnvironment(absl::string_view value, UdevdSettings& settings) {
  SetLogLevel(value, "$SYSTEMD_LOG_LEVEL", settings);
}

absl::Status ApplyUdevdArgs(const std::vector<std::string>& args, UdevdSettings& s,
                            std::FILE* help_out) {
  FlagSet flags("udevd", "usage: systemd-udevd [OPTIONS...]\n\n"
                         "Rule-based manager for device events and files (hotring's udevd).");
  bool exec_delay_refused = false;
  flags.Bool("--version|-V", &s.version, "print the version of udevd served (252)")
      .Bool("--daemon|-d", &s.daemonize,
            "detach and run in the background: exit 0 once serving, or non-zero with the error")
      .Bool("--debug|-D", &s.debug, "enable debug output")
      .Value("--children-max|-c", "INT", "set the maximum number of events handled at once",
             [&s](absl::string_view v) {
               SetChildrenMax(v, "--children-max=", s);
               return absl::OkStatus();
             })
      .Value("--exec-delay|-e", "SECONDS",
             "seconds to wait before executing RUN=: only 0 (hotring never delays on purpose)",
             [&s, &exec_delay_refused](absl::string_view v) {
               SetDuration(v, "--exec-delay=", &s.exec_delay, s);
               exec_delay_refused = s.exec_delay != absl::ZeroDuration();
               return absl::OkStatus();
             })
      .Value("--event-timeout|-t", "SECONDS",
             "seconds to wait before terminating an event (default 180)",
             [&s](absl::string_view v) {
               SetDuration(v, "--event-timeout=", &s.event_timeout, s);
               return absl::OkStatus();
             })
      .Value("--resolve-names|-N", "early|late|never", "when to resolve users and groups",
             [&s](absl::string_view v) {
               if (std::optional<udevrules::ResolveNames> when = udevrules::ParseResolveNames(v);
                   when.has_value()) {
                 s.resolve_names = *when;
               } else {
                 s.warnings.push_back(
                     absl::StrCat("invalid --resolve-names= value '", v, "', ignoring"));
               }
               return absl::OkStatus();
             })
      .Value("--timeout-signal", "SIGNAL", "accepted (hotring sends SIGTERM, then SIGKILL)",
             [&s](absl::string_view v) {
               SetTimeoutSignal(v, "--timeout-signal=", s);
               return absl::OkStatus();
             })
      .String("--udev-conf", "FILE", &s.udev_conf, "")
      .Hidden()
      .String("--proc-cmdline", "FILE", &s.kernel_cmdline, "")
      .Hidden()
      .String("--hotring-args", "FILE", &s.hotring_args, "")
      .Hidden()
      .Text("")
      .Text("Also read: /etc/udev/udev.conf, $SYSTEMD_LOG_LEVEL, the kernel command line")
      .Text("(udev.log_level, udev.children_max, udev.event_timeout, udev.exec_delay, net.ifnames;")
      .Text("rd.udev.* in an initrd), and /etc/hotring/udevd.args: `hotring daemon` flags, one a")
      .Text("line, that add to or override what the options above become.");
  absl::StatusOr<FlagsParsed> parsed = flags.Parse(args, help_out);
  if (!parsed.ok()) return parsed.status();
  s.help_shown = *parsed == FlagsParsed::kHelpShown;
  if (exec_delay_refused) {
    return flags.Error(absl::StrCat("--exec-delay=", absl::FormatDuration(s.exec_delay),
                                    " is not supported: RUN programs are never delayed on "
                                    "purpose (only 0 is accepted)"));
  }
  return absl::OkStatus();
}

void ApplyKernelCmdline(absl::string_view cmdline, bool in_initrd, UdevdSettings& s) {
  for (const std::string& word : CmdlineWords(cmdline)) {
    absl::string_view key = word;
    std::optional<absl::string_view> value;
    if (const size_t eq = key.find('='); eq != absl::string_view::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    // rd.KEY is for the initrd alone (systemd's PROC_CMDLINE_STRIP_RD_PREFIX).
    if (absl::ConsumePrefix(&key, "rd.") && !in_initrd) continue;
    if (KeyIs(key, "net.ifnames")) {
      bool on = false;
      if (value.has_value() && absl::SimpleAtob(*value, &on)) {
        s.net_ifnames = on;
      } else {
        s.warnings.push_back(absl::StrCat("failed to parse ", word, ", ignoring"));
      }
      continue;
    }
    if (!absl::StartsWith(key, "udev.")) continue;
    if (!value.has_value()) {
      s.warnings.push_back(absl::StrCat("missing value for ", key, ", ignoring"));
      continue;
    }
    if (KeyIs(key, "udev.log_level") || KeyIs(key, "udev.log_priority")) {
      SetLogLevel(*value, key, s);
    } else if (KeyIs(key, "udev.children_max")) {
      SetChildrenMax(*value, key, s);
    } else if (KeyIs(key, "udev.event_timeout")) {
      SetDuration(*value, key, &s.event_timeout, s);
    } else if (KeyIs(key, "udev.exec_delay")) {
      absl::Duration delay;
      SetDuration(*value, key, &delay, s);
      if (delay != absl::ZeroDuration()) {
        s.warnings.push_back(absl::StrCat(word, ": RUN programs are never delayed on purpose, "
                                          "ignoring"));
      }
    } else if (KeyIs(key, "udev.timeout_signal")) {
      SetTimeoutSignal(*value, key, s);
    } else {
      s.warnings.push_back(
          absl::StrCat("unknown udev kernel command line option \"", key, "\", ignoring"));
    }
  }
}

unsigned UdevdDefaultChildrenMax(unsigned cpus, uint64_t memory_bytes) {
  const uint64_t cpu_limit = static_cast<uint64_t>(std::max(cpus, 1u)) * 2 + 16;
  const uint64_t memory_limit = std::max<uint64_t>(memory_bytes / (128ull << 20), 10);
  return static_cast<unsigned>(std::min<uint64_t>({cpu_limit, memory_limit, 2048}));
}

std::vector<std::string> UdevdDaemonArgs(const UdevdSettings& s, unsigned default_children_max) {
  std::vector<std::string> args = {"--udev-control", "--udev-compat"};
  const unsigned children = s.children_max > 0 ? s.children_max : default_children_max;
  args.insert(args.end(),
              {"--children-max", absl::StrCat(std::clamp(children, 1u, 4096u)),
               "--event-timeout",
               absl::StrCat(absl::ToDoubleSeconds(
                   std::min(s.event_timeout, absl::Hours(24 * 365))))});
  // udev.conf's resolve_names is already in s (ApplyUdevConf), the command line's over it.
  args.insert(args.end(), {"--udev-resolve-names", std::string(udevrules::ResolveNamesName(s.resolve_names))});
  const int level = s.debug ? 7 : s.log_level.value_or(6);
  args.insert(args.end(), {"--log-level", std::string(HotringLevelName(level))});
  return args;
}

std::vector<std::string> ParseArgsFile(absl::string_view text) {
  std::vector<std::string> args;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    args.emplace_back(line);
  }
  return args;
}

}  // namespace hotring::hotplug

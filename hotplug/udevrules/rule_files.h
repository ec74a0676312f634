// Where udev rules come from: the rules directories (a name in an earlier directory hides the
// same name in later ones, only "*.rules", all read in lexical order of their names, an empty
// file or a link to /dev/null masks), and udev.conf. As systemd-udevd 252 finds them.
#ifndef HOTRING_HOTPLUG_UDEVRULES_RULE_FILES_H_
#define HOTRING_HOTPLUG_UDEVRULES_RULE_FILES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace hotring::hotplug::udevrules {

// udev 252's rules directories, the first winning: /etc, /run, /usr/local/lib, /usr/lib, /lib.
[[nodiscard]] std::vector<std::string> DefaultRulesDirs();

// One rules file that takes part. Owns its strings.
struct RulesFile {
  std::string name;  // "50-udev-default.rules"
  std::string path;  // the file that wins for this name
  // A link to /dev/null or an empty file: it hides the name and contributes nothing.
  bool masked = false;
};

// The files of `dirs` (highest priority first) in the order udev reads them. A directory that
// does not exist is skipped; one that cannot be read is an error. Hidden names (".x.rules") and
// entries that are neither files nor links are left out, as udev does.
[[nodiscard]] absl::StatusOr<std::vector<RulesFile>> ListRulesFiles(
    absl::Span<const std::string> dirs);

// When OWNER/GROUP names become numbers (udev.conf resolve_names, udevd --resolve-names).
enum class ResolveNames { kEarly, kLate, kNever };

// "early", "late", "never" (udev.conf's and udevd's spelling); nullopt for anything else.
[[nodiscard]] std::optional<ResolveNames> ParseResolveNames(absl::string_view text);
[[nodiscard]] absl::string_view ResolveNamesName(ResolveNames when);

// The settings of udev.conf that mean something here. Unset fields keep udevd's defaults.
struct UdevConf {
  std::optional<int> log_level;  // udev_log, as a syslog level 0..7
  std::optional<unsigned> children_max;
  std::optional<absl::Duration> event_timeout;
  std::optional<ResolveNames> resolve_names;
  std::optional<int> timeout_signal;  // a signal number
  // Values udevd would ignore with a warning ("FILE:LINE: ..."); they are ignored here too.
  std::vector<std::string> warnings;
};

// udev.conf's text (systemd's environment-file syntax: KEY=VALUE, '#' and ';' comments, quotes,
// '\' joining lines). exec_delay is refused: an error naming the file and line, since running
// RUN programs late on purpose is not something this implementation does.
[[nodiscard]] absl::StatusOr<UdevConf> ParseUdevConf(absl::string_view text,
                                                      absl::string_view file_name);

// Reads and parses `path`; a missing file is an empty UdevConf, as for udevd.
[[nodiscard]] absl::StatusOr<UdevConf> ReadUdevConf(const std::string& path = "/etc/udev/udev.conf");

// systemd's parse_sec: "180", "3min", "1s 500ms", "2.5s"; false when malformed.
[[nodiscard]] bool ParseSeconds(absl::string_view text, absl::Duration* out);

// systemd's log_level_from_string: "emerg" .. "debug" or 0..7, as a syslog level.
[[nodiscard]] bool ParseSyslogLevel(absl::string_view text, int* level);

// systemd's signal_from_string for the signals a timeout may send: "SIGKILL", "KILL" or a number.
[[nodiscard]] bool ParseSignalName(absl::string_view text, int* signal);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_RULE_FILES_H_

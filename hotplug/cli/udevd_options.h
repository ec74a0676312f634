// The systemd-udevd drop-in's settings, from where udevd 252 takes them and in its order (each
// later one wins): udev.conf, SYSTEMD_LOG_LEVEL, the command line, the kernel command line
// (udev.* always, rd.udev.* only in an initrd), then --debug. And how they become `hotring
// daemon` flags. Pure: given the texts, no I/O.
#ifndef HOTRING_HOTPLUG_CLI_UDEVD_OPTIONS_H_
#define HOTRING_HOTPLUG_CLI_UDEVD_OPTIONS_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "hotplug/udevrules/rule_files.h"

namespace hotring::hotplug {

// What the drop-in was told. Owns its strings.
struct UdevdSettings {
  bool daemonize = false;      // -d/--daemon
  bool debug = false;          // -D/--debug: debug level, logs on the console, stdio kept
  bool version = false;        // -V/--version
  bool help_shown = false;     // -h/--help was printed
  std::optional<int> log_level;               // a syslog level 0..7; unset: info, as udevd
  unsigned children_max = 0;                  // 0: udevd's default (UdevdDefaultChildrenMax)
  absl::Duration event_timeout = absl::Seconds(180);
  absl::Duration exec_delay;                  // only 0 is carried out
  udevrules::ResolveNames resolve_names = udevrules::ResolveNames::kEarly;
  std::optional<int> timeout_signal;          // --timeout-signal, udev.timeout_signal
  std::optional<bool> net_ifnames;            // net.ifnames=0|1
  // Paths the hidden options change (tests, image builders).
  std::string udev_conf = "/etc/udev/udev.conf";
  std::string kernel_cmdline = "/proc/cmdline";
  std::string hotring_args = "/etc/hotring/udevd.args";
  // What udevd would log and go on after ("Failed to parse ..., ignoring").
  std::vector<std::string> warnings;
};

// udev.conf (udevrules::ReadUdevConf) into the settings; its warnings are kept.
void ApplyUdevConf(const udevrules::UdevConf& conf, UdevdSettings& settings);

// $SYSTEMD_LOG_LEVEL ("info", "7"), as udevd's log_parse_environment reads it.
void ApplyLogLevelEnvironment(absl::string_view value, UdevdSettings& settings);

// udevd 252's command line: -d, -D, -c N, -e SECONDS, -t SECONDS, -N early|late|never,
// --timeout-signal=SIG, -h, -V (getopt_long syntax). A value udevd would ignore with a warning
// is ignored with one here; an unknown option is InvalidArgument, as for udevd, and so is a
// non-zero --exec-delay (delaying RUN programs on purpose is not something hotring does; the
// kernel command line's udev.exec_delay is ignored with a warning instead, so that a boot
// prompt cannot leave a machine without its device manager). --help goes to `help_out` (null:
// nowhere).
[[nodiscard]] absl::Status ApplyUdevdArgs(const std::vector<std::string>& args,
                                          UdevdSettings& settings, std::FILE* help_out);

// The kernel command line: udev.log_level (or udev.log_priority), udev.children_max,
// udev.event_timeout, udev.exec_delay, udev.timeout_signal, and net.ifnames; with `in_initrd`,
// the same keys with rd. in front too. Words are split as the kernel does (double quotes
// group); '-' and '_' are the same in keys; a later word wins. Unknown udev.* keys and bad
// values are warnings.
void ApplyKernelCmdline(absl::string_view cmdline, bool in_initrd, UdevdSettings& settings);

// udevd 252's children_max when none is set: 2 per CPU + 16, at most one per 128 MiB of memory
// (at least 10), at most 2048.
[[nodiscard]] unsigned UdevdDefaultChildrenMax(unsigned cpus, uint64_t memory_bytes);

// The `hotring daemon` flags the settings become: the udev control socket and queue file, udev
// compatibility, children_max, the event timeout, the kernel command line's file.
[[nodiscard]] std::vector<std::string> UdevdDaemonArgs(const UdevdSettings& settings,
                                                       unsigned default_children_max);

// The words of /etc/hotring/udevd.args (one `hotring daemon` argument a line; blank lines and
// lines starting with '#' are skipped), which add to or override the translated flags.
[[nodiscard]] std::vector<std::string> ParseArgsFile(absl::string_view text);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLI_UDEVD_OPTIONS_H_

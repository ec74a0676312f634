// `hotring trigger`: coldplug. Asks the kernel to re-send uevents for devices that already
// exist by writing an action into each object's `uevent` file, in udevadm trigger's order
// (subsystems, then devices with parents before children; see sysfs.h).
//
//   hotring trigger [--sysfs-root DIR] [--action ACTION] [--type all|devices|subsystems]
//                   [--subsystem-match GLOB]... [--subsystem-nomatch GLOB]...
//                   [--sysname-match GLOB]... [--attr-match ATTR[=GLOB]]...
//                   [--drivers-first] [--dry-run] [--verbose] [--settle [--timeout SECONDS]]
//                   [--needed [--config FILE] [--modules-root DIR] [--kernel-version V]]
//
// --needed replays `add` only for the devices the rules or the module loader will act on, and
// their parents (trigger_needed.h); modules, buses and drivers are never replayed then.
// --drivers-first writes devices that wait for a driver (a modalias, no driver; USB and SD
// host controllers first) before the rest, with --needed too: after the rules are loaded, before
// the module index and the walk (their loads are what takes long). With --needed they are
// written whether or not a module matches them, and before their parents: the needed walk's
// parents-first order holds for the rest.
//
// Output: with --verbose each uevent file as it is written; with --dry-run each write it would
// do ("ACTION -> PATH"; with --needed "DEVPATH  why" instead); every failure on stderr; then one
// summary line on stdout:
//   "[needed: N of D devices[, K waiting for a driver written first]; ]N triggered, M failed
//    [ (REASON: COUNT, ...)][, V vanished]"
// (the reasons when M > 0, the vanished part when V > 0). On a terminal, and without --verbose, a
// progress line is redrawn while writing. A device that disappears before it could be
// triggered is counted as vanished, not failed: there is nothing left to trigger, as udevadm
// sees it.
//
// Exit code: 0 when every write succeeded (and, with --settle, the daemon settled); 1 when a
// write failed, sysfs could not be walked, or settling failed or timed out; 2 for bad
// arguments (nothing is written).
#ifndef HOTRING_HOTPLUG_COLDPLUG_TRIGGER_H_
#define HOTRING_HOTPLUG_COLDPLUG_TRIGGER_H_

#include <cstddef>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "hotplug/sysfs.h"

namespace hotring::hotplug {

inline constexpr absl::Duration kDefaultSettleTimeout = absl::Seconds(120);

// Waits until the daemon on `socket` ("": the default one) has nothing queued, held or running,
// as `hotring settle` does. Returns OK once settled, DeadlineExceeded when `timeout` passed
// first, or another error when the daemon could not be asked. Supplied by the CLI layer, which
// talks to the daemon.
using SettleFn = std::function<absl::Status(const std::string& socket, absl::Duration timeout)>;

struct TriggerOptions {
  std::string sysfs_root = std::string(kDefaultSysfsRoot);
  std::string action = "change";
  SysfsFilter filter;  // --type, --subsystem-match/-nomatch, --sysname-match, --attr-match
  // --drivers-first: before the walk, write into the devices that have a `modalias` and no
  // bound driver (under bus/*/devices/; shallowest DEVPATH first, so controllers come before
  // what sits below them), so the module loads they cause, the long pole of a boot, start
  // before the other few hundred objects are walked and written; then everything
  // else in udevadm's order (those devices are not written twice). Only without subsystem,
  // sysname and attribute patterns; with them it changes nothing.
  bool drivers_first = false;
  bool dry_run = false;
  bool verbose = false;
  bool settle = false;
  absl::Duration settle_timeout = kDefaultSettleTimeout;
  std::string socket;  // --socket: the daemon --settle waits for; empty: the default one
  // --needed: only devices the rules or a missing module make worth an `add`, and parents.
  bool needed = false;
  // With `needed`: also every device with a node and every network interface, needed or not:
  // what `settle --for` (DEVNAME=, LABEL=, UUID=, SUBSYSTEM=net) and root= wait for, which a
  // device never replayed would never satisfy. `hotring init` sets it; there is no flag.
  bool needed_keeps_waitable = false;
  std::string config = "/etc/mdev.conf";  // its rules (and FILE.d/*.conf); missing: default
  std::string modules_root;               // ROOT/lib/modules/VERSION and ROOT's modprobe.d
  std::string kernel_version;             // empty: the running kernel's
};

// Parses the arguments after `trigger` (`--opt VALUE` or `--opt=VALUE`; udevadm's short forms
// -c -t -s -S -y -a -n -v -w too). InvalidArgument with a one-line message for an unknown
// option, a missing or bad value, an unknown action, a positional argument, or flags that do
// not go together. nullopt: --help/-h printed the usage on `help_out`.
absl::StatusOr<std::optional<TriggerOptions>> ParseTriggerArgs(
    const std::vector<std::string>& args, std::FILE* help_out = stdout);
[[nodiscard]] std::string TriggerUsage();

// What a run did.
struct TriggerReport {
  size_t triggered = 0;  // written (in a dry run: would have been)
  size_t failed = 0;     // write failed, or the object could not be read while walking
  size_t vanished = 0;   // gone between listing and writing
  std::map<std::string, size_t> failure_reasons;  // strerror text (or "unreadable") -> count
  std::vector<std::string> written;               // uevent paths, in write order
  // --needed: the devices looked at (those the filters keep), of which `triggered` + `failed`
  // + `vanished` were picked.
  std::optional<size_t> devices_considered;
  size_t devices_needed = 0;
  // --needed with --drivers-first: devices written by the first pass (waiting for a driver,
  // needed or not), among the devices considered but not in `devices_needed`.
  size_t devices_first = 0;
  // When the first write succeeded (for the boot report: how long the walk kept the first
  // device waiting).
  std::optional<MonoTime> first_write;
};

// Where a run prints, and the daemon hook for --settle.
struct TriggerEnvironment {
  FILE* out = stdout;
  FILE* err = stderr;
  SettleFn settle;  // empty: --settle is refused as a bad argument
  // Called once the devices waiting for a driver are written (--drivers-first; also when
  // there were none or the pass is off), before the rest is read and written. The boot's init
  // waits there for the daemon's start-up on a one-CPU machine.
  std::function<void()> after_drivers_first;
  // Redraw a progress line; default: when `out` is a terminal.
  std::optional<bool> progress;
};

// Walks and writes (or, with dry_run, only prints). An error only when sysfs cannot be walked
// at all; individual failures are counted in the report and printed on env.err.
absl::StatusOr<TriggerReport> Trigger(const TriggerOptions& options,
                                      const TriggerEnvironment& env);

// "N triggered, M failed (reason: count, ...), V vanished" (dry run: "N would be triggered"),
// after "needed: N of D devices; " with --needed.
[[nodiscard]] std::string FormatTriggerSummary(const TriggerReport& report, bool dry_run);

// `hotring trigger ARGS` with stdout/stderr and no daemon hook (--settle is refused).
int RunTrigger(const std::vector<std::string>& args);
// The same with explicit output streams and --settle hook; returns the exit code.
int RunTrigger(const std::vector<std::string>& args, const TriggerEnvironment& env);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_COLDPLUG_TRIGGER_H_

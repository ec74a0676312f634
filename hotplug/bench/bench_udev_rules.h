// `hotring bench udev-rules` (to be wired): the udev rules engine on a rule set and devices.
// Compiles the rules (Debian's /lib/udev/rules.d by default) several times, then runs an "add"
// event for every device through them, pass after pass, over a host that caches what it read
// of sysfs (so that the figure is the engine's, not the file system's); programs are not run
// (counted) and builtins other than input_id, path_id and usb_id fail (counted). Reports the
// compile time, microseconds per event, and heap allocations per event when the binary counts
// them.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_UDEV_RULES_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_UDEV_RULES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hotring::hotplug::bench {

struct UdevRulesBenchOptions {
  std::vector<std::string> rules_dirs = {"/lib/udev/rules.d"};
  std::string sysfs = "/sys";
  // The devices to run; empty: every device under SYSFS/devices.
  std::vector<std::string> devpaths;
  // Where OWNER/GROUP names of the rules resolve ("ROOT/etc/passwd", "ROOT/etc/group").
  std::string names_root = "/";
  // Run hotring's builtins (input_id, path_id, usb_id, reading sysfs through the cache), or let
  // every builtin fail at once (the engine alone).
  bool builtins = true;
  int compile_rounds = 10;
  int passes = 50;  // over every device; the first warms caches and is not counted
  // Heap allocations so far, when the binary counts them (operator new); empty: not reported.
  std::function<uint64_t()> allocations;
};

struct UdevRulesBenchReport {
  size_t files = 0;
  size_t rules = 0;
  size_t tokens = 0;
  size_t load_errors = 0;
  size_t load_warnings = 0;
  double compile_ms_median = 0;
  double compile_ms_min = 0;
  size_t devices = 0;
  size_t events = 0;           // counted events (passes after the first, times devices)
  double us_per_event = 0;     // CPU time of the thread per counted event
  double allocations_per_event = -1;  // -1: not counted
  double lines_applied_per_event = 0;
  uint64_t programs_not_run = 0;   // per pass
  uint64_t builtins_failed = 0;    // per pass (not input_id, path_id, usb_id)
};

[[nodiscard]] absl::StatusOr<UdevRulesBenchReport> RunUdevRulesBench(const UdevRulesBenchOptions& options);
[[nodiscard]] std::string FormatUdevRulesReport(const UdevRulesBenchReport& report);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_UDEV_RULES_H_

// `hotring bench rules`: hotring as `mdev -s` against busybox's `mdev -s` on the same generated
// board (bench_rules_tree.h: a sysfs of 10,000 devices and a 40-line mdev.conf), each run in a
// chroot of that board as busybox's own test suite runs mdev, interleaved (the order alternates
// from run to run) over several runs, with /dev emptied before each. Every run's /dev must be
// identical to busybox's first one (names, types, numbers, owners, modes, link targets); the
// report says so, or lists the differences. Then rule matching alone, in this process: every
// scanned device matched against the same rule set (RuleSet::Match), and planned (PlanEvent).
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_RULES_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_RULES_H_

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/program_path.h"
#include "hotplug/bench/bench_rules_tree.h"

namespace hotring::hotplug::bench {

struct RulesBenchOptions {
  size_t devices = 10000;
  int runs = 5;
  std::string busybox = "/bin/busybox";  // a static busybox with the mdev applet
  std::string hotring = BesideThisProgram("hotring");  // a static hotring
  // Where the board is generated (a fresh directory inside it); tmpfs keeps disk I/O out.
  std::string work_dir = "/dev/shm";
  int match_rounds = 20;  // passes over every device for the matching figure
  bool keep = false;      // leave the board behind (its path is printed)
  bool json = false;
};

// One timed `mdev -s`.
struct MdevRun {
  absl::Duration wall;
  absl::Duration cpu;  // user + system of the child
  int exit_code = 0;
  size_t dev_entries = 0;            // entries in /dev afterwards
  std::vector<std::string> diffs;    // against busybox's first /dev; empty: identical
  std::string stderr_head;           // the first line it wrote to stderr, if any
};

struct RulesBenchReport {
  std::string board;  // where the board was
  BoardCounts counts;
  size_t scanned = 0;  // devices the matching figure covers (those under /sys/dev)
  std::vector<MdevRun> busybox;
  std::vector<MdevRun> hotring;
  double match_ns_per_event = 0;  // RuleSet::Match over every device
  double plan_ns_per_event = 0;   // PlanEvent (match + paths + commands) over every device
  size_t rules = 0;
};

// nullopt: --help printed the usage on `help_out`.
absl::StatusOr<std::optional<RulesBenchOptions>> ParseRulesBenchArgs(
    const std::vector<std::string>& args, std::FILE* help_out = stdout);
absl::StatusOr<RulesBenchReport> RunRulesBench(const RulesBenchOptions& options);
[[nodiscard]] std::string FormatRulesReport(const RulesBenchReport& report, bool json);

// The command: parses, runs, prints; exit code (1 when the /dev trees differ).
int BenchRulesCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_RULES_H_

// `hotring bench coldplug`: coldplug on the machine it runs on. Each run walks sysfs and writes
// the action (`change`: harmless) into every object's uevent file, as `hotring trigger` does, in
// four ways:
//   1. trigger only: no daemon (the walk and the writes; the kernel emits each uevent inside
//      the write);
//   2. a fresh daemon with no handler, listening on netlink, until it has handled every uevent;
//   3. the same with `--exec PROGRAM` (default /bin/true);
//   4. a serial baseline: one thread that receives the uevents from netlink and
//      posix_spawns + waits PROGRAM for each, one after another;
// and reports medians over the runs. The trigger always runs on the calling thread, after an
// untimed walk (so every timed walk finds sysfs in the caches), and each run starts with a
// different phase (so drift in the machine's load does not always hit the same one).
//
// When is a daemon done? `settle` alone is not enough: a write returns once the kernel has
// queued the uevent on every listening socket, but the daemon may not have read its socket yet
// when the settle request arrives, and is then idle with uevents still unread. So the bench
// keeps a netlink listener of its own: after the writes it counts the uevents queued on it
// (exactly what every listener in this network namespace got, other devices' uevents included,
// and none of the SEQNUMs that devices of other network namespaces used up, which a count
// from /sys/kernel/uevent_seqnum would include and wait for forever). The daemon is done when
// its status shows netlink_received at least that much higher than before the writes, and
// nothing held, queued or running. The bench asks `settle` (which waits without polling while
// handlers run) and checks the status after each answer; answers that came too early are
// counted (`early_settles`).
//
// Each daemon gets `--expect-seqnum` = <sysfs-root>/kernel/uevent_seqnum + 1, read just before
// it starts. The kernel's SEQNUM is global across network namespaces, so a namespace created
// elsewhere during a run leaves a gap this daemon never sees filled, and the daemon waits
// `--reorder-timeout` (5 s) for it; such runs are counted (`gap_runs`), not hidden.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_COLDPLUG_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_COLDPLUG_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/program_path.h"
#include "hotplug/coldplug/trigger.h"

namespace hotring::hotplug {

enum class ColdplugPhase { kTriggerOnly, kDaemonNoHandler, kDaemonExec, kSerialBaseline };
inline constexpr ColdplugPhase kColdplugPhases[] = {
    ColdplugPhase::kTriggerOnly, ColdplugPhase::kDaemonNoHandler, ColdplugPhase::kDaemonExec,
    ColdplugPhase::kSerialBaseline};

struct ColdplugBenchOptions {
  // Walked and written; <sysfs_root>/kernel/uevent_seqnum gives each daemon its first SEQNUM.
  std::string sysfs_root = "/sys";
  std::string action = "change";
  std::string program = "/bin/true";  // the handler of phases 3 and 4
  // --append-line PATH: the append_line handler (bazel-bin/hotplug/bench/append_line), copied
  // into a directory of its own and run instead of `program`; its log lines are counted.
  std::string append_line;
  int runs = 5;
  size_t children_max = 0;  // 0: the daemon's default
  absl::Duration settle_timeout = absl::Seconds(60);
  bool json = false;
  // The hotring binary the daemons run; tests point it at the runfiles copy.
  std::string daemon_binary = BesideThisProgram("hotring");
  // Added to every daemon's arguments.
  std::vector<std::string> daemon_args;
  // Count (and let the serial baseline handle) uevents from any sender, not only the kernel.
  // For tests that inject uevents in a private network namespace (with daemon_args
  // --netlink-trust-userspace); never on a real machine.
  bool trust_userspace = false;
  // Runs right after each write pass, inside the timed window. Tests use it to send the uevents
  // a kernel would have sent for the fake tree's writes. Empty on a real machine.
  std::function<absl::Status(const TriggerReport&)> after_writes;
};

// One phase of one run.
struct ColdplugMeasurement {
  ColdplugPhase phase = ColdplugPhase::kTriggerOnly;
  size_t triggered = 0;
  size_t failed = 0;
  size_t vanished = 0;
  std::string trigger_errors;  // what trigger printed on stderr (cut at a few KiB)
  // Datagrams on netlink group 1 from just before the first write to just after the last, and
  // how many of them were uevents to handle (from the kernel, not libudev's).
  uint64_t datagrams = 0;
  uint64_t uevents = 0;
  absl::Duration walk;     // start -> the first write returned (the walk and one write)
  absl::Duration writes;   // first write returned -> last write returned
  absl::Duration settled;  // first write returned -> everything handled (trigger only: writes)
  absl::Duration total;    // start -> everything handled (trigger only: walk + writes)
  // Events handled: the daemon's `handled` counter, or the baseline's handler runs.
  uint64_t handled = 0;
  uint64_t handler_failures = 0;  // failed or timed out
  // Daemon phases only.
  std::optional<absl::Duration> daemon_cpu;  // CPU time from just before the walk to settled
  // Phases with a handler: the handlers' CPU time (the daemon's reaped children; the serial
  // baseline's), and what handles the uevents plus the handlers: the daemon's CPU as in
  // daemon_cpu, or the baseline thread's (receive, posix_spawn, waitpid) from its start.
  std::optional<absl::Duration> handlers_cpu;
  std::optional<absl::Duration> cpu_with_handlers;
  // With --append-line: lines the handlers logged (one per run).
  std::optional<uint64_t> handler_lines;
  std::optional<int64_t> daemon_peak_rss_kib;
  uint64_t early_settles = 0;
  std::map<std::string, uint64_t> daemon_status;  // counters once settled
};

struct ColdplugBenchReport {
  std::vector<std::vector<ColdplugMeasurement>> runs;  // per run, in kColdplugPhases order
};

[[nodiscard]] absl::string_view ColdplugPhaseName(ColdplugPhase phase);

// Parses the arguments after `bench coldplug`: --sysfs-root DIR, --action ACTION, --exec
// PROGRAM, --append-line PATH, --runs N, --children-max N, --timeout SECONDS, --json.
// InvalidArgument for anything else, and for an action other than `change` on a real sysfs
// (CheckColdplugAction). nullopt: --help printed the usage on `help_out`.
absl::StatusOr<std::optional<ColdplugBenchOptions>> ParseColdplugBenchArgs(
    const std::vector<std::string>& args, std::FILE* help_out = stdout);

// Only `change` may be written into a real sysfs (add/remove would tell listeners that devices
// came or went); any action trigger knows may be written into a fake tree of regular files.
absl::Status CheckColdplugAction(absl::string_view sysfs_root, absl::string_view action);

// Runs options.runs runs of the four phases. An error when a phase cannot be carried out
// (walk impossible, daemon did not start or settle, listener overrun).
absl::StatusOr<ColdplugBenchReport> RunColdplugBench(const ColdplugBenchOptions& options);

// Medians per phase, the goal ratios and the caveats, as text or one JSON object.
[[nodiscard]] std::string FormatColdplugReport(const ColdplugBenchReport& report,
                                               const ColdplugBenchOptions& options);

// `hotring bench coldplug ARGS`: parses, runs, prints; returns the exit code.
int BenchColdplugCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_COLDPLUG_H_

// `hotring bench startup`: how long `hotring daemon` takes from fork+exec until it serves, as
// an init script or a test fixture sees it: to its --ready-fd newline, to the first answer of
// a `control status` started at the same moment, and to the exit of `daemon --daemonize`.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_STARTUP_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_STARTUP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/program_path.h"

namespace hotring::hotplug {

struct StartupBenchOptions {
  std::string binary = BesideThisProgram("hotring");  // the hotring to start
  int starts = 100;                                   // per series
  bool netlink = false;  // the daemon also binds the kernel uevent socket
};

// One way of starting the daemon, and how long each start took.
struct StartupSeries {
  std::string name;
  std::vector<absl::Duration> samples;  // in start order
};

// Runs the three series (and the CPU time of the first one's daemons), one start after another (each daemon is stopped and reaped before
// the next starts). An error if any start fails.
absl::StatusOr<std::vector<StartupSeries>> RunStartupBench(const StartupBenchOptions& options);

// The report: per series the count, min, median, p90 and max, in ms, and the machine's load
// average at the start and the end; or the same as one JSON object.
std::string FormatStartupReport(const std::vector<StartupSeries>& series, bool json,
                                absl::string_view load_start, absl::string_view load_end);

// Parses the bench's arguments, runs it, prints the report; returns the exit code.
int BenchStartupCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_STARTUP_H_

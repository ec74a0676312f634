// The facts `hotring init` prints on the console after coldplug: one human summary line and a
// block of `hotring-report: ` lines that the boot test and `bench boot` parse. Pure formatting:
// callers read the files and stat the nodes, these functions only turn values into lines.
//
// The block (each line starts with kReportPrefix):
//   time init_ms=T settled_ms=T           CLOCK_BOOTTIME at /init start and when settled
//   status KEY=VALUE ...                  the daemon's `control status` fields, in order
//   node PATH type=block|char|... rdev=MAJ:MIN uid=U gid=G mode=0NNN   (or `missing ERRNO`)
//   net NAME driver=DRIVER                one per /sys/class/net entry
//   input NAME name=TEXT path=SYSFS_PATH  one per /sys/class/input/inputN
//   modules NAME ...                      /proc/modules names, sorted
//   kmsg hotring_lines=N suppressed_notes=M   the daemon's lines in the kernel log, and the
//                                         kernel's notes of lines its rate limit dropped
//   cpu busy_ms=B idle_ms=I init_ms=P daemon_ms=D   from /init start to settled: the machine's
//                                         CPU time spent working and idle (all CPUs,
//                                         /proc/stat), and the CPU time of init and of the
//                                         daemon (/proc/PID/stat); 10 ms resolution
//   end
#ifndef HOTRING_HOTPLUG_BOOT_BOOT_REPORT_H_
#define HOTRING_HOTPLUG_BOOT_BOOT_REPORT_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hotring::hotplug::boot {

inline constexpr absl::string_view kReportPrefix = "hotring-report: ";

// The module names of /proc/modules text, sorted.
[[nodiscard]] std::vector<std::string> ParseProcModules(absl::string_view text);

// "node /dev/vda type=block rdev=254:0 uid=0 gid=6 mode=0640", from stat(2)'s fields.
[[nodiscard]] std::string NodeFact(absl::string_view path, const struct stat& st);
// "node /dev/vda missing ENOENT" (errno's name, or its number).
[[nodiscard]] std::string MissingNodeFact(absl::string_view path, int err);

// "status received=12 handled=12 ...": values have no spaces (they are counters).
[[nodiscard]] std::string StatusFact(
    const std::vector<std::pair<std::string, std::string>>& fields);

// Replaces spaces and control characters with '_', so one fact stays one word.
[[nodiscard]] std::string OneWord(absl::string_view text);

// The console summary: "hotring: settled N events in X ms; modules: M loaded; status:
// received=R handled=H failed=F" (N: the daemon's received counter; X: trigger to settled).
[[nodiscard]] std::string SummaryLine(
    const std::vector<std::pair<std::string, std::string>>& status, absl::Duration coldplug,
    size_t modules_loaded);

// CPU time from /proc/stat's first ("cpu ") line, in clock ticks: idle (idle + iowait) and
// busy (every other field but guest time, which is already counted in user).
struct CpuTicks {
  uint64_t busy = 0;
  uint64_t idle = 0;
};
// Zeros when the text has no parsable "cpu " line.
[[nodiscard]] CpuTicks ParseProcStatCpu(absl::string_view text);
// utime + stime of a /proc/PID/stat text, in clock ticks (0 when unparsable). The command
// name may hold spaces and parentheses: the fields start after the last ')'.
[[nodiscard]] uint64_t ParseProcPidCpuTicks(absl::string_view text);
// "cpu busy_ms=B idle_ms=I init_ms=P daemon_ms=D reactor_ms=R" (ticks of
// `ticks_per_second`): the machine's busy and idle time, /init's, the daemon's (every thread:
// the module loads run the drivers' inits in its pool threads), and the daemon's reactor
// thread's alone (receiving, ordering and handling the events).
[[nodiscard]] std::string CpuFact(const CpuTicks& start, const CpuTicks& end,
                                  uint64_t init_ticks, uint64_t daemon_ticks,
                                  uint64_t reactor_ticks, uint64_t ticks_per_second);

// The value of `key` in status fields, or "" when absent.
[[nodiscard]] std::string StatusValue(
    const std::vector<std::pair<std::string, std::string>>& fields, absl::string_view key);

}  // namespace hotring::hotplug::boot

#endif  // HOTRING_HOTPLUG_BOOT_BOOT_REPORT_H_

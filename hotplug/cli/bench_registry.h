// The benchmarks' table (core/command_table.h), the second binary's: hotring-bench holds every
// benchmark so that the board's binary (hotring) does not carry them. What hotring-bench
// dispatches on and lists; `hotring bench NAME` runs it.
#ifndef HOTRING_HOTPLUG_CLI_BENCH_REGISTRY_H_
#define HOTRING_HOTPLUG_CLI_BENCH_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/command_table.h"

namespace hotring::hotplug {

// Every benchmark (group "bench").
[[nodiscard]] absl::Span<const Command> BenchRegistry();

// hotring-bench's command line: `NAME ARGS` (or `bench NAME ARGS`, as `hotring bench` and the
// IPC benchmarks' own children say it); without a name, the list. Returns the exit code.
int BenchMain(const std::vector<std::string>& args);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLI_BENCH_REGISTRY_H_

// The one table of the hotring binary's commands (core/command_table.h): what `main` dispatches
// on (a program name, or the first argument), what `hotring --help` lists. A new command is one
// entry there; a new benchmark is one entry of hotring-bench's table (bench_registry.h).
#ifndef HOTRING_HOTPLUG_CLI_REGISTRY_H_
#define HOTRING_HOTPLUG_CLI_REGISTRY_H_

#include <string>

#include "absl/types/span.h"
#include "core/command_table.h"

namespace hotring::hotplug {

// Every command (group "") and the programs the binary is under another name (group
// "program": found by FindProgram only).
[[nodiscard]] absl::Span<const Command> CommandRegistry();

// `hotring --help`: the commands, from the table.
[[nodiscard]] std::string Usage();

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLI_REGISTRY_H_

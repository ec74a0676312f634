// A table of a program's commands: how the binary finds one (by its first argument, or by the
// name it was started under) and what its usage says of each. One table serves dispatch, the
// usage text and the list of benchmarks, so a new command is one entry in one place.
#ifndef HOTRING_CORE_COMMAND_TABLE_H_
#define HOTRING_CORE_COMMAND_TABLE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hotring {

// One command. Plain constant data: tables are constexpr arrays.
struct Command {
  // The group it is listed in: "" for a command of the binary, "bench" for a benchmark.
  absl::string_view group;
  // "--version|version": other names after the first are accepted too, and not listed.
  absl::string_view name;
  // What follows the name in the usage ("[-s|-d [-f]]"); may be empty.
  absl::string_view synopsis;
  // One line (or a few, '\n'-separated) for the usage text.
  absl::string_view summary;
  // Runs the command with its arguments (the name excluded); returns the exit code.
  int (*run)(const std::vector<std::string>& args);
  // Program names under which the binary is this command ("mdev|modprobe"): a symlink to the
  // binary named so runs it with argv[1..] as its arguments.
  absl::string_view program_names = "";
};

// The command named `name` in `group`; null when there is none.
[[nodiscard]] const Command* FindCommand(absl::Span<const Command> table, absl::string_view group,
                                         absl::string_view name);
// The command the binary is when started as `argv0` (its last path component is compared);
// null when none.
[[nodiscard]] const Command* FindProgram(absl::Span<const Command> table, absl::string_view argv0);
// "  name synopsis   summary" lines for every command of `group`, in table order.
[[nodiscard]] std::string CommandList(absl::Span<const Command> table, absl::string_view group);

}  // namespace hotring

#endif  // HOTRING_CORE_COMMAND_TABLE_H_

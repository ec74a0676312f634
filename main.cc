// hotring: one static binary, one command per job (hotplug/cli/registry.h). Started under a
// command's program name (a symlink: mdev, init, modprobe, hotring-send) it is that command.
#include <cstdio>
#include <string>
#include <vector>

#include "core/command_table.h"
#include "hotplug/cli/registry.h"

int main(int argc, char** argv) {
  using hotring::Command;
  const absl::Span<const Command> commands = hotring::hotplug::CommandRegistry();
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (const Command* program = hotring::FindProgram(commands, argc > 0 ? argv[0] : "")) {
    return program->run(args);
  }
  if (!args.empty()) {
    if (const Command* command = hotring::FindCommand(commands, "", args[0])) {
      return command->run(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    std::fprintf(stderr, "hotring: unknown command '%s'\n", args[0].c_str());
  }
  std::fputs(hotring::hotplug::Usage().c_str(), stderr);
  return 2;
}

// The IPC bench commands as a program of their own: `ipc_bench bench <name> args...`, the
// same command line as `hotring bench <name> ...`, so the all-in-one `uds` bench can start its
// server and clients from either executable.
#include <cstdio>
#include <string>
#include <vector>

#include "core/command_table.h"
#include "ipc/bench_cli.h"

int main(int argc, char** argv) {
  using hotring::Command;
  const Command* bench = argc >= 3 && std::string(argv[1]) == "bench"
                             ? hotring::FindCommand(hotring::ipc::IpcBenches(), "bench", argv[2])
                             : nullptr;
  if (bench == nullptr) {
    std::fprintf(stderr, "usage: ipc_bench bench NAME ...\n%s",
                 hotring::CommandList(hotring::ipc::IpcBenches(), "bench").c_str());
    return 2;
  }
  return bench->run(std::vector<std::string>(argv + 3, argv + argc));
}

// The IPC bench subcommands as a program of their own: `ipc_bench bench <name> args...`, the
// same command line as `hotring bench <name> ...`, so the all-in-one `uds` bench can start its
// server and clients from either executable.
#include <string>
#include <vector>

#include "ipc/bench_cli.h"

int main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "bench") {
    const char* usage = "usage: ipc_bench bench sysv|uds|uds-server|uds-client|dgram-fanin ...\n";
    return (void)fputs(usage, stderr), 2;
  }
  return hotring::ipc::RunIpcBench(argv[2], std::vector<std::string>(argv + 3, argv + argc));
}

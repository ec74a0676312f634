// The IPC benchmark subcommands: bench sysv, uds, uds-server, uds-client, dgram-fanin.
#ifndef HOTRING_IPC_BENCH_CLI_H_
#define HOTRING_IPC_BENCH_CLI_H_

#include <string>
#include <vector>

namespace hotring::ipc {

bool IsIpcBench(const std::string& name);

// Runs `hotring bench <name> args...`; returns the exit code.
int RunIpcBench(const std::string& name, const std::vector<std::string>& args);

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_BENCH_CLI_H_

// The IPC benchmark commands: bench sysv, uds, uds-server, uds-client, dgram-fanin. Each takes
// the arguments after its name and returns the exit code (0 done, 1 failed, 2 bad arguments,
// 128+N stopped by signal N).
#ifndef HOTRING_IPC_BENCH_CLI_H_
#define HOTRING_IPC_BENCH_CLI_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/command_table.h"

namespace hotring::ipc {

int BenchSysvCommand(const std::vector<std::string>& args);
int BenchUdsCommand(const std::vector<std::string>& args);
int BenchUdsServerCommand(const std::vector<std::string>& args);
int BenchUdsClientCommand(const std::vector<std::string>& args);
int BenchDgramFaninCommand(const std::vector<std::string>& args);

// The commands above as group "bench", for the programs that run them without the rest of
// hotring (ipc_bench, and test binaries that the uds bench starts as its server and clients).
// hotring's own registry lists them with every other command.
[[nodiscard]] absl::Span<const Command> IpcBenches();

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_BENCH_CLI_H_

#include "ipc/bench_cli.h"

#include <cstdio>

namespace hotring::ipc {

bool IsIpcBench(const std::string& name) { return false; }

int RunIpcBench(const std::string& name, const std::vector<std::string>& args) {
  std::fprintf(stderr, "hotring: bench '%s' is not available in this build\n", name.c_str());
  return 2;
}

}  // namespace hotring::ipc

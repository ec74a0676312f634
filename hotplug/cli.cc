#include "hotplug/cli.h"

#include <cstdio>

namespace hotring::hotplug {

bool IsHotplugCommand(const std::string& command) { return false; }
bool IsHotplugBench(const std::string& name) { return false; }

int RunHotplugCommand(const std::string& command, const std::vector<std::string>& args) {
  std::fprintf(stderr, "hotring: '%s' is not available in this build\n", command.c_str());
  return 2;
}

int RunHotplugBench(const std::string& name, const std::vector<std::string>& args) {
  std::fprintf(stderr, "hotring: bench '%s' is not available in this build\n", name.c_str());
  return 2;
}

int RunAsUeventHelper(const std::vector<std::string>& args) {
  return RunHotplugCommand("send", args);
}

}  // namespace hotring::hotplug

// `hotring trigger`: coldplug (hotplug/coldplug/trigger.h) with --settle asking the daemon.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotplug/cli/commands.h"
#include "hotplug/client/client.h"
#include "hotplug/coldplug/trigger.h"

namespace hotring::hotplug {

int TriggerCommand(const std::vector<std::string>& args) {
  TriggerEnvironment env;
  env.settle = [](const std::string& given, absl::Duration timeout) {
    const std::string socket = given.empty() ? std::string(kDefaultSocket) : given;
    absl::Status settled = Settle(socket, timeout);
    if (absl::IsDeadlineExceeded(settled)) {
      std::fprintf(stderr, "hotring trigger: still pending after %s:\n",
                   absl::FormatDuration(timeout).c_str());
      (void)PrintPending(socket, stderr);
    }
    return settled;
  };
  return RunTrigger(args, env);
}

}  // namespace hotring::hotplug

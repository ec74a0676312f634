// `hotring selfcheck`: whether this kernel's io_uring has what hotring needs.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/flags.h"
#include "hotplug/cli/commands.h"
#include "io/reactor.h"

namespace hotring::hotplug {

int SelfCheckCommand(const std::vector<std::string>& args) {
  FlagSet flags("selfcheck",
                "usage: hotring selfcheck\n"
                "  probes the kernel's io_uring and reports what hotring can use");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  if (!reactor.ok()) {
    std::fprintf(stderr, "hotring selfcheck: %s\n", reactor.status().ToString().c_str());
    return 1;
  }
  std::printf("io_uring ok: %s\n", (*reactor)->features().Describe().c_str());
  return 0;
}

}  // namespace hotring::hotplug

// hotring-bench: every benchmark (hotplug/cli/bench_registry.h), a binary of its own so that the
// board's binary does not carry them. The benchmarks that start a daemon start the hotring
// beside this program: what they time is the binary a board runs.
#include <string>
#include <vector>

#include "hotplug/cli/bench_registry.h"

int main(int argc, char** argv) {
  return hotring::hotplug::BenchMain(
      std::vector<std::string>(argv + (argc > 0 ? 1 : 0), argv + argc));
}

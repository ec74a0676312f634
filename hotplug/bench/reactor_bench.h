// `hotring bench reactor`: the reactor's own costs, measured on the machine it runs on.
#ifndef HOTRING_HOTPLUG_BENCH_REACTOR_BENCH_H_
#define HOTRING_HOTPLUG_BENCH_REACTOR_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hotring::hotplug::bench {

// One measured figure.
struct BenchFigure {
  std::string name;
  uint64_t operations = 0;
  double seconds = 0;
  [[nodiscard]] double ops_per_second() const { return operations / seconds; }
  [[nodiscard]] double ns_per_op() const { return seconds * 1e9 / operations; }
};

struct ReactorBenchOptions {
  uint64_t nops = 2'000'000;       // NOP round trips per figure
  uint64_t pingpongs = 200'000;    // socketpair round trips
  int batch = 64;                  // concurrent NOP tasks in the batched figure
};

// Runs the NOP (unbatched and batched) and socketpair ping-pong figures.
absl::StatusOr<std::vector<BenchFigure>> RunReactorBench(const ReactorBenchOptions& options);

// Prints figures as text lines or as one JSON object.
std::string FormatBenchFigures(const std::vector<BenchFigure>& figures, bool json);

// `hotring bench reactor ARGS`: parses, runs, prints; returns the exit code.
int BenchReactorCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_REACTOR_BENCH_H_

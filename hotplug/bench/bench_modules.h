// `hotring bench modules`: module resolution on the machine's own kernel tree. Reports
//   1. index ready: ModuleIndex::Load (map the .bin indexes, read modprobe.d and the kernel
//      command line) plus the resolver's set-up, median over runs;
//   2. resolution per alias with a fresh resolver (no cache warm): the MODALIAS strings of
//      this machine's devices (/sys/devices/**/modalias), a sample of modules.alias patterns,
//      and the same sample made concrete (each glob replaced by a literal a device would send);
//      then the machine's MODALIAS strings again on the warm resolver (negative cache);
//   3. the same queries resolved by kmod, one `modprobe -R` process each (what busybox mdev
//      and mdevd pay per event), for the machine's MODALIAS strings and part of the sample.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_MODULES_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_MODULES_H_

#include <string>
#include <vector>

namespace hotring::hotplug::bench {

// argv after `bench modules`; returns the exit code.
int BenchModulesCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_MODULES_H_

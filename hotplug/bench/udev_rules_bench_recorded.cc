// The udev rules benchmark (bench_udev_rules.h) over the recorded test devices
// (testing/udev_devices.h) with Debian's /lib/udev/rules.d, counting heap allocations.
//
//   bazel run //hotplug/bench:udev_rules_bench_recorded [-- RULES_DIR]
#include <cstdio>
#include <cstdlib>

#include "hotplug/bench/bench_udev_rules.h"
#include "testing/allocation_counter.h"
#include "testing/fake_sysfs.h"
#include "testing/udev_devices.h"

int main(int argc, char** argv) {
  absl::StatusOr<hotring::testing::FakeSysfs> sys = hotring::testing::FakeSysfs::Create();
  if (!sys.ok()) return 1;
  absl::StatusOr<std::vector<hotring::testing::CatalogDevice>> devices = hotring::testing::BuildUdevCatalog(*sys);
  if (!devices.ok()) {
    fprintf(stderr, "%s\n", std::string(devices.status().message()).c_str());
    return 1;
  }
  hotring::hotplug::bench::UdevRulesBenchOptions options;
  if (argc > 1) options.rules_dirs = {argv[1]};
  options.sysfs = sys->root();
  for (const auto& d : *devices) options.devpaths.push_back(d.devpath);
  options.allocations = [] { return hotring::testing::AllocationCount(); };
  for (const bool builtins : {true, false}) {
    options.builtins = builtins;
    absl::StatusOr<hotring::hotplug::bench::UdevRulesBenchReport> report =
        hotring::hotplug::bench::RunUdevRulesBench(options);
    if (!report.ok()) {
      fprintf(stderr, "%s\n", std::string(report.status().message()).c_str());
      return 1;
    }
    printf("== %s\n", builtins ? "with hotring's input_id, path_id, usb_id" : "the engine alone (every builtin fails)");
    fputs(hotring::hotplug::bench::FormatUdevRulesReport(*report).c_str(), stdout);
  }
  return 0;
}

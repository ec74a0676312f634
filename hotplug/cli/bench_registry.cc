#include "hotplug/cli/bench_registry.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hotplug/bench/bench_boot.h"
#include "hotplug/bench/bench_coldplug.h"
#include "hotplug/bench/bench_events.h"
#include "hotplug/bench/bench_memory.h"
#include "hotplug/bench/bench_modules.h"
#include "hotplug/bench/bench_rules.h"
#include "hotplug/bench/bench_startup.h"
#include "hotplug/bench/bench_udev_daemon.h"
#include "hotplug/bench/reactor_bench.h"
#include "ipc/bench_cli.h"

namespace hotring::hotplug {
namespace {

constexpr Command kBenchmarks[] = {
    {"bench", "reactor", "", "io_uring NOP and socketpair round trips",
     bench::BenchReactorCommand},
    {"bench", "events", "", "the daemon's event pipeline, without and with a handler",
     BenchEventsCommand},
    {"bench", "coldplug", "", "a coldplug of a sysfs tree through the daemon against a serial loop",
     BenchColdplugCommand},
    {"bench", "startup", "", "how soon a client started with the daemon is answered",
     BenchStartupCommand},
    {"bench", "rules", "", "mdev -s with the rules stage against busybox's mdev",
     bench::BenchRulesCommand},
    {"bench", "modules", "", "alias resolution against kmod's modprobe",
     bench::BenchModulesCommand},
    {"bench", "memory", "", "the daemon's memory idle and through a 100,000-event burst",
     bench::BenchMemoryCommand},
    {"bench", "udev-rules", "",
     "udevd's rules on a coldplug of this machine: the daemon against systemd-udevd\n"
     "(--guest: in qemu guests with 100 to 4,000 devices, testing/udevcompat/bench_scale.sh)",
     bench::BenchUdevRulesCommand},
    {"bench", "sysv", "", "IPC: SysV message queue ping-pong", ipc::BenchSysvCommand},
    {"bench", "uds", "", "IPC: Unix socket ping-pong (starts uds-server and uds-client)",
     ipc::BenchUdsCommand},
    {"bench", "uds-server", "", "IPC: the uds bench's server", ipc::BenchUdsServerCommand},
    {"bench", "uds-client", "", "IPC: the uds bench's client", ipc::BenchUdsClientCommand},
    {"bench", "dgram-fanin", "", "IPC: datagram fan-in, io_uring against select()",
     ipc::BenchDgramFaninCommand},
    {"bench", "boot", "",
     "boots qemu guests with hotring's and other initramfs images and compares\n"
     "them (testing/initramfs/bench_boot.sh of a checkout: run it from one)",
     bench::BenchBootCommand},
};

std::string BenchUsage() {
  return absl::StrCat(
      "usage: hotring bench NAME [options]     (hotring bench NAME --help: its options)\n"
      "       hotring-bench NAME [options]     (the same: hotring bench runs hotring-bench)\n"
      "Those that start hotring start the one beside hotring-bench (another: bench startup\n"
      "--binary, bench rules and bench boot --hotring).\n",
      CommandList(kBenchmarks, "bench"));
}

}  // namespace

absl::Span<const Command> BenchRegistry() { return kBenchmarks; }

int BenchMain(const std::vector<std::string>& all_args) {
  std::vector<std::string> args = all_args;
  if (!args.empty() && args[0] == "bench") args.erase(args.begin());
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(BenchUsage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const Command* bench = FindCommand(kBenchmarks, "bench", args[0]);
  if (bench == nullptr) {
    std::fprintf(stderr, "hotring bench: unknown benchmark '%s' (`hotring bench` lists them)\n",
                 args[0].c_str());
    return 1;
  }
  return bench->run(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace hotring::hotplug

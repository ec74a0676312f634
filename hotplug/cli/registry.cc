#include "hotplug/cli/registry.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hotplug/bench/bench_boot.h"
#include "hotplug/bench/bench_coldplug.h"
#include "hotplug/bench/bench_events.h"
#include "hotplug/bench/bench_memory.h"
#include "hotplug/bench/bench_udev_daemon.h"
#include "hotplug/bench/bench_modules.h"
#include "hotplug/bench/bench_rules.h"
#include "hotplug/bench/bench_startup.h"
#include "hotplug/bench/reactor_bench.h"
#include "hotplug/boot/init.h"
#include "hotplug/cli/commands.h"
#include "hotplug/cli/udevadm/udevadm.h"
#include "hotplug/modules/modprobe_command.h"
#include "hotplug/replay/replay_command.h"
#include "ipc/bench_cli.h"

namespace hotring::hotplug {
namespace {

constexpr absl::string_view kVersion = "0.1.0";

int VersionCommand(const std::vector<std::string>&) {
  std::printf("hotring %s\n", kVersion.data());
  return 0;
}

int HelpCommand(const std::vector<std::string>&) {
  std::fputs(Usage().c_str(), stdout);
  return 0;
}

// The kernel's request_module runs `/sbin/modprobe -q -- NAME`: kmod's modprobe, arguments and
// all.
int ModprobeCommand(const std::vector<std::string>& args) {
  return modules::ModprobeMain("modprobe", args);
}

std::string BenchUsage() {
  return absl::StrCat(
      "usage: hotring bench NAME [options]     (hotring bench NAME --help: its options)\n",
      CommandList(CommandRegistry(), "bench"));
}

// `hotring bench NAME ARGS`: the benchmark NAME of the table; without a name, the list.
int BenchCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(BenchUsage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const Command* bench = FindCommand(CommandRegistry(), "bench", args[0]);
  if (bench == nullptr) {
    std::fprintf(stderr, "hotring bench: unknown benchmark '%s' (`hotring bench` lists them)\n",
                 args[0].c_str());
    return 1;
  }
  return bench->run(std::vector<std::string>(args.begin() + 1, args.end()));
}

constexpr Command kCommands[] = {
    {"", "daemon", "", "serve the control socket and kernel uevents", DaemonCommand},
    {"", "send", "[SUBSYSTEM]", "send one event (from the environment or --env KEY=VALUE)",
     SendCommand},
    {"", "settle", "",
     "wait until nothing is held, queued or running\n"
     "(--for KEY=VALUE: until a matching device was handled)",
     SettleCommand},
    {"", "control", "status|exit|reload|pending",
     "ask the daemon: its counters, to stop, to reload, what is pending", ControlCommandMain},
    {"", "monitor", "", "print handled events (--kernel: raw kernel uevents)", MonitorCommand},
    {"", "trigger", "", "write an action into sysfs uevent files (coldplug)", TriggerCommand},
    {"", "report", "", "where the time went: slowest events, waits, gaps; --svg FILE",
     ReportCommand},
    {"", "record", "--out FILE", "record this machine's devices for `hotring replay`",
     replay::RecordCommand},
    {"", "replay", "RECORDING", "run a recording through a private daemon into a manifest",
     replay::ReplayCommand},
    {"", "mdev", "[-s|-d [-f]]", "busybox's mdev (also when invoked as `mdev`, a symlink)",
     MdevCommand, "mdev"},
    {"", "init", "", "PID 1 of an initramfs (also as a program named init)", boot::InitCommand,
     "init"},
    {"", "modprobe", "", "kmod's modprobe (also as a program named modprobe)", ModprobeCommand,
     "modprobe"},
    {"", "udevadm", "VERB", "systemd 252's udevadm (also as a program named udevadm)",
     udevadm::UdevadmMain, "udevadm"},
    {"", "udevd", "[-d] [-D] [-c N] [-t S] [-N ...]",
     "systemd-udevd 252 as a drop-in: udev's control socket and queue file for Debian's\n"
     "udevadm (also as a program named systemd-udevd or udevd)",
     UdevdCommand, "systemd-udevd|udevd"},
    {"", "bench", "NAME", "benchmarks (`hotring bench` lists them)", BenchCommand},
    {"", "selfcheck", "", "probe the kernel's io_uring and report what hotring can use",
     SelfCheckCommand},
    {"", "--version|version", "", "print the version", VersionCommand},
    {"", "--help|help", "", "print this text", HelpCommand},
    // The kernel's uevent helper (or a symlink named so): `send --autostart`.
    {"program", "hotring-send", "", "send --autostart", UeventHelperCommand, "hotring-send"},

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

}  // namespace

absl::Span<const Command> CommandRegistry() { return kCommands; }

std::string Usage() {
  return absl::StrCat(
      "usage: hotring <command> [options]\n"
      "\n"
      "commands:\n",
      CommandList(kCommands, ""),
      "`hotring <command> --help` lists a command's options. As `hotring-send` (a symlink) it\n"
      "is the kernel's uevent helper.\n");
}

}  // namespace hotring::hotplug

// hotring: one static binary, one subcommand per job. Invoked as `hotring-send` (the kernel's
// uevent helper, or a symlink) it behaves as `hotring send --autostart`.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/flags.h"
#include "core/log.h"
#include "hotplug/boot/init.h"
#include "hotplug/cli.h"
#include "hotplug/mdev_command.h"
#include "hotplug/modules/modprobe_command.h"
#include "ipc/bench_cli.h"
#include "core/status.h"
#include "io/reactor.h"
#include "io/reactor_bench.h"

namespace hotring {
namespace {

constexpr absl::string_view kVersion = "0.1.0";

constexpr absl::string_view kUsage =
    "usage: hotring <command> [options]\n"
    "\n"
    "commands:\n"
    "  daemon                 serve the control socket and kernel uevents\n"
    "  send [SUBSYSTEM]       send one event (from the environment or --env KEY=VALUE)\n"
    "  settle                 wait until nothing is held, queued or running\n"
    "                         (--for KEY=VALUE: until a matching device was handled)\n"
    "  control status|exit|reload\n"
    "  monitor                print handled events (--kernel: raw kernel uevents)\n"
    "  trigger                write an action into sysfs uevent files (coldplug)\n"
    "  report                 where the time went: slowest events, waits, gaps; --svg FILE\n"
    "  mdev [-s|-d [-f]]      busybox's mdev (also when invoked as `mdev`, a symlink)\n"
    "  init                   PID 1 of an initramfs (also as a program named init)\n"
    "  modprobe               kmod's modprobe (also as a program named modprobe)\n"
    "  bench NAME             benchmarks (`hotring bench` lists them)\n"
    "  selfcheck              probe the kernel's io_uring and report what hotring can use\n"
    "  --version              print the version\n"
    "`hotring <command> --help` lists a command's options. As `hotring-send` (a symlink) it\n"
    "is the kernel's uevent helper.\n";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "hotring: %s\n", status.ToString().c_str());
  return 1;
}

int SelfCheck() {
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  if (!reactor.ok()) return Fail(reactor.status());
  std::printf("io_uring ok: %s\n", (*reactor)->features().Describe().c_str());
  return 0;
}

constexpr char kBenchReactorUsage[] =
    "usage: hotring bench reactor [--nops N] [--pingpongs N] [--json]\n"
    "  NOP round trips through the ring, one at a time and batched (N, default 2,000,000),\n"
    "  and socketpair ping-pongs between two tasks on one reactor (N, default 200,000)\n";

int BenchReactor(const std::vector<std::string>& args) {
  bool json = false;
  io::ReactorBenchOptions options;
  FlagReader flags("bench reactor", args);
  auto parse = [&]() -> absl::Status {
    while (flags.Next()) {
      const std::string& f = flags.flag();
      if (f == "--help") {
        std::fputs(kBenchReactorUsage, stdout);
        std::exit(0);
      } else if (f == "--json") {
        HOTRING_RETURN_IF_ERROR(flags.NoValue());
        json = true;
      } else if (f == "--nops") {
        HOTRING_ASSIGN_OR_RETURN(options.nops, flags.IntInRange(1, 1'000'000'000));
      } else if (f == "--pingpongs") {
        HOTRING_ASSIGN_OR_RETURN(options.pingpongs, flags.IntInRange(1, 1'000'000'000));
      } else {
        return flags.Unknown();
      }
    }
    return absl::OkStatus();
  };
  if (const absl::Status parsed = parse(); !parsed.ok()) {
    std::fprintf(stderr, "hotring %s\n", std::string(parsed.message()).c_str());
    return 2;
  }
  absl::StatusOr<std::vector<io::BenchFigure>> figures = io::RunReactorBench(options);
  if (!figures.ok()) return Fail(figures.status());
  std::fputs(io::FormatBenchFigures(*figures, json).c_str(), stdout);
  return 0;
}

constexpr char kBenchUsage[] =
    "usage: hotring bench NAME [options]     (hotring bench NAME --help: its options)\n"
    "  reactor      io_uring NOP and socketpair round trips\n"
    "  events       the daemon's event pipeline, without and with a handler\n"
    "  coldplug     a coldplug of a fake sysfs tree against a serial loop\n"
    "  startup      how soon a client started with the daemon is answered\n"
    "  rules        mdev -s with the rules stage against busybox's mdev\n"
    "  modules      alias resolution against kmod's modprobe\n"
    "  memory       the daemon's memory idle and through a 100,000-event burst\n"
    "  sysv, uds, uds-server, uds-client, dgram-fanin\n"
    "               IPC transports: SysV messages, Unix socket ping-pong, datagram fan-in\n"
    "  boot         boots qemu guests with hotring's and other initramfs images and compares\n"
    "               them (testing/initramfs/bench_boot.sh of a checkout: run it from one)\n";

// The boot bench builds images with the checkout's scripts and boots them in qemu: it is
// testing/initramfs/bench_boot.sh, run with this binary as the image's hotring.
int BenchBoot(const std::vector<std::string>& args) {
  constexpr char kScript[] = "testing/initramfs/bench_boot.sh";
  if (::access(kScript, R_OK) != 0) {
    std::fprintf(stderr,
                 "hotring bench boot: no %s here: run it from a hotring checkout (it builds the "
                 "images with the checkout's scripts and boots them in qemu)\n",
                 kScript);
    return 2;
  }
  std::vector<std::string> argv = {"sh", kScript};
  bool has_hotring = false;
  for (const std::string& arg : args) has_hotring |= arg == "--hotring";
  if (!has_hotring) {
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return Fail(absl::InternalError("bench boot: cannot read /proc/self/exe"));
    argv.push_back("--hotring");
    argv.push_back(std::string(self, static_cast<size_t>(n)));
  }
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  std::fflush(nullptr);
  ::execv("/bin/sh", pointers.data());
  return Fail(
      absl::InternalError(absl::StrCat("bench boot: exec /bin/sh: ", std::strerror(errno))));
}

int Bench(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kBenchUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "boot") return BenchBoot(rest);
  if (args[0] == "reactor") return BenchReactor(rest);
  if (ipc::IsIpcBench(args[0])) return ipc::RunIpcBench(args[0], rest);
  if (hotplug::IsHotplugBench(args[0])) return hotplug::RunHotplugBench(args[0], rest);
  return Fail(absl::InvalidArgumentError("bench: unknown benchmark '" + args[0] + "'"));
}

int Main(int argc, char** argv) {
  const absl::string_view invoked = argv[0] != nullptr ? argv[0] : "hotring";
  if (absl::EndsWith(invoked, "hotring-send")) {
    return hotplug::RunAsUeventHelper(std::vector<std::string>(argv + 1, argv + argc));
  }
  // As `mdev` (/sbin/mdev -> hotring): busybox's applet, arguments and all; as /init: PID 1 of
  // an initramfs (the kernel starts it with no subcommand).
  const size_t slash = invoked.rfind('/');
  const absl::string_view base = invoked.substr(slash == absl::string_view::npos ? 0 : slash + 1);
  if (base == "mdev") {
    return hotplug::MdevCommand(std::vector<std::string>(argv + 1, argv + argc));
  }
  if (base == "init") {
    return hotplug::boot::InitCommand(std::vector<std::string>(argv + 1, argv + argc));
  }
  // As `modprobe` (/sbin/modprobe -> hotring) it is kmod's modprobe: the kernel's
  // request_module runs `/sbin/modprobe -q -- NAME`.
  if (base == "modprobe") {
    return hotplug::modules::ModprobeMain("modprobe",
                                          std::vector<std::string>(argv + 1, argv + argc));
  }
  if (argc < 2) {
    std::fputs(kUsage.data(), stderr);
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "--version" || command == "version") {
    std::printf("hotring %s\n", kVersion.data());
    return 0;
  }
  if (command == "--help" || command == "help") {
    std::fputs(kUsage.data(), stdout);
    return 0;
  }
  if (command == "selfcheck") return SelfCheck();
  if (command == "bench") return Bench(args);
  if (command == "mdev") return hotplug::MdevCommand(args);
  if (command == "init") return hotplug::boot::InitCommand(args);
  if (command == "modprobe") return hotplug::modules::ModprobeMain("modprobe", args);
  if (hotplug::IsHotplugCommand(command)) return hotplug::RunHotplugCommand(command, args);
  std::fprintf(stderr, "hotring: unknown command '%s'\n%s", command.c_str(), kUsage.data());
  return 2;
}

}  // namespace
}  // namespace hotring

int main(int argc, char** argv) { return hotring::Main(argc, argv); }

#include "hotplug/cli/registry.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/program_path.h"
#include "hotplug/boot/init.h"
#include "hotplug/cli/commands.h"
#include "hotplug/cli/udevadm/udevadm.h"
#include "hotplug/modules/modprobe_command.h"
#include "hotplug/replay/replay_command.h"

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

// `hotring bench NAME ARGS` runs hotring-bench, the binary beside this one that holds the
// benchmarks: a board's binary does not carry them, and the benchmarks time this binary.
int BenchCommand(const std::vector<std::string>& args) {
  const std::string bench = BesideThisProgram("hotring-bench");
  if (::access(bench.c_str(), X_OK) != 0) {
    std::fprintf(stderr,
                 "hotring bench: the benchmarks are a binary of their own, hotring-bench, and there "
                 "is none beside this one (%s): build it with `bazel build //:hotring-bench` and "
                 "put it there\n",
                 bench.c_str());
    return 2;
  }
  std::vector<std::string> argv = {bench};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(bench.c_str(), pointers.data());
  std::fprintf(stderr, "hotring bench: exec %s: %s\n", bench.c_str(), std::strerror(errno));
  return 1;
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
    {"", "bench", "NAME",
     "benchmarks: runs hotring-bench, the binary beside this one (`hotring bench`\n"
     "lists them)",
     BenchCommand},
    {"", "selfcheck", "", "probe the kernel's io_uring and report what hotring can use",
     SelfCheckCommand},
    {"", "--version|version", "", "print the version", VersionCommand},
    {"", "--help|help", "", "print this text", HelpCommand},
    // The kernel's uevent helper (or a symlink named so): `send --autostart`.
    {"program", "hotring-send", "", "send --autostart", UeventHelperCommand, "hotring-send"},
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

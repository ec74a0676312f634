#include "hotplug/boot/init.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/dir_names.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/boot/block_scan.h"
#include "hotplug/boot/boot_cmdline.h"
#include "hotplug/boot/boot_report.h"
#include "hotplug/boot/rescue.h"
#include "hotplug/boot/rescue_action.h"
#include "hotplug/client/client.h"
#include "hotplug/client/daemon_child.h"
#include "hotplug/coldplug/trigger.h"
#include "hotplug/wire.h"
#include "io/netlink.h"

namespace hotring::hotplug::boot {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// Seconds since the kernel started (CLOCK_BOOTTIME), the clock `bench boot` compares across
// images: /init start and settled are both read from it.
absl::Duration BootTime() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return DurationFromTimespec(ts);
}

double Millis(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

// One console line, written at once (PID 1's stdout is /dev/console).
void Say(const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(STDOUT_FILENO, text.data(), text.size());
}

void Report(const std::string& fact) { Say(absl::StrCat(kReportPrefix, fact)); }

// The end of a hotring.test boot. If even that fails, wait.
[[noreturn]] void PowerOff() {
  ::sync();
  ::reboot(RB_POWER_OFF);
  for (;;) ::pause();
}

// The boot cannot go on: says why, then a shell, a reboot, a halt or a power-off as the command
// line asks (rescue.h). PID 1 must not exit (the kernel panics); after a shell, it halts.
[[noreturn]] void Fail(const BootCmdline& cmdline, const std::string& why) {
  Say(absl::StrCat("hotring init: ", why));
  const RescuePlan plan = ChooseRescue(cmdline, HaveShell());
  if (plan.action != RescuePlan::Action::kShell) {
    Say(absl::StrCat("hotring init: ", RescueLine(plan)));
  } else {
    Say(absl::StrCat("hotring init: ", RescueLine(plan), "; exit it to halt"));
    Say(RunRescueShell(why) ? "hotring init: the shell exited; halting"
                            : "hotring init: the shell could not be started; halting");
  }
  EndBoot(plan);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status MountIfNeeded(const char* source, const char* target, const char* type,
                           unsigned long flags, const char* data) {
  if (::mkdir(target, 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("mkdir(", target, ")"));
  }
  if (::mount(source, target, type, flags, data) != 0 && errno != EBUSY) {
    return ErrnoStatus(absl::StrCat("mount(", type, " on ", target, ")"));
  }
  return absl::OkStatus();
}

absl::Status MountEarly() {
  HOTRING_RETURN_IF_ERROR(MountIfNeeded("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr));
  HOTRING_RETURN_IF_ERROR(MountIfNeeded("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr));
  HOTRING_RETURN_IF_ERROR(MountIfNeeded("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755"));
  HOTRING_RETURN_IF_ERROR(MountIfNeeded("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"));
  return absl::OkStatus();
}

// Without /dev/console in the image the kernel starts init with no stdio; devtmpfs has it.
void EnsureConsole() {
  if (::fcntl(STDOUT_FILENO, F_GETFD) >= 0) return;
  const int fd = ::open("/dev/console", O_RDWR | O_NOCTTY);
  if (fd < 0) return;
  for (int i = 0; i < 3; ++i) {
    if (fd != i) ::dup2(fd, i);
  }
  if (fd > 2) ::close(fd);
}

std::vector<std::string> DaemonArgs() {
  // A device manager: the rules of /etc/mdev.conf (busybox's default when it is missing) and
  // the modules of MODALIAS (on by default). /etc/hotring/daemon.args adds to or overrides this.
  std::vector<std::string> args = {"hotring", "daemon", "--log-kmsg", "--config", "/etc/mdev.conf"};
  absl::StatusOr<std::string> text = ReadFile(kDaemonArgsFile);
  if (!text.ok()) return args;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    args.emplace_back(line);
  }
  return args;
}

// A daemon that runs a program for every event, or keeps udev's database or rebroadcasts
// events, wants every device's coldplug event, not only the ones its rules and modules need.
bool WantsEveryDevice(const std::vector<std::string>& daemon_args) {
  for (absl::string_view arg : daemon_args) {
    for (absl::string_view flag : {"--exec", "--udev-compat", "--rebroadcast"}) {
      if (arg == flag || (absl::StartsWith(arg, flag) && arg.size() > flag.size() &&
                          arg[flag.size()] == '=')) {
        return true;
      }
    }
  }
  return false;
}

// Whether daemon.args leaves the kernel uevent socket to the daemon itself: without netlink,
// or with its own socket or numbering.
bool DaemonOpensItsOwnSocket(const std::vector<std::string>& daemon_args) {
  for (absl::string_view arg : daemon_args) {
    for (absl::string_view flag :
         {"--no-netlink", "--netlink-fd", "--expect-seqnum", "--seqnum-file", "--netlink-rcvbuf"}) {
      if (arg == flag || absl::StartsWith(arg, absl::StrCat(flag, "="))) return true;
    }
  }
  return false;
}

// The kernel uevent socket, opened here for the daemon to take over (--netlink-fd), and the
// SEQNUM it starts from: read after the socket is bound, so every later uevent is queued in
// it, while the daemon is still starting. Coldplug's writes need not wait for the daemon.
struct EarlySocket {
  UniqueFd fd;
  uint64_t next_seqnum = 0;
};

std::optional<EarlySocket> OpenEarlySocket() {
  absl::StatusOr<io::UeventListener> listener = io::OpenUeventListener({});
  if (!listener.ok()) return std::nullopt;  // the daemon tries itself, and says why
  absl::StatusOr<std::string> seqnum = ReadFile("/sys/kernel/uevent_seqnum");
  uint64_t last = 0;
  if (!seqnum.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*seqnum), &last)) {
    return std::nullopt;
  }
  return EarlySocket{std::move(listener->fd), last + 1};
}

// Asks the daemon (a child of PID 1) to exit before switch_root; SIGKILLs it after `grace`.
void StopDaemon(DaemonChild& daemon, absl::Duration grace) {
  if (!daemon.running()) return;
  ControlRequest request;
  request.command = ControlCommand::kExit;
  (void)Ask(kDefaultSocket, std::move(request), absl::Seconds(2));
  if (daemon.WaitExit(grace).has_value()) return;
  daemon.Kill();
  Say("hotring init: the daemon did not exit in time; killed");
}

absl::StatusOr<Fields> Status() {
  ControlRequest request;
  request.command = ControlCommand::kStatus;
  // A 1-vCPU guest busy loading drivers can take seconds to schedule the daemon.
  HOTRING_ASSIGN_OR_RETURN(ControlReply reply, Ask(kDefaultSocket, std::move(request), absl::Seconds(5)));
  if (!reply.ok) return absl::UnavailableError(reply.message);
  return Fields(reply.fields.begin(), reply.fields.end());
}

std::string LinkBase(const std::string& path) {
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0) return "-";
  const std::string t(target, static_cast<size_t>(n));
  const size_t slash = t.rfind('/');
  return slash == std::string::npos ? t : t.substr(slash + 1);
}

std::string RealPath(const std::string& path) {
  char resolved[4096];
  if (::realpath(path.c_str(), resolved) == nullptr) return "-";
  return resolved;
}

// How much the daemon wrote to the kernel's log this boot, and whether the kernel's rate limit
// for /dev/kmsg writers dropped any of it ("printk: NAME: N output lines suppressed").
std::string KmsgFact() {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "kmsg unreadable";
  size_t lines = 0;
  size_t suppressed = 0;
  char record[8192];
  for (;;) {
    const ssize_t n = ::read(fd, record, sizeof record);
    if (n < 0 && errno == EPIPE) continue;  // overwritten records: read on
    if (n <= 0) break;
    const absl::string_view text(record, static_cast<size_t>(n));
    const size_t semicolon = text.find(';');
    const absl::string_view message =
        semicolon == absl::string_view::npos ? text : text.substr(semicolon + 1);
    if (absl::StartsWith(message, "hotring")) ++lines;
    if (absl::StrContains(message, "output lines suppressed")) ++suppressed;
  }
  ::close(fd);
  return absl::StrCat("kmsg hotring_lines=", lines, " suppressed_notes=", suppressed);
}

CpuTicks MachineCpu() {
  absl::StatusOr<std::string> text = ReadFile("/proc/stat");
  return text.ok() ? ParseProcStatCpu(*text) : CpuTicks{};
}

uint64_t ProcessCpu(pid_t pid) {
  absl::StatusOr<std::string> text = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  return text.ok() ? ParseProcPidCpuTicks(*text) : 0;
}

// One thread's: the main thread of a process is the thread whose id is the pid.
uint64_t ThreadCpu(pid_t pid, pid_t tid) {
  absl::StatusOr<std::string> text = ReadFile(absl::StrCat("/proc/", pid, "/task/", tid, "/stat"));
  return text.ok() ? ParseProcPidCpuTicks(*text) : 0;
}

// Boot times (CLOCK_BOOTTIME) of the steps between /init and settled.
struct Phases {
  absl::Duration daemon_ready;  // the daemon answered on its ready pipe
  absl::Duration first_write;   // coldplug wrote its first uevent file
  absl::Duration triggered;     // coldplug wrote its last
};

void PrintFacts(const BootCmdline& cmdline, const Fields& status, absl::Duration init_start,
                absl::Duration settled, const Phases& phases,
                const std::vector<std::string>& modules, const std::string& cpu_fact) {
  Report(absl::StrFormat("time init_ms=%.1f settled_ms=%.1f", Millis(init_start), Millis(settled)));
  // From /init on: where the time before the first driver load goes.
  Report(absl::StrFormat("phases daemon_ready_ms=%.1f first_write_ms=%.1f triggered_ms=%.1f",
                         Millis(phases.daemon_ready - init_start),
                         Millis(phases.first_write - init_start),
                         Millis(phases.triggered - init_start)));
  Report(StatusFact(status));
  for (const std::string& node : cmdline.stat_nodes) {
    struct stat st {};
    if (::lstat(node.c_str(), &st) == 0) {
      Report(NodeFact(node, st));
    } else {
      Report(MissingNodeFact(node, errno));
    }
  }
  for (const std::string& net : SortedDirNames("/sys/class/net")) {
    Report(absl::StrCat("net ", OneWord(net), " driver=",
                        OneWord(LinkBase(absl::StrCat("/sys/class/net/", net, "/device/driver")))));
  }
  for (const std::string& input : SortedDirNames("/sys/class/input")) {
    if (!absl::StartsWith(input, "input")) continue;  // event*, mouse*: the same device's nodes
    const std::string dir = absl::StrCat("/sys/class/input/", input);
    absl::StatusOr<std::string> name = ReadFile(dir + "/name");
    std::vector<std::string> nodes;
    for (const std::string& child : SortedDirNames(dir)) {
      if (absl::StartsWith(child, "event")) nodes.push_back(absl::StrCat("/dev/input/", child));
    }
    std::string node_facts;
    for (const std::string& node : nodes) {
      struct stat st {};
      absl::StrAppend(&node_facts, " node=", node,
                      ::stat(node.c_str(), &st) == 0 && S_ISCHR(st.st_mode) ? ":char" : ":missing");
    }
    Report(absl::StrCat("input ", input, " name=",
                        OneWord(name.ok() ? absl::StripTrailingAsciiWhitespace(*name) : "-"),
                        " path=", OneWord(RealPath(dir)), node_facts));
  }
  std::string line = "modules";
  for (const std::string& m : modules) absl::StrAppend(&line, " ", m);
  Report(line);
  Report(KmsgFact());
  Report(cpu_fact);
  Report("end");
}

// Waits until the device root= names has been handled (its node made, its rules applied):
// `settle --for DEVNAME=NAME`, or LABEL=/UUID= of its filesystem, without waiting for anything
// else, for as long as the command line says. Returns the node to mount: root= itself, or /dev/
// and the DEVNAME of the device whose superblock matched. NotFound when the wait ran out.
absl::StatusOr<std::string> WaitForRoot(const BootCmdline& cmdline, const RootSpec& spec,
                                        DaemonChild& daemon) {
  const MonoTime start = MonoNow();
  // The daemon forgets a `settle --for` at its timeout without a reply: wait in rounds, so
  // that a wait without a deadline can say once what it has seen so far.
  constexpr absl::Duration kRound = absl::Seconds(30);
  bool said_still_waiting = false;
  absl::StatusOr<std::vector<std::string>> handled;
  for (;;) {
    const absl::Duration waited = Since(start, MonoNow());
    const absl::Duration left = cmdline.root_wait - waited;
    if (left <= absl::ZeroDuration()) return absl::NotFoundError(cmdline.root);
    if (waited >= kRound && !said_still_waiting) {
      said_still_waiting = true;
      for (const std::string& line :
           RootNotFoundLines(cmdline, spec.condition,
                             ScanBlockDevices("/sys/class/block", "/dev"), waited)) {
        Say(absl::StrCat("hotring init: ", line));
      }
    }
    handled = SettleForDevices(kDefaultSocket, {spec.condition}, std::min(left, kRound));
    if (handled.ok()) break;
    if (handled.status().code() == absl::StatusCode::kInvalidArgument) return handled.status();
    HOTRING_RETURN_IF_ERROR(daemon.CheckAlive());
    // No reply in this round (the device has not come) or no daemon bound for a moment: on.
    if (handled.status().code() != absl::StatusCode::kDeadlineExceeded) {
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
  std::string device = spec.device;
  if (device.empty()) {
    if (handled->front().empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("root=", cmdline.root, " was met by a device without a node"));
    }
    device = absl::StrCat("/dev/", handled->front());
    Say(absl::StrCat("hotring init: root=", cmdline.root, " is ", device));
  }
  struct stat st {};
  if (::stat(device.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "root device ", device, " was handled but is not a block device node"));
  }
  return device;
}

absl::Status MountRoot(const BootCmdline& cmdline, const std::string& device) {
  if (::mkdir("/root", 0755) != 0 && errno != EEXIST) return ErrnoStatus("mkdir(/root)");
  std::vector<std::string> types;
  if (!cmdline.root_fstype.empty()) {
    types = absl::StrSplit(cmdline.root_fstype, ',', absl::SkipEmpty());
  } else {
    types = {"ext4", "ext3", "ext2", "xfs", "btrfs", "vfat"};
  }
  const unsigned long flags = cmdline.root_rw ? 0 : MS_RDONLY;
  std::string errors;
  for (const std::string& type : types) {
    if (::mount(device.c_str(), "/root", type.c_str(), flags,
                cmdline.root_flags.empty() ? nullptr : cmdline.root_flags.c_str()) == 0) {
      return absl::OkStatus();
    }
    absl::StrAppend(&errors, errors.empty() ? "" : ", ", type, ": ", std::strerror(errno));
  }
  return absl::NotFoundError(absl::StrCat("mount ", device, " on /root failed (", errors,
                                          ")"));
}

// Frees the initramfs's memory (its modules are tens of MB of RAM) as switch_root does: removes
// every file of the rootfs, staying on that filesystem (the new root and the moved mounts are
// other filesystems), and only when / really is the initramfs (ramfs or tmpfs) and /root is not
// on it.
void DeleteInitramfs() {
  struct statfs fs {};
  if (::statfs("/", &fs) != 0 ||
      (fs.f_type != static_cast<decltype(fs.f_type)>(RAMFS_MAGIC) &&
       fs.f_type != static_cast<decltype(fs.f_type)>(TMPFS_MAGIC))) {
    return;
  }
  struct stat root {}, new_root {};
  if (::stat("/", &root) != 0 || ::stat("/root", &new_root) != 0 ||
      root.st_dev == new_root.st_dev) {
    return;
  }
  (void)::nftw(
      "/",
      // FTW_MOUNT: entries on other filesystems (the new root) are never reported.
      [](const char* path, const struct stat*, int type, struct FTW* where) -> int {
        if (where->level == 0) return 0;
        if (type == FTW_DP) {
          ::rmdir(path);
        } else {
          ::unlink(path);
        }
        return 0;
      },
      16, FTW_DEPTH | FTW_MOUNT | FTW_PHYS);
}

// Moves the early mounts into the new root, makes it / and execs its init (as switch_root).
absl::Status SwitchRoot(const BootCmdline& cmdline) {
  for (const char* dir : {"/dev", "/proc", "/sys", "/run"}) {
    const std::string target = absl::StrCat("/root", dir);
    struct stat st {};
    if (::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (::mount(dir, target.c_str(), nullptr, MS_MOVE, nullptr) != 0) {
        return ErrnoStatus(absl::StrCat("mount --move ", dir, " ", target));
      }
    } else {
      ::umount2(dir, MNT_DETACH);  // nowhere to go in the new root
    }
  }
  DeleteInitramfs();
  if (::chdir("/root") != 0) return ErrnoStatus("chdir(/root)");
  if (::mount(".", "/", nullptr, MS_MOVE, nullptr) != 0) return ErrnoStatus("mount --move . /");
  if (::chroot(".") != 0) return ErrnoStatus("chroot(.)");
  if (::chdir("/") != 0) return ErrnoStatus("chdir(/)");
  if (::access(cmdline.init.c_str(), X_OK) != 0) {
    return ErrnoStatus(absl::StrCat("init=", cmdline.init, " in the new root"));
  }
  char* const argv[] = {const_cast<char*>(cmdline.init.c_str()), nullptr};
  ::execv(cmdline.init.c_str(), argv);
  return ErrnoStatus(absl::StrCat("exec ", cmdline.init));
}

// Coldplug: `trigger --action add --type devices --drivers-first --settle`, in process. Notes
// in `phases` when it wrote its first and its last uevent file; fails the boot if the walk fails.
// `after_drivers_first` (may be empty) runs once the devices waiting for a driver are written.
void Coldplug(const BootCmdline& cmdline, const std::vector<std::string>& daemon_args,
              std::function<void()> after_drivers_first, Phases& phases) {
  TriggerOptions trigger;
  trigger.action = "add";
  // The devices waiting for a driver first: their module loads are most of the boot, and start
  // before the few hundred other devices are walked and written. Devices only (udevadm
  // trigger's default): module, bus and driver objects have nothing to handle here.
  trigger.drivers_first = cmdline.drivers_first;
  trigger.filter.subsystems = cmdline.coldplug_subsystems;
  // Only what the daemon's rules and module loader act on, and what a wait may name (nodes and
  // network interfaces): on a one-vCPU boot the other ~200 devices' events cost the drivers'
  // loads their CPU (docs/benchmarks.md). Every device when the daemon runs handlers or keeps
  // a database that want them all.
  trigger.needed = cmdline.coldplug_needed && !WantsEveryDevice(daemon_args);
  trigger.needed_keeps_waitable = true;
  trigger.config = "/etc/mdev.conf";
  FILE* quiet = std::fopen("/dev/null", "w");
  TriggerEnvironment env;
  env.out = quiet != nullptr ? quiet : stdout;
  env.progress = false;
  env.after_drivers_first = std::move(after_drivers_first);
  absl::StatusOr<TriggerReport> triggered = Trigger(trigger, env);
  if (quiet != nullptr) std::fclose(quiet);
  if (!triggered.ok()) Fail(cmdline, absl::StrCat("trigger: ", triggered.status().ToString()));
  phases.triggered = BootTime();
  phases.first_write = triggered->first_write.has_value()
                           ? phases.triggered - Since(*triggered->first_write, MonoNow())
                           : phases.triggered;
  if (triggered->failed > 0) Say(absl::StrCat("hotring init: ", FormatTriggerSummary(*triggered, false)));
}

// The daemon's timeline as `hotring-timeline:` lines, for `hotring report --svg` on the host:
// the console is the guest's only way out.
void PrintTimeline() {
  absl::StatusOr<std::string> lines = FetchTimelineLines(kDefaultSocket);
  if (lines.ok()) {
    for (absl::string_view line : absl::StrSplit(*lines, '\n', absl::SkipEmpty())) {
      std::printf("hotring-timeline: %.*s\n", static_cast<int>(line.size()), line.data());
    }
    std::fflush(stdout);
  } else {
    Say(absl::StrCat("hotring init: timeline: ", lines.status().ToString()));
  }
}

// The end of the initramfs's work: powers off (hotring.test), or waits for root=, mounts it,
// stops the daemon and switches to the new root's init. When root= does not appear, says what
// was waited for and which block devices were seen, then rescues as the command line says; a
// shell that exits means: look again.
[[noreturn]] void LeaveInitramfs(const BootCmdline& cmdline, DaemonChild& daemon) {
  if (cmdline.test) {
    StopDaemon(daemon, absl::Seconds(5));
    PowerOff();
  }
  if (cmdline.root.empty()) Fail(cmdline, "no root= given");
  absl::StatusOr<RootSpec> spec = ParseRootSpec(cmdline.root);
  if (!spec.ok()) Fail(cmdline, spec.status().ToString());
  absl::StatusOr<std::string> root_device;
  for (;;) {
    root_device = WaitForRoot(cmdline, *spec, daemon);
    if (root_device.ok()) break;
    if (root_device.status().code() != absl::StatusCode::kNotFound) {
      Fail(cmdline, root_device.status().ToString());
    }
    for (const std::string& line : RootNotFoundLines(
             cmdline, spec->condition, ScanBlockDevices("/sys/class/block", "/dev"))) {
      Say(absl::StrCat("hotring init: ", line));
    }
    const RescuePlan plan = ChooseRescue(cmdline, HaveShell());
    if (plan.action != RescuePlan::Action::kShell) {
      Say(absl::StrCat("hotring init: ", RescueLine(plan)));
      EndBoot(plan);
    }
    Say(absl::StrCat("hotring init: ", RescueLine(plan), "; exit it to look for root= again"));
    if (!RunRescueShell(absl::StrCat("root=", cmdline.root, " did not appear"))) {
      Say("hotring init: the shell could not be started; halting");
      EndBoot(plan);
    }
    Say(absl::StrCat("hotring init: the shell exited; looking for root=", cmdline.root, " again"));
  }
  if (absl::Status root = MountRoot(cmdline, *root_device); !root.ok()) {
    Fail(cmdline, root.ToString());
  }
  // As initramfs-tools stops udevd before run-init: the real root's device manager takes over.
  StopDaemon(daemon, absl::Seconds(5));
  Say(absl::StrCat("hotring init: switching to ", *root_device, ", exec ", cmdline.init));
  const absl::Status switched = SwitchRoot(cmdline);
  Fail(cmdline, switched.ToString());
}

[[noreturn]] void RunInit() {
  const absl::Duration init_start = BootTime();
  ::umask(022);
  absl::Status mounted = MountEarly();
  // Where the boot's CPU goes between /init and settled: working or idle (the loads' sleeps).
  const CpuTicks cpu_start = MachineCpu();
  // pid 1's own count starts with the kernel's boot work (unpacking this image): only what
  // /init spends from here is ours.
  const uint64_t init_cpu_start = ProcessCpu(::getpid());
  EnsureConsole();
  // Without /proc there is no command line: the defaults decide what happens.
  if (!mounted.ok()) Fail(BootCmdline{}, mounted.ToString());
  absl::StatusOr<std::string> text = ReadFile("/proc/cmdline");
  const BootCmdline cmdline = ParseBootCmdline(text.ok() ? *text : "");

  // stdio stays ours (the console); the daemon logs to /dev/kmsg.
  std::vector<std::string> daemon_args = DaemonArgs();
  std::optional<EarlySocket> early;
  const bool several_cpus = ::sysconf(_SC_NPROCESSORS_ONLN) > 1;
  if (cmdline.early_coldplug.value_or(several_cpus) && !DaemonOpensItsOwnSocket(daemon_args)) {
    early = OpenEarlySocket();
  }
  const bool early_socket = early.has_value();
  if (early_socket) {
    daemon_args.push_back("--expect-seqnum");
    daemon_args.push_back(absl::StrCat(early->next_seqnum));
  }
  absl::StatusOr<DaemonChild> daemon =
      DaemonChild::Start({.program = "/proc/self/exe",
                          .argv = daemon_args,
                          .netlink_fd = early.has_value() ? early->fd.get() : -1});
  if (!daemon.ok()) Fail(cmdline, daemon.status().ToString());
  early.reset();  // the daemon's copy is the one that reads
  Phases phases;
  // A slow 1-vCPU guest busy with the kernel's own work can take seconds to start it.
  bool ready = false;
  auto wait_ready = [&] {
    if (ready) return;
    if (absl::Status status = daemon->WaitReady(absl::Seconds(30)); !status.ok()) {
      Fail(cmdline, status.ToString());
    }
    ready = true;
    phases.daemon_ready = BootTime();
  };
  // Without the early socket, nothing may be written before the daemon listens.
  if (!early_socket) wait_ready();

  // Coldplug: `trigger --action add --type devices --drivers-first --settle`, in process.
  const absl::Duration coldplug_start = BootTime();
  // With the early socket, the devices waiting for a driver are written while the daemon
  // starts (their uevents wait in the socket). On one CPU (hotring.early_coldplug=1) the rest
  // of the walk would only take the daemon's start-up CPU: it waits for it there; with more,
  // they run side by side.
  std::function<void()> after_drivers_first;
  if (early_socket && !several_cpus) after_drivers_first = wait_ready;
  Coldplug(cmdline, daemon_args, std::move(after_drivers_first), phases);
  wait_ready();  // settle asks the daemon
  absl::Status settled = Settle(kDefaultSocket, cmdline.settle_timeout);
  if (settled.ok() && !cmdline.settle_for.empty()) {
    settled = SettleFor(kDefaultSocket, cmdline.settle_for, cmdline.settle_timeout);
  }
  const absl::Duration settled_at = BootTime();
  const uint64_t init_cpu = ProcessCpu(::getpid());
  const std::string cpu_fact =
      CpuFact(cpu_start, MachineCpu(), init_cpu >= init_cpu_start ? init_cpu - init_cpu_start : 0,
              ProcessCpu(daemon->pid()), ThreadCpu(daemon->pid(), daemon->pid()),
              static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)));
  if (absl::Status alive = daemon->CheckAlive(); !alive.ok()) Fail(cmdline, alive.ToString());
  if (!settled.ok()) Say(absl::StrCat("hotring init: settle: ", settled.ToString()));

  const absl::Duration status_asked = BootTime();
  absl::StatusOr<Fields> status = Status();
  // When the daemon became ready: its uptime counts from there. Init only notices readiness
  // when it waits for it, after the whole walk when the two run side by side.
  if (int64_t uptime_ms = 0;
      status.ok() && absl::SimpleAtoi(StatusValue(*status, "uptime_ms"), &uptime_ms)) {
    phases.daemon_ready = status_asked - absl::Milliseconds(uptime_ms);
  }
  absl::StatusOr<std::string> proc_modules = ReadFile("/proc/modules");
  const std::vector<std::string> modules =
      ParseProcModules(proc_modules.ok() ? *proc_modules : "");
  const Fields fields = status.ok() ? *status : Fields{{"error", status.status().ToString()}};
  Say(SummaryLine(fields, settled_at - coldplug_start, modules.size()));
  PrintFacts(cmdline, fields, init_start, settled_at, phases, modules, cpu_fact);
  if (cmdline.timeline) PrintTimeline();
  LeaveInitramfs(cmdline, *daemon);
}

}  // namespace

int InitCommand(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(
        "usage: hotring init (as PID 1 of an initramfs; also as a program named init)\n"
        "  mounts /proc /sys /dev /run, starts `hotring daemon --log-kmsg` (plus the lines of\n"
        "  /etc/hotring/daemon.args), coldplugs, prints a summary and `hotring-report:` facts,\n"
        "  then switches to root= or powers off (hotring.test).\n"
        "  kernel command line: root=/dev/NAME|LABEL=|UUID=|PARTUUID=|PARTLABEL= rootfstype= rootflags= rw ro\n"
        "  init= rootdelay=S (wait S s for root=; default 30) rootwait (no deadline) rootwait=S\n"
        "  when the boot cannot go on (root= did not appear, ...): it says why and what block devices\n"
        "  it saw, then hotring.rescue=shell|reboot|halt|poweroff; else hotring.test: power off;\n"
        "  else panic=N: reboot after N s (N < 0: at once; 0: halt); else /bin/sh on the console\n"
        "  when the image has one (exit it to look for root= again); else halt\n"
        "  hotring.test hotring.stat=/dev/A,/dev/B hotring.rootwait=S\n"
        "  hotring.settle_timeout=S hotring.settle_for=KEY=VALUE hotring.timeline\n"
        "  hotring.drivers_first=0 hotring.coldplug_subsystems hotring.coldplug_needed=0\n"
        "  hotring.early_coldplug=0|1 hotring.modules_serial\n",
        stdout);
    return 0;
  }
  if (::getpid() != 1) {
    std::fputs("hotring init: refusing to run: not PID 1 (it mounts, and powers the machine off)\n",
               stderr);
    return 2;
  }
  RunInit();
}

}  // namespace hotring::hotplug::boot

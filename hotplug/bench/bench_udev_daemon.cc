#include "hotplug/bench/bench_udev_daemon.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/bench/bench_boot.h"
#include "hotplug/bench/bench_daemon.h"
#include "hotplug/bench/bench_memory.h"
#include "hotplug/bench/bench_udev_rules.h"
#include "hotplug/coldplug/trigger.h"

extern char** environ;

namespace hotring::hotplug::bench {
namespace {

struct Options {
  int runs = 3;
  std::string udevd = "/lib/systemd/systemd-udevd";
  std::string udevadm = "/usr/bin/udevadm";
  absl::Duration timeout = absl::Seconds(180);
  absl::Duration idle_wait = absl::Seconds(4);
  bool engine = false;
};

// ---- The private namespace ----

absl::Status Mount(const char* source, const char* target, const char* type, unsigned long flags) {
  if (::mount(source, target, type, flags, nullptr) != 0) {
    return ErrnoStatus(absl::StrCat("mount(", target, ")"));
  }
  return absl::OkStatus();
}

// Copies the nodes, links and directories of `from` into `to` (two levels: /dev/net/tun,
// /dev/cpu/0/msr), each with its owner and mode.
void CopyDevTree(const std::string& from, const std::string& to, int depth) {
  DIR* d = ::opendir(from.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string src = from + "/" + name;
    const std::string dst = to + "/" + name;
    struct stat st;
    if (::lstat(src.c_str(), &st) != 0) continue;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      if (::mknod(dst.c_str(), st.st_mode, st.st_rdev) != 0) continue;
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlink(src.c_str(), target, sizeof(target) - 1);
      if (n < 0) continue;
      target[n] = '\0';
      if (::symlink(target, dst.c_str()) != 0) continue;
      if (::lchown(dst.c_str(), st.st_uid, st.st_gid) != 0) {
        std::fprintf(stderr, "bench udev-rules: lchown %s: %s\n", dst.c_str(), std::strerror(errno));
      }
      continue;
    } else if (S_ISDIR(st.st_mode) && depth > 0 && name != "pts" && name != "shm" && name != "mqueue") {
      if (::mkdir(dst.c_str(), st.st_mode & 07777) != 0) continue;
      CopyDevTree(src, dst, depth - 1);
    } else {
      continue;
    }
    if (::chown(dst.c_str(), st.st_uid, st.st_gid) != 0) {
      std::fprintf(stderr, "bench udev-rules: chown %s: %s\n", dst.c_str(), std::strerror(errno));
    }
    (void)::chmod(dst.c_str(), st.st_mode & 07777);
  }
  ::closedir(d);
}

// Enters a mount and network namespace of our own (the calling process must be single-
// threaded: root's unshare), keeps the machine's /dev reachable at `real_dev`.
absl::Status EnterPrivateWorld(const std::string& real_dev) {
  if (::geteuid() != 0) return absl::PermissionDeniedError("needs root (private mount and network namespaces)");
  if (::unshare(CLONE_NEWNS | CLONE_NEWNET) != 0) return ErrnoStatus("unshare(CLONE_NEWNS | CLONE_NEWNET)");
  HOTRING_RETURN_IF_ERROR(Mount("none", "/", nullptr, MS_REC | MS_PRIVATE));
  HOTRING_RETURN_IF_ERROR(Mount("/dev", real_dev.c_str(), nullptr, MS_BIND));
  // Loopback, for nothing but tidiness: the daemons' sockets are netlink and abstract ones.
  return absl::OkStatus();
}

// A fresh /run and /dev for one daemon.
absl::Status FreshWorld(const std::string& real_dev) {
  (void)::umount2("/run", MNT_DETACH);
  (void)::umount2("/dev", MNT_DETACH);
  HOTRING_RETURN_IF_ERROR(Mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV));
  HOTRING_RETURN_IF_ERROR(Mount("tmpfs", "/dev", "tmpfs", MS_NOSUID));
  (void)::chmod("/dev", 0755);
  CopyDevTree(real_dev, "/dev", 2);
  if (::mkdir("/run/udev", 0755) != 0) return ErrnoStatus("mkdir(/run/udev)");
  return absl::OkStatus();
}

// ---- Measuring ----

// The run time of every thread of process `pid` alive now, in ns (schedstat: exact).
int64_t ThreadsRunNs(pid_t pid) {
  int64_t total = 0;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(absl::StrCat(dir, "/", e->d_name, "/schedstat"));
    int64_t ns = 0;
    if (in >> ns) total += ns;
  }
  ::closedir(d);
  return total;
}

// The run time of process `pid`'s main thread, in ns: hotring's reactor, udevd's manager.
int64_t MainThreadRunNs(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/task/", pid, "/schedstat"));
  int64_t ns = -1;
  if (!(in >> ns)) return -1;
  return ns;
}

// CPU of `root` and every process below it: the run time of their live threads (exact), plus
// what the children each has reaped used (clock ticks: 10 ms resolution), in ns.
int64_t TreeCpuNs(pid_t root) {
  std::map<pid_t, pid_t> parent;
  std::map<pid_t, int64_t> reaped_ticks;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return -1;
  while (const dirent* e = ::readdir(d)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos || close + 2 > text.size()) continue;
    std::vector<std::string> f = absl::StrSplit(text.substr(close + 2), ' ');
    if (f.size() < 15) continue;
    pid_t ppid = 0;
    int64_t cutime = 0, cstime = 0;
    (void)absl::SimpleAtoi(f[1], &ppid);
    (void)absl::SimpleAtoi(f[13], &cutime);
    (void)absl::SimpleAtoi(f[14], &cstime);
    parent[pid] = ppid;
    reaped_ticks[pid] = cutime + cstime;
  }
  ::closedir(d);
  const int64_t tick_ns = 1'000'000'000 / ::sysconf(_SC_CLK_TCK);
  int64_t total = 0;
  for (const auto& [pid, ticks] : reaped_ticks) {
    for (pid_t p = pid; p > 1;) {
      if (p == root) {
        total += ThreadsRunNs(pid) + ticks * tick_ns;
        break;
      }
      auto it = parent.find(p);
      if (it == parent.end()) break;
      p = it->second;
    }
  }
  return total;
}

absl::StatusOr<UniqueFd> OpenGroup(uint32_t group) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT));
  if (!fd.valid()) return ErrnoStatus("socket(NETLINK_KOBJECT_UEVENT)");
  const int size = 64 << 20;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = 1u << (group - 1);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return ErrnoStatus("bind(netlink)");
  return fd;
}

// Datagrams queued on `fd` now (group 1: the kernel's uevents, all from the trigger's writes).
uint64_t CountQueued(int fd) {
  uint64_t n = 0;
  char buf[16384];
  while (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) ++n;
  return n;
}

// One daemon's run.
struct Measurement {
  uint64_t events = 0;          // the kernel's uevents from the writes
  uint64_t announced = 0;       // libudev announcements seen by then
  absl::Duration settle;        // first write -> the last announcement
  int64_t cpu_ns = -1;          // the daemon's tree over trigger start -> settled
  int64_t main_cpu_ns = -1;     // of it, the daemon's main thread (hotring's reactor, udevd's manager)
  int64_t idle_anon_kib = -1;   // hotring only, first run
  std::map<std::string, uint64_t> status;  // hotring only
};

// A started daemon: hotring's (BenchDaemon) or udevd (a child of ours).
struct Daemon {
  std::optional<BenchDaemon> hotring;
  pid_t udevd = -1;
  [[nodiscard]] pid_t pid() const { return hotring.has_value() ? hotring->pid() : udevd; }
};

absl::StatusOr<pid_t> StartUdevd(const Options& options) {
  const int log = ::open("/run/udevd.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (log >= 0) {
    posix_spawn_file_actions_adddup2(&actions, log, 1);
    posix_spawn_file_actions_adddup2(&actions, log, 2);
  }
  std::string program = options.udevd;
  char* argv[] = {program.data(), nullptr};
  pid_t pid = -1;
  const int r = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (log >= 0) ::close(log);
  if (r != 0) {
    errno = r;
    return ErrnoStatus(absl::StrCat("posix_spawn(", program, ")"));
  }
  // Serving once its control socket is there and it answers a ping.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    struct stat st;
    if (::stat("/run/udev/control", &st) == 0) {
      const std::string ping = absl::StrCat(options.udevadm, " control --ping >/dev/null 2>&1");
      if (std::system(ping.c_str()) == 0) return pid;
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return absl::InternalError(absl::StrCat("systemd-udevd exited at start; see its log"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return absl::DeadlineExceededError("systemd-udevd did not start serving within 30 s");
}

absl::Status StopUdevd(pid_t pid) {
  ::kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 300; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return absl::OkStatus();
}

absl::StatusOr<Measurement> Measure(const Options& options, bool hotring, bool idle_memory) {
  HOTRING_ASSIGN_OR_RETURN(UniqueFd uevents, OpenGroup(1));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd announcements, OpenGroup(2));
  Daemon daemon;
  Measurement m;
  if (hotring) {
    BenchDaemon::Options o;
    // The machine's network interfaces belong to its own network namespace: their uevents use
    // up SEQNUMs that this namespace never receives, and the daemon would hold the events after
    // each such gap for the reorder timeout (5 s; at 20 ms, the timeouts were most of its settle
    // wall). udevd has no reordering and outside a private namespace there are no such gaps:
    // here the daemon releases every event at once, as udevd takes them.
    o.args = {"--log-level", "warning", "--udev-compat", "--no-modules", "--seqnum-file", "",
              "--reorder-timeout", "0"};
    if (const char* t = std::getenv("HOTRING_BENCH_TIMELINE"); t != nullptr) {
      o.args.insert(o.args.end(), {"--record-timeline", t});
    }
    o.ready_timeout = absl::Seconds(30);
    HOTRING_ASSIGN_OR_RETURN(BenchDaemon d, BenchDaemon::Start(std::move(o)));
    daemon.hotring.emplace(std::move(d));
    if (idle_memory) {
      absl::SleepFor(options.idle_wait);  // the daemon gives memory back after 2 s idle
      HOTRING_ASSIGN_OR_RETURN(const MemorySample idle, ReadMemory(daemon.pid()));
      m.idle_anon_kib = idle.anonymous_kib;
    }
  } else {
    HOTRING_ASSIGN_OR_RETURN(daemon.udevd, StartUdevd(options));
  }
  (void)CountQueued(uevents.get());
  (void)CountQueued(announcements.get());
  const int64_t cpu_before = TreeCpuNs(daemon.pid());
  const int64_t main_before = MainThreadRunNs(daemon.pid());
  TriggerOptions trigger;
  trigger.sysfs_root = "/sys";
  trigger.action = "change";
  FILE* null = std::fopen("/dev/null", "w");
  TriggerEnvironment env{.out = null, .err = null, .progress = false};
  absl::StatusOr<TriggerReport> report = Trigger(trigger, env);
  std::fclose(null);
  if (!report.ok()) return report.status();
  const MonoTime first = report->first_write.value_or(MonoNow());
  m.events = CountQueued(uevents.get());
  MonoTime last = first;
  const MonoTime deadline = MonoNow() + options.timeout;
  char buf[16384];
  while (m.announced < m.events) {
    m.events += CountQueued(uevents.get());  // the daemons' own writes (ATTR{}) cause more
    pollfd p{announcements.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready > 0) {
      while (::recv(announcements.get(), buf, sizeof(buf), MSG_DONTWAIT) > 0) {
        ++m.announced;
        last = MonoNow();
      }
    }
    if (MonoNow() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(hotring ? "hotring" : "systemd-udevd", ": ", m.announced,
                                                      " of ", m.events, " events announced"));
    }
  }
  m.settle = Since(first, last);
  const int64_t cpu_after = TreeCpuNs(daemon.pid());
  const int64_t main_after = MainThreadRunNs(daemon.pid());
  if (cpu_before >= 0 && cpu_after >= cpu_before) m.cpu_ns = cpu_after - cpu_before;
  if (main_before >= 0 && main_after >= main_before) m.main_cpu_ns = main_after - main_before;
  if (hotring) {
    HOTRING_ASSIGN_OR_RETURN(m.status, daemon.hotring->Status());
    HOTRING_RETURN_IF_ERROR(daemon.hotring->Stop());
  } else {
    HOTRING_RETURN_IF_ERROR(StopUdevd(daemon.udevd));
  }
  return m;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string Report(const std::vector<Measurement>& ours, const std::vector<Measurement>& theirs) {
  auto per_event = [](const Measurement& m) { return m.events == 0 ? 0.0 : m.cpu_ns / 1000.0 / m.events; };
  auto wall = [](const Measurement& m) { return absl::ToDoubleMilliseconds(m.settle); };
  auto main_per_event = [](const Measurement& m) {
    return m.events == 0 || m.main_cpu_ns < 0 ? 0.0 : m.main_cpu_ns / 1000.0 / m.events;
  };
  std::vector<double> our_cpu, our_wall, their_cpu, their_wall, our_main, their_main;
  std::string out = "run  daemon         events  settle_ms  cpu_ms  cpu_us/event\n";
  for (size_t i = 0; i < ours.size(); ++i) {
    for (const auto& [name, m] : {std::pair<const char*, const Measurement*>{"hotring", &ours[i]},
                                  {"systemd-udevd", i < theirs.size() ? &theirs[i] : nullptr}}) {
      if (m == nullptr) continue;
      absl::StrAppendFormat(&out, "%-4d %-14s %6d %10.1f %7.1f %13.1f\n", i + 1, name, m->events, wall(*m),
                            m->cpu_ns / 1e6, per_event(*m));
    }
    our_cpu.push_back(per_event(ours[i]));
    our_wall.push_back(wall(ours[i]));
    our_main.push_back(main_per_event(ours[i]));
    if (i < theirs.size()) {
      their_cpu.push_back(per_event(theirs[i]));
      their_wall.push_back(wall(theirs[i]));
      their_main.push_back(main_per_event(theirs[i]));
    }
  }
  absl::StrAppendFormat(&out, "median hotring: %.1f us CPU/event, settled in %.1f ms\n", Median(our_cpu),
                        Median(our_wall));
  // Where the CPU went: the thread that receives and dispatches events, and the rest (hotring's
  // rules pool; udevd's workers and the programs both run).
  absl::StrAppendFormat(&out, "median hotring main thread (reactor): %.1f us CPU/event, the rest %.1f\n",
                        Median(our_main), Median(our_cpu) - Median(our_main));
  if (!theirs.empty()) {
    absl::StrAppendFormat(&out, "median systemd-udevd: %.1f us CPU/event, settled in %.1f ms\n", Median(their_cpu),
                          Median(their_wall));
    absl::StrAppendFormat(&out, "median systemd-udevd main thread (manager): %.1f us CPU/event, the rest %.1f\n",
                          Median(their_main), Median(their_cpu) - Median(their_main));
    absl::StrAppendFormat(&out, "ratio hotring/udevd: CPU per event %.3fx (goal <= 0.2x), settle wall %.3fx (goal <= 0.5x)\n",
                          Median(our_cpu) / std::max(Median(their_cpu), 1e-9),
                          Median(our_wall) / std::max(Median(their_wall), 1e-9));
  }
  if (!ours.empty() && ours[0].idle_anon_kib >= 0) {
    absl::StrAppendFormat(&out, "hotring idle with the rules loaded: %d KiB anonymous (goal <= 2048)\n",
                          ours[0].idle_anon_kib);
  }
  if (!ours.empty()) {
    out += "hotring counters (last run):";
    for (const auto& [k, v] : ours.back().status) {
      if (absl::StartsWith(k, "udevrules_")) absl::StrAppend(&out, " ", k.substr(10), "=", v);
      if (k == "reorder_timeouts" || absl::StartsWith(k, "ring_remote_")) absl::StrAppend(&out, " ", k, "=", v);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

int BenchUdevRulesCommand(const std::vector<std::string>& args) {
  constexpr char kGuestScript[] = "testing/udevcompat/bench_scale.sh";
  // The guest benchmark is a checkout's script; every option after --guest is its own.
  if (!args.empty() && args[0] == "--guest") {
    return ExecCheckoutScript("hotring bench udev-rules --guest", kGuestScript,
                              std::vector<std::string>(args.begin() + 1, args.end()));
  }
  Options options;
  bool guest = false;
  FlagSet flags("bench udev-rules",
                "usage: hotring bench udev-rules [options]\n"
                "       hotring bench udev-rules --guest [guest options]\n"
                "udevd's rules directories on a coldplug (`change`) of this machine's devices, through\n"
                "`hotring daemon --udev-compat` and systemd-udevd in turn, each in a private mount and\n"
                "network namespace with a fresh tmpfs /run and a copy of /dev. Root only.");
  flags.Bool("--guest", &guest,
             "instead: qemu guests with 100 to 4,000 scsi_debug and dummy devices, Debian's initramfs "
             "with systemd-udevd and with this binary as its drop-in (testing/udevcompat/bench_scale.sh "
             "of a checkout; first, the options after it are the script's: --guest --help)")
      .Int("--runs", "N", &options.runs, 1, 100, "runs of both daemons (default 3)")
      .String("--udevd", "PATH", &options.udevd,
              "systemd-udevd to compare with (default /lib/systemd/systemd-udevd; \"\": none)")
      .String("--udevadm", "PATH", &options.udevadm, "its udevadm (default /usr/bin/udevadm)")
      .Seconds("--timeout", "S", &options.timeout, "for one daemon to announce every event (default 180)")
      .Bool("--engine", &options.engine, "also the rules engine alone on /sys's devices");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  if (guest) {
    std::fprintf(stderr, "bench udev-rules: --guest comes first (the options after it are %s's)\n", kGuestScript);
    return 2;
  }
  if (options.engine) {
    absl::StatusOr<UdevRulesBenchReport> engine = RunUdevRulesBench(UdevRulesBenchOptions{});
    if (!engine.ok()) {
      std::fprintf(stderr, "bench udev-rules: engine: %s\n", engine.status().ToString().c_str());
      return 1;
    }
    std::printf("engine alone:\n%s\n", FormatUdevRulesReport(*engine).c_str());
  }
  char real_dev[] = "/tmp/hotring-bench-dev.XXXXXX";
  if (::mkdtemp(real_dev) == nullptr) {
    std::perror("bench udev-rules: mkdtemp");
    return 1;
  }
  const absl::Status entered = EnterPrivateWorld(real_dev);
  if (!entered.ok()) {
    std::fprintf(stderr, "bench udev-rules: %s\n", entered.ToString().c_str());
    ::rmdir(real_dev);
    return 1;
  }
  std::vector<Measurement> ours, theirs;
  const bool compare = !options.udevd.empty();
  for (int run = 0; run < options.runs; ++run) {
    // Alternate which daemon goes first, so drift in the machine's load does not always hit one.
    for (int k = 0; k < (compare ? 2 : 1); ++k) {
      const bool hotring = ((run + k) % 2 == 0) || !compare;
      if (absl::Status s = FreshWorld(real_dev); !s.ok()) {
        std::fprintf(stderr, "bench udev-rules: %s\n", s.ToString().c_str());
        return 1;
      }
      absl::StatusOr<Measurement> m = Measure(options, hotring, hotring && ours.empty());
      if (!m.ok()) {
        std::fprintf(stderr, "bench udev-rules: run %d: %s\n", run + 1, m.status().ToString().c_str());
        return 1;
      }
      (hotring ? ours : theirs).push_back(*std::move(m));
    }
  }
  std::printf("%s", Report(ours, theirs).c_str());
  // The staging directory is only ours in this namespace; on the machine it is empty.
  return 0;
}

}  // namespace hotring::hotplug::bench

#include "hotplug/bench/bench_startup.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/json.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/client/client.h"
#include "hotplug/wire.h"
#include "io/process/child_process.h"

extern char** environ;

namespace hotring::hotplug {
namespace {

constexpr int kReadyFd = 3;  // the daemon's --ready-fd in every start
constexpr absl::Duration kStartTimeout = absl::Seconds(10);

// Waits up to `timeout` for `pid` (any child when -1) to exit; its wait status, or nullopt.
std::optional<int> WaitFor(pid_t pid, absl::Duration timeout) {
  const MonoTime deadline = MonoNow() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r > 0) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (MonoNow() >= deadline) return std::nullopt;
    ::usleep(200);
  }
}

// Owns one started process: SIGKILLed and reaped when dropped unless already reaped.
class Child {
 public:
  Child() = default;
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(Child&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
  Child& operator=(Child&& other) noexcept {
    std::swap(pid_, other.pid_);
    return *this;
  }
  ~Child() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    (void)WaitFor(pid_, absl::Seconds(5));
  }
  [[nodiscard]] pid_t pid() const { return pid_; }
  // Blocks until it exits; its wait status.
  int Wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }
  // SIGTERM, then an error unless it exits 0 within a few seconds. The CPU time (user +
  // system) it used over its whole life.
  absl::StatusOr<absl::Duration> Stop() {
    ::kill(pid_, SIGTERM);
    const MonoTime deadline = MonoNow() + absl::Seconds(5);
    int status = 0;
    rusage usage{};
    for (;;) {
      const pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
      if (r == pid_) break;
      if ((r < 0 && errno != EINTR) || MonoNow() >= deadline) {
        return absl::DeadlineExceededError("daemon did not stop on SIGTERM");
      }
      ::usleep(200);
    }
    pid_ = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::InternalError(absl::StrCat("daemon ended with ", io::process::DescribeWaitStatus(status)));
    }
    return DurationFromTimeval(usage.ru_utime) + DurationFromTimeval(usage.ru_stime);
  }

 private:
  pid_t pid_ = -1;
};

class StartupBench {
 public:
  static absl::StatusOr<StartupBench> Create(const StartupBenchOptions& options) {
    StartupBench bench(options);
    bench.log_ = UniqueFd(::memfd_create("hotring-bench-startup-log", MFD_CLOEXEC));
    if (!bench.log_.valid()) return ErrnoStatus("memfd_create");
    return bench;
  }

  // fork+exec until the --ready-fd newline; `cpu`: the daemon's CPU time over its life (the
  // start-up and the stop, nothing in between).
  absl::StatusOr<absl::Duration> Ready(absl::Duration& cpu) {
    const std::string socket = NextSocket();
    HOTRING_ASSIGN_OR_RETURN(ReadyPipe pipe, MakeReadyPipe());
    const MonoTime start = MonoNow();
    HOTRING_ASSIGN_OR_RETURN(Child daemon, Spawn(DaemonArgs(socket, true), pipe.write.get()));
    pipe.write.Reset();
    HOTRING_RETURN_IF_ERROR(AwaitReady(pipe.read, daemon));
    const absl::Duration took = Since(start, MonoNow());
    HOTRING_ASSIGN_OR_RETURN(cpu, daemon.Stop());
    return took;
  }

  // The daemon and `control status` started together (the client first: its first send finds
  // no daemon), until the client exits with its answer.
  absl::StatusOr<absl::Duration> FirstStatus() {
    const std::string socket = NextSocket();
    const MonoTime start = MonoNow();
    HOTRING_ASSIGN_OR_RETURN(
        Child client,
        Spawn({options_.binary, "control", "status", "--socket", socket, "--timeout", "10"}, -1));
    HOTRING_ASSIGN_OR_RETURN(Child daemon, Spawn(DaemonArgs(socket, false), -1));
    const int status = client.Wait();
    const absl::Duration took = Since(start, MonoNow());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::InternalError(absl::StrCat("control status ended with ",
                                              io::process::DescribeWaitStatus(status), ": ", Log()));
    }
    HOTRING_RETURN_IF_ERROR(daemon.Stop().status());
    return took;
  }

  // `daemon --daemonize` until the parent exits 0. The daemon it leaves is stopped with
  // `control exit` and reaped here (this process is made the subreaper of its descendants).
  absl::StatusOr<absl::Duration> Daemonize() {
    const std::string socket = NextSocket();
    std::vector<std::string> args = DaemonArgs(socket, false);
    args.push_back("--daemonize");
    const MonoTime start = MonoNow();
    HOTRING_ASSIGN_OR_RETURN(Child parent, Spawn(std::move(args), -1));
    const int status = parent.Wait();
    const absl::Duration took = Since(start, MonoNow());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::InternalError(absl::StrCat("daemon --daemonize ended with ",
                                              io::process::DescribeWaitStatus(status), ": ", Log()));
    }
    ControlRequest exit;
    exit.command = ControlCommand::kExit;
    HOTRING_RETURN_IF_ERROR(Ask(socket, std::move(exit), absl::Seconds(5)).status());
    const std::optional<int> daemon = WaitFor(-1, absl::Seconds(5));
    if (!daemon.has_value()) return absl::DeadlineExceededError("daemonized daemon did not exit");
    return took;
  }

 private:
  struct ReadyPipe {
    UniqueFd read;
    UniqueFd write;
  };

  explicit StartupBench(StartupBenchOptions options) : options_(std::move(options)) {}

  std::string NextSocket() {
    return absl::StrCat("@hotring-bench-startup-", ::getpid(), "-", counter_++);
  }

  std::vector<std::string> DaemonArgs(const std::string& socket, bool ready_fd) const {
    std::vector<std::string> args = {options_.binary, "daemon", "--socket", socket,
                                     "--log-level", "warning"};
    if (!options_.netlink) args.push_back("--no-netlink");
    if (ready_fd) args.insert(args.end(), {"--ready-fd", absl::StrCat(kReadyFd)});
    return args;
  }

  static absl::StatusOr<ReadyPipe> MakeReadyPipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
    ReadyPipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
    // Above 3, so that the dup2 onto fd 3 makes a descriptor without close-on-exec.
    if (pipe.write.get() <= kReadyFd) {
      pipe.write = UniqueFd(::fcntl(pipe.write.get(), F_DUPFD_CLOEXEC, kReadyFd + 1));
      if (!pipe.write.valid()) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC)");
    }
    return pipe;
  }

  // posix_spawn (vfork+exec in glibc): stdin and stdout on /dev/null, stderr into the log,
  // `ready_fd` (when >= 0) as fd 3.
  absl::StatusOr<Child> Spawn(std::vector<std::string> argv, int ready_fd) {
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, log_.get(), 2);
    if (ready_fd >= 0) posix_spawn_file_actions_adddup2(&actions, ready_fd, kReadyFd);
    pid_t pid = -1;
    const int err = ::posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) return ErrnoStatus(absl::StrCat("posix_spawn(", argv[0], ")"), err);
    return Child(pid);
  }

  absl::Status AwaitReady(const UniqueFd& ready, Child& daemon) {
    pollfd p{ready.get(), POLLIN, 0};
    int polled;
    do {
      polled = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(kStartTimeout)));
    } while (polled < 0 && errno == EINTR);
    if (polled < 0) return ErrnoStatus("poll(ready fd)");
    if (polled == 0) return absl::DeadlineExceededError(absl::StrCat("daemon not ready: ", Log()));
    char byte = 0;
    if (::read(ready.get(), &byte, 1) == 1 && byte == '\n') return absl::OkStatus();
    const int status = daemon.Wait();
    return absl::InternalError(absl::StrCat("daemon ended before it was ready (",
                                            io::process::DescribeWaitStatus(status), "): ", Log()));
  }

  std::string Log() const {
    struct stat st;
    if (::fstat(log_.get(), &st) != 0 || st.st_size <= 0) return "";
    std::string text(static_cast<size_t>(st.st_size), '\0');
    const ssize_t n = ::pread(log_.get(), text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return text;
  }

  StartupBenchOptions options_;
  UniqueFd log_;  // every child's stderr, for the error when a start fails
  int counter_ = 0;
};

// Makes this process the subreaper of its descendants while it lives, so that a daemon that
// left its parent (--daemonize) is reaped here rather than by init.
class Subreaper {
 public:
  Subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~Subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  Subreaper(const Subreaper&) = delete;
  Subreaper& operator=(const Subreaper&) = delete;
};

absl::Duration Percentile(std::vector<absl::Duration> sorted, double p) {
  if (sorted.empty()) return absl::ZeroDuration();
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * (sorted.size() - 1) + 0.5));
  return sorted[i];
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

// Exit code 2 for bad arguments, else 1.
int Fail(const absl::Status& status) {
  std::string message(status.message());
  const std::string prefix = "bench startup: ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  std::fprintf(stderr, "hotring bench startup: %s\n", message.c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

absl::StatusOr<std::vector<StartupSeries>> RunStartupBench(const StartupBenchOptions& options) {
  if (options.starts < 1) return absl::InvalidArgumentError("--starts must be at least 1");
  HOTRING_ASSIGN_OR_RETURN(StartupBench bench, StartupBench::Create(options));
  const Subreaper subreaper;
  std::vector<StartupSeries> series = {
      {"ready (fork+exec to --ready-fd)", {}},
      {"status (daemon + control status together, to the answer)", {}},
      {"daemonize (daemon --daemonize to the parent's exit)", {}},
      {"daemon CPU time per start (start-up and stop)", {}}};
  for (StartupSeries& s : series) s.samples.reserve(static_cast<size_t>(options.starts));
  // Interleaved, so that a change in the machine's load touches every series alike.
  for (int i = 0; i < options.starts; ++i) {
    absl::Duration cpu;
    HOTRING_ASSIGN_OR_RETURN(const absl::Duration ready, bench.Ready(cpu));
    series[0].samples.push_back(ready);
    series[3].samples.push_back(cpu);
    HOTRING_ASSIGN_OR_RETURN(const absl::Duration status, bench.FirstStatus());
    series[1].samples.push_back(status);
    HOTRING_ASSIGN_OR_RETURN(const absl::Duration daemonize, bench.Daemonize());
    series[2].samples.push_back(daemonize);
  }
  return series;
}

std::string FormatStartupReport(const std::vector<StartupSeries>& series, bool json,
                                absl::string_view load_start, absl::string_view load_end) {
  auto ms = [](absl::Duration d) { return absl::ToDoubleMilliseconds(d); };
  std::vector<std::string> parts;
  for (const StartupSeries& s : series) {
    std::vector<absl::Duration> sorted = s.samples;
    std::sort(sorted.begin(), sorted.end());
    const double min = ms(Percentile(sorted, 0));
    const double median = ms(Percentile(sorted, 0.5));
    const double p90 = ms(Percentile(sorted, 0.9));
    const double max = ms(Percentile(sorted, 1));
    if (json) {
      parts.push_back(JsonObject()
                          .String("name", s.name)
                          .Int("starts", static_cast<int64_t>(s.samples.size()))
                          .Double("min_ms", min)
                          .Double("median_ms", median)
                          .Double("p90_ms", p90)
                          .Double("max_ms", max)
                          .Build());
    } else {
      parts.push_back(absl::StrFormat(
          "%-58s %4d starts  min %6.2f  median %6.2f  p90 %6.2f  max %7.2f ms", s.name,
          s.samples.size(), min, median, p90, max));
    }
  }
  if (json) {
    return absl::StrCat("{\"series\": [", absl::StrJoin(parts, ", "),
                        "], \"load_average_start\": ", JsonQuote(load_start),
                        ", \"load_average_end\": ", JsonQuote(load_end), "}\n");
  }
  return absl::StrCat(absl::StrJoin(parts, "\n"), "\nload average ", load_start,
                      " at the start, ", load_end, " at the end\n");
}

int BenchStartupCommand(const std::vector<std::string>& args) {
  StartupBenchOptions options;
  bool json = false;
  FlagSet flags(
      "bench startup",
      "usage: hotring bench startup [options]\n"
      "Starts `hotring daemon --no-netlink` on a private abstract socket, one start after another\n"
      "(each daemon stopped before the next), three ways:\n"
      "  ready        fork+exec of the daemon until its --ready-fd newline\n"
      "  status       the daemon and `hotring control status` started together, until the\n"
      "               client has its answer (what an init script's first request sees)\n"
      "  daemonize    `hotring daemon --daemonize` until the parent exits 0 (serving)\n"
      "and the CPU time (user + system) each daemon of `ready` used, start-up and stop.");
  flags.Int("--starts", "N", &options.starts, 1, 1'000'000, "starts per series (default 100)")
      .Bool("--netlink", &options.netlink, "the daemon also binds the kernel uevent socket (root)")
      .String("--binary", "P", &options.binary, "the hotring to start (default: the one beside hotring-bench)")
      .Bool("--json", &json, "the figures as JSON");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  const std::string load_before = LoadAverage();
  absl::StatusOr<std::vector<StartupSeries>> series = RunStartupBench(options);
  if (!series.ok()) return Fail(series.status());
  std::fputs(FormatStartupReport(*series, json, load_before, LoadAverage()).c_str(), stdout);
  return 0;
}

}  // namespace hotring::hotplug

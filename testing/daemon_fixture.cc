#include "testing/daemon_fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/client/daemon_child.h"

extern char** environ;

namespace hotring::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Polls for the child's exit until `timeout`; true if it exited (status stored).
bool WaitFor(pid_t pid, absl::Duration timeout, int* status) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;
    if (absl::Now() >= deadline) return false;
    ::usleep(2000);
  }
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::Duration ScaledForEmulation(absl::Duration timeout) {
  double scale = 1;
  const char* text = std::getenv("HOTRING_TEST_TIME_SCALE");
  if (text == nullptr || !absl::SimpleAtod(text, &scale) || !(scale >= 1)) scale = 1;
  return timeout * scale;
}

std::string HotringBinary() {
  if (const char* bin = std::getenv("HOTRING_BIN"); bin != nullptr && *bin != '\0') return bin;
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(var); dir != nullptr) {
      for (const char* rel : {"/hotring/hotring", "/__main__/hotring"}) {
        const std::string path = absl::StrCat(dir, rel);
        if (::access(path.c_str(), X_OK) == 0) return path;
      }
    }
  }
  return "hotring";
}

bool WaitUntil(absl::FunctionRef<bool()> condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + ScaledForEmulation(timeout);
  for (;;) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    ::usleep(5000);
  }
}

absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string templ = absl::StrCat(base != nullptr ? base : "/tmp", "/", prefix, "_XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) return ErrnoStatus("mkdtemp");
  return templ;
}

absl::StatusOr<BackgroundCommand> BackgroundCommand::Start(
    const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  HOTRING_ASSIGN_OR_RETURN(const std::string dir, MakeTempDir("hotring_cmd"));
  const std::string out_path = dir + "/out";
  const std::string err_path = dir + "/err";
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = env;
  std::vector<char*> cargs = CStrings(args);
  std::vector<char*> cenv = CStrings(envs);
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execve(cargs[0], cargs.data(), env.empty() ? environ : cenv.data());
    ::_exit(127);
  }
  return BackgroundCommand(pid, dir);
}

BackgroundCommand::BackgroundCommand(BackgroundCommand&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), dir_(std::move(other.dir_)) {}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
}

std::string BackgroundCommand::ErrSoFar() const { return ReadFile(dir_ + "/err"); }

std::string BackgroundCommand::OutSoFar() const { return ReadFile(dir_ + "/out"); }

bool BackgroundCommand::WaitForErr(absl::string_view text, absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (!absl::StrContains(ErrSoFar(), text)) {
    if (absl::Now() > deadline) return false;
    ::usleep(5000);
  }
  return true;
}

absl::StatusOr<CommandResult> BackgroundCommand::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("already waited");
  int status = 0;
  if (!WaitFor(pid_, timeout, &status)) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  CommandResult result;
  result.exit_code = ExitCode(status);
  result.out = ReadFile(dir_ + "/out");
  result.err = ReadFile(dir_ + "/err");
  ::unlink((dir_ + "/out").c_str());
  ::unlink((dir_ + "/err").c_str());
  ::rmdir(dir_.c_str());
  return result;
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env,
                                         absl::Duration timeout) {
  HOTRING_ASSIGN_OR_RETURN(BackgroundCommand command, BackgroundCommand::Start(argv, env));
  return command.Wait(timeout);
}

absl::StatusOr<CommandResult> RunHotring(const std::vector<std::string>& args,
                                         const std::vector<std::string>& env,
                                         absl::Duration timeout) {
  std::vector<std::string> argv = {HotringBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, env, timeout);
}

absl::StatusOr<DaemonProcess> DaemonProcess::Start(Options options) {
  static std::atomic<int> counter{0};
  if (options.socket.empty()) {
    options.socket = absl::StrCat("@hotring-test-", ::getpid(), "-", counter++);
  }
  if (options.log_path.empty()) {
    HOTRING_ASSIGN_OR_RETURN(const std::string dir, MakeTempDir("hotring_daemon"));
    options.log_path = dir + "/daemon.log";
  }
  std::vector<std::string> args = options.command_prefix;
  for (std::string arg : {HotringBinary(), std::string("daemon"), std::string("--socket"),
                          options.socket}) {
    args.push_back(std::move(arg));
  }
  if (!options.netlink) args.push_back("--no-netlink");
  if (!options.modules) args.push_back("--no-modules");
  args.insert(args.end(), options.args.begin(), options.args.end());
  const UniqueFd log(
      ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log.valid()) return ErrnoStatus(absl::StrCat("open(", options.log_path, ")"));
  const UniqueFd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return ErrnoStatus("open(/dev/null)");
  // The daemon says when it serves (--ready-fd): no polling of its socket.
  const std::string program = args[0];
  HOTRING_ASSIGN_OR_RETURN(hotplug::DaemonChild child,
                           hotplug::DaemonChild::Start({.program = program,
                                                        .argv = std::move(args),
                                                        .stdin_fd = in.get(),
                                                        .stdout_fd = log.get(),
                                                        .stderr_fd = log.get(),
                                                        .netlink_fd = options.netlink_fd}));
  DaemonProcess daemon(std::move(child), options.socket, options.log_path);
  const absl::Status ready = daemon.child_.WaitReady(ScaledForEmulation(absl::Seconds(20)));
  if (ready.ok()) return daemon;
  return absl::Status(ready.code(), absl::StrCat(ready.message(), ": ", daemon.Log()));
}

DaemonProcess::DaemonProcess(DaemonProcess&& other) noexcept
    : child_(std::move(other.child_)),
      socket_(std::move(other.socket_)),
      log_path_(std::move(other.log_path_)) {}

DaemonProcess::~DaemonProcess() { Kill(); }

std::string DaemonProcess::Log() const { return ReadFile(log_path_); }

absl::StatusOr<std::map<std::string, uint64_t>> DaemonProcess::Status() const {
  HOTRING_ASSIGN_OR_RETURN(const CommandResult r,
                           RunHotring({"control", "status", "--socket", socket_}));
  if (r.exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("control status: ", r.err));
  }
  std::map<std::string, uint64_t> counters;
  for (const absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> kv = absl::StrSplit(line, ' ');
    uint64_t value;
    if (kv.size() == 2 && absl::SimpleAtoi(kv[1], &value)) counters[std::string(kv[0])] = value;
  }
  return counters;
}

absl::StatusOr<std::map<std::string, uint64_t>> DaemonProcess::WaitForCounters(
    const std::map<std::string, uint64_t>& at_least, absl::Duration timeout) const {
  std::map<std::string, uint64_t> last;
  absl::Status error = absl::OkStatus();
  const auto met = [&] {
    absl::StatusOr<std::map<std::string, uint64_t>> counters = Status();
    error = counters.status();
    if (!counters.ok()) return false;
    last = *std::move(counters);
    for (const auto& [key, value] : at_least) {
      const auto it = last.find(key);
      if ((it == last.end() ? 0 : it->second) < value) return false;
    }
    return true;
  };
  if (WaitUntil(met, timeout)) return last;
  std::string wanted, seen;
  for (const auto& [key, value] : at_least) {
    const auto it = last.find(key);
    absl::StrAppend(&wanted, " ", key, ">=", value);
    absl::StrAppend(&seen, " ", key, "=", it == last.end() ? 0 : it->second);
  }
  return absl::DeadlineExceededError(
      absl::StrCat("waited for", wanted, "; last seen", seen,
                   error.ok() ? "" : absl::StrCat("; last status request: ", error.ToString())));
}

absl::Status DaemonProcess::WaitForLog(absl::string_view text, int times,
                                       absl::Duration timeout) const {
  const std::string needle(text);
  int seen = 0;
  const auto met = [&] {
    const std::string log = Log();
    seen = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) {
      ++seen;
    }
    return seen >= times;
  };
  if (WaitUntil(met, timeout)) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("the log has \"", text, "\" ", seen, " times, not ", times));
}

absl::Status DaemonProcess::Settle(absl::Duration timeout) const {
  timeout = ScaledForEmulation(timeout);
  HOTRING_ASSIGN_OR_RETURN(
      const CommandResult r,
      RunHotring({"settle", "--socket", socket_, "--timeout",
                  absl::StrCat(absl::ToDoubleSeconds(timeout))},
                 {}, timeout + absl::Seconds(10)));
  if (r.exit_code != 0) return absl::DeadlineExceededError(absl::StrCat("settle: ", r.err));
  return absl::OkStatus();
}

absl::Status DaemonProcess::SettleWhileProgressing(absl::Duration stall) const {
  // The counters that move only when an event does (not uptime_ms, not monitors).
  static constexpr const char* kProgress[] = {"received", "handled",  "failed",
                                              "timed_out", "killed", "reorder_timeouts"};
  const absl::Duration round = std::min(stall, absl::Seconds(10));
  std::vector<uint64_t> last;
  absl::Time last_move = absl::Now();
  for (;;) {
    const absl::Status settled = Settle(round);
    if (settled.ok() || !absl::IsDeadlineExceeded(settled)) return settled;
    HOTRING_ASSIGN_OR_RETURN(const auto counters, Status());
    std::vector<uint64_t> now;
    std::string listed;
    for (const char* key : kProgress) {
      const auto it = counters.find(key);
      now.push_back(it == counters.end() ? 0 : it->second);
      absl::StrAppend(&listed, " ", key, "=", now.back());
    }
    if (now != last) {
      last = std::move(now);
      last_move = absl::Now();
      continue;
    }
    if (absl::Now() - last_move >= ScaledForEmulation(stall)) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no progress for ", absl::FormatDuration(absl::Now() - last_move), ";", listed, "; ",
          settled.message()));
    }
  }
}

absl::Status DaemonProcess::Stop(absl::Duration timeout) {
  if (!child_.running()) return absl::FailedPreconditionError("daemon not running");
  ::kill(child_.pid(), SIGTERM);
  const std::optional<int> status = child_.WaitExit(ScaledForEmulation(timeout));
  if (!status.has_value()) {
    Kill();
    return absl::DeadlineExceededError("daemon did not stop after SIGTERM");
  }
  if (ExitCode(*status) != 0) {
    return absl::InternalError(absl::StrCat("daemon exited with ", ExitCode(*status)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> DaemonProcess::WaitExit(absl::Duration timeout) {
  if (!child_.running()) return absl::FailedPreconditionError("daemon not running");
  timeout = ScaledForEmulation(timeout);
  const std::optional<int> status = child_.WaitExit(timeout);
  if (!status.has_value()) {
    return absl::DeadlineExceededError(
        absl::StrCat("the daemon still runs after ", absl::FormatDuration(timeout)));
  }
  return ExitCode(*status);
}

void DaemonProcess::Kill() { child_.Kill(); }

}  // namespace hotring::testing

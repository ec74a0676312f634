// Test fixtures around the real `hotring` binary, for hotring's own end-to-end tests and for
// other projects' Bazel suites: a daemon in a child process on a private (abstract) socket,
// commands run to completion with their output captured, and the status counters.
//
// In another project: depend on "@hotring//testing:daemon_fixture" and put "@hotring//:hotring"
// in the test's `data`; set HOTRING_BIN to its runfiles path if it is not found by itself.
#ifndef HOTRING_TESTING_DAEMON_FIXTURE_H_
#define HOTRING_TESTING_DAEMON_FIXTURE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "hotplug/client/daemon_child.h"

namespace hotring::testing {

// The hotring binary: $HOTRING_BIN, else the runfiles copy of //:hotring.
std::string HotringBinary();

// `timeout` times $HOTRING_TEST_TIME_SCALE (a number >= 1; unset or invalid: 1). For deadlines
// that only keep a broken daemon from hanging a test (settle, readiness, stop), and for daemon
// timeouts a test sets short to run quickly, never for a bound a test asserts as behaviour.
// testing/arm/run_arm_tests.sh sets it in its emulated guests (TCG on a shared host runs a
// guest at a small fraction of one host CPU); elsewhere it is 1.
absl::Duration ScaledForEmulation(absl::Duration timeout);

// Polls `condition` (every few milliseconds) until it holds: true, or false once `timeout`
// (scaled: ScaledForEmulation) has passed. For waiting on a state before acting on it or
// asserting on it, instead of sleeping for a time that a loaded machine may need more of.
bool WaitUntil(absl::FunctionRef<bool()> condition, absl::Duration timeout = absl::Seconds(60));

// A fresh temporary directory (removed by the caller, or left for post-mortem in /tmp).
absl::StatusOr<std::string> MakeTempDir(const std::string& prefix = "hotring_test");

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

// Runs argv to completion (argv[0] is a path), with `env` ("KEY=VALUE") as its whole
// environment when non-empty, else ours. Killed after `timeout`.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env = {},
                                         absl::Duration timeout = absl::Seconds(60));

// A command started in the background; Wait() collects it. Owns the child: destruction
// SIGKILLs and reaps it if still running.
class BackgroundCommand {
 public:
  static absl::StatusOr<BackgroundCommand> Start(const std::vector<std::string>& argv,
                                                 const std::vector<std::string>& env = {});
  BackgroundCommand(BackgroundCommand&& other) noexcept;
  BackgroundCommand& operator=(BackgroundCommand&& other) = delete;
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;
  ~BackgroundCommand();
  [[nodiscard]] pid_t pid() const { return pid_; }
  // What the command has written to stderr (stdout) so far.
  [[nodiscard]] std::string ErrSoFar() const;
  [[nodiscard]] std::string OutSoFar() const;
  // Polls stderr until it contains `text`; false after `timeout`.
  bool WaitForErr(absl::string_view text, absl::Duration timeout = absl::Seconds(30)) const;
  // Waits up to `timeout` (then SIGKILLs) and returns the exit code and output.
  absl::StatusOr<CommandResult> Wait(absl::Duration timeout = absl::Seconds(60));

 private:
  BackgroundCommand(pid_t pid, std::string dir) : pid_(pid), dir_(std::move(dir)) {}
  pid_t pid_ = -1;
  std::string dir_;
};

// Runs `hotring args...`.
absl::StatusOr<CommandResult> RunHotring(const std::vector<std::string>& args,
                                         const std::vector<std::string>& env = {},
                                         absl::Duration timeout = absl::Seconds(60));

// A daemon child process. Owns it: destruction SIGKILLs and reaps it if still running.
class DaemonProcess {
 public:
  struct Options {
    std::string socket;              // empty: a unique abstract name
    std::vector<std::string> args;   // extra `hotring daemon` arguments
    bool netlink = false;            // --no-netlink unless set
    // --no-modules unless set: a test daemon never loads kernel modules by accident (a test
    // that wants the modules stage sets this and --modules-dry-run-log).
    bool modules = false;
    std::string log_path;            // daemon stderr; empty: a file in a temp dir
    // Runs the daemon through this command (argv, absolute path first), e.g. setpriv to start
    // it as another user. The daemon's pid is then the wrapper's, which must exec it.
    std::vector<std::string> command_prefix;
    // A kernel uevent listener for the daemon to take over (`--netlink-fd`), as the boot's
    // init passes it; borrowed. -1: none.
    int netlink_fd = -1;
  };

  // Starts the daemon and waits until it says it serves (`daemon --ready-fd`): its sockets are
  // bound, so any request from here on is answered. An error (with the log) if it exits first.
  static absl::StatusOr<DaemonProcess> Start(Options options);

  DaemonProcess(DaemonProcess&& other) noexcept;
  DaemonProcess& operator=(DaemonProcess&& other) = delete;
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;
  ~DaemonProcess();

  [[nodiscard]] pid_t pid() const { return child_.pid(); }
  [[nodiscard]] const std::string& socket() const { return socket_; }
  [[nodiscard]] const std::string& log_path() const { return log_path_; }
  // The daemon's log so far.
  [[nodiscard]] std::string Log() const;

  // `hotring control status` as counters.
  absl::StatusOr<std::map<std::string, uint64_t>> Status() const;
  // Polls `control status` until every counter in `at_least` has reached its value (a counter
  // the daemon does not report reads as 0): the counters that met it; DeadlineExceeded with
  // the last ones read once `timeout` (scaled) has passed.
  absl::StatusOr<std::map<std::string, uint64_t>> WaitForCounters(
      const std::map<std::string, uint64_t>& at_least,
      absl::Duration timeout = absl::Seconds(60)) const;
  // Polls the log until `text` appears in it `times` times; DeadlineExceeded after `timeout`
  // (scaled).
  absl::Status WaitForLog(absl::string_view text, int times = 1,
                          absl::Duration timeout = absl::Seconds(60)) const;
  // `hotring settle --timeout` (scaled: ScaledForEmulation).
  absl::Status Settle(absl::Duration timeout = absl::Seconds(30)) const;
  // Settles in rounds for as long as the daemon makes progress (events received, handled,
  // failed, timed out or released by the reorder timeout): an error only once nothing has moved
  // for `stall` (scaled), with what settle said was pending and the counters. For tests that
  // push many events through many handler processes, whose run time follows the machine's
  // process creation (20-40x slower on a loaded machine than on a quiet one).
  absl::Status SettleWhileProgressing(absl::Duration stall = absl::Seconds(60)) const;
  // SIGTERM and wait (up to `timeout`, scaled) for a clean exit; the exit code must be 0.
  absl::Status Stop(absl::Duration timeout = absl::Seconds(30));
  // Waits up to `timeout` (scaled) for the daemon to exit by itself, and reaps it: its exit
  // code (128 + signal when killed); DeadlineExceeded while it still runs.
  absl::StatusOr<int> WaitExit(absl::Duration timeout = absl::Seconds(30));
  // SIGKILL and reap.
  void Kill();
  [[nodiscard]] bool running() const { return child_.running(); }

 private:
  DaemonProcess(hotplug::DaemonChild child, std::string socket, std::string log_path)
      : child_(std::move(child)), socket_(std::move(socket)), log_path_(std::move(log_path)) {}
  hotplug::DaemonChild child_;
  std::string socket_;
  std::string log_path_;
};

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_DAEMON_FIXTURE_H_

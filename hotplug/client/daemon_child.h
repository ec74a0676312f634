// DaemonChild: the starting side of readiness.h's `--ready-fd`. Forks and execs a `hotring
// daemon`, gives it fd 3 as the write end of a pipe and reads the other end: a newline there
// means it serves, end of file without one that it gave up. Used by the boot's init, by
// `hotring replay` and by the test fixtures (testing/daemon_fixture.h).
#ifndef HOTRING_HOTPLUG_CLIENT_DAEMON_CHILD_H_
#define HOTRING_HOTPLUG_CLIENT_DAEMON_CHILD_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/unique_fd.h"

namespace hotring::hotplug {

// A started daemon. Owns the child process (destruction SIGKILLs and reaps it while it runs)
// and the read end of its ready pipe.
class DaemonChild {
 public:
  struct Options {
    std::string program;            // exec'd as is (execv: a path, not searched in PATH)
    std::vector<std::string> argv;  // argv[0] first; "--ready-fd 3" is appended
    // The child's stdin, stdout and stderr: -1 keeps ours. Borrowed: only dup'ed in the child.
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
    // A kernel uevent listener for the daemon to take over (`--netlink-fd 4` is appended):
    // what the kernel queues in it before the daemon serves is not lost. -1: the daemon opens
    // its own. Borrowed like the others.
    int netlink_fd = -1;
  };

  static constexpr int kReadyFd = 3;
  static constexpr int kNetlinkFd = 4;

  // Forks and execs; does not wait (WaitReady does).
  static absl::StatusOr<DaemonChild> Start(const Options& options);

  DaemonChild(DaemonChild&& other) noexcept;
  DaemonChild& operator=(DaemonChild&&) = delete;
  DaemonChild(const DaemonChild&) = delete;
  DaemonChild& operator=(const DaemonChild&) = delete;
  ~DaemonChild();

  // Blocks until the daemon says it serves (OK), gives up, or `timeout` passes
  // (DeadlineExceeded). When it gave up, it is reaped if it exits within `timeout` too, and
  // the error says how it ended ("the daemon exited: exit 1").
  absl::Status WaitReady(absl::Duration timeout);

  // OK while it runs; once it has exited (reaped here), an error saying how.
  [[nodiscard]] absl::Status CheckAlive();

  // Waits up to `timeout` for its exit (reaped here): the wait status, nullopt while it runs.
  std::optional<int> WaitExit(absl::Duration timeout);

  // SIGTERM, then SIGKILL if it has not exited after `timeout`: the wait status.
  int Terminate(absl::Duration timeout);

  // SIGKILL and reap (nothing when it is not running).
  void Kill();

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool running() const { return pid_ > 0; }

 private:
  DaemonChild(pid_t pid, UniqueFd ready) : pid_(pid), ready_(std::move(ready)) {}
  pid_t pid_ = -1;
  UniqueFd ready_;  // read end of the ready pipe, until the daemon has spoken
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLIENT_DAEMON_CHILD_H_

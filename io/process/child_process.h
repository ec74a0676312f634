// ChildProcess: a process this one started and must not lose, owned through its pidfd. Waiting
// and reading go through the reactor; a child still running when its owner drops it is killed
// and reaped, so no child outlives the object that started it. Children are started by the
// Spawner (spawner.h: a program, exec'd) or by ForkChild (a copy of this process).
#ifndef HOTRING_IO_PROCESS_CHILD_PROCESS_H_
#define HOTRING_IO_PROCESS_CHILD_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::io::process {

// Whether a child leads a process group of its own, and so whether signals for it also go to
// the processes it leaves behind (a background `sleep 30 &`, a grandchild holding its pipes).
enum class ProcessGroup {
  kOwn,     // the child called setsid: its group is signalled with it, and killed when dropped
  kShared,  // the child stays in this process's group: only the child itself is signalled
};

// Owns one started child: its pidfd, its process group when it leads one, and the parent's
// ends of its stdout/stderr pipes. Destroying a child that has not been reaped SIGKILLs it (and
// its own group) and reaps it (blocking, which is short: SIGKILL cannot be caught).
//
// The child is reaped only by this object (waitid on the pidfd, never IORING_OP_WAITID): until
// then its zombie keeps its pid, and so its group id, from naming anybody else.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(pid_t pid, UniqueFd pidfd, ProcessGroup group, UniqueFd stdout_read = UniqueFd(),
               UniqueFd stderr_read = UniqueFd())
      : pid_(pid), pidfd_(std::move(pidfd)), stdout_(std::move(stdout_read)),
        stderr_(std::move(stderr_read)), group_(group) {}
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { KillAndReap(); }

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] int pidfd() const { return pidfd_.get(); }
  [[nodiscard]] bool reaped() const { return reaped_; }
  [[nodiscard]] ProcessGroup group() const { return group_; }
  // The parent's (non-blocking, close-on-exec) read ends; empty once taken, or when the child's
  // stream was not a pipe.
  [[nodiscard]] UniqueFd TakeStdout() { return std::move(stdout_); }
  [[nodiscard]] UniqueFd TakeStderr() { return std::move(stderr_); }

  // Sends `sig` to the child (pidfd_send_signal) and, with ProcessGroup::kOwn, to its process
  // group. Fails once the child has been reaped.
  absl::Status Signal(int sig);
  // Sends `sig` to the child's process group only (leftovers), while the child is unreaped.
  // Fails for a child without a group of its own.
  absl::Status SignalGroup(int sig);
  // Reaps the child if it has exited (never blocks); nullopt while it runs.
  absl::StatusOr<std::optional<io::ExitStatus>> TryReap();
  // Blocks until the child exits, and reaps it. For benchmarks and synchronous callers.
  absl::StatusOr<io::ExitStatus> WaitBlocking();
  // Waits on the reactor (a poll of the pidfd) until the child exits, and reaps it. The object
  // must outlive the task; dropping the task leaves the child running (and to the destructor).
  Task<absl::StatusOr<io::ExitStatus>> Wait(io::Reactor& reactor);
  // Everything the child writes to its stdout pipe up to end of file (normally its exit).
  // Fails if there is no pipe (not asked for, or taken).
  Task<absl::StatusOr<std::string>> ReadStdout(io::Reactor& reactor);
  // SIGKILL to the child (and its own group), then a blocking reap. No-op once reaped.
  void KillAndReap();

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd stdout_;
  UniqueFd stderr_;
  ProcessGroup group_ = ProcessGroup::kShared;
  bool reaped_ = false;
};

// Forks a copy of this process that runs `body` and exits with its return value. The copy
// stays in this process's group, keeps its signal dispositions and mask, and has no pipes.
// Only for a single-threaded caller, and `body` must stick to async-signal-safe calls.
absl::StatusOr<ChildProcess> ForkChild(absl::FunctionRef<int()> body);

// "exit code 3" or "killed by signal 9".
[[nodiscard]] std::string DescribeExit(const io::ExitStatus& status);

// "exit 1" or "signal 9", for a waitpid() status of a child reaped elsewhere.
[[nodiscard]] std::string DescribeWaitStatus(int wait_status);

}  // namespace hotring::io::process

#endif  // HOTRING_IO_PROCESS_CHILD_PROCESS_H_

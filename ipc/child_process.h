// ChildProcess: a process this one started (posix_spawn) and must not lose: its pidfd, and the
// read end of a pipe on its stdout. Waiting and reading go through the reactor. A child still
// running when its owner drops it is killed and reaped, so no benchmark process outlives the
// command that started it.
#ifndef HOTRING_IPC_CHILD_PROCESS_H_
#define HOTRING_IPC_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::ipc {

struct ChildSpec {
  std::string path;               // executable
  std::vector<std::string> argv;  // argv[0] included
  // (descriptor in this process, number it gets in the child); everything else the child
  // inherits is close-on-exec except stdin and stderr.
  std::vector<std::pair<int, int>> fds;
};

// Owns one child: pidfd and stdout pipe. Move-only.
class ChildProcess {
 public:
  // Starts the child with an empty signal mask and default SIGINT/SIGTERM/SIGHUP/SIGPIPE
  // handling (the caller may have them blocked for its signalfd).
  static absl::StatusOr<ChildProcess> Spawn(const ChildSpec& spec);

  // Forks a copy of this (single-threaded) process that runs `body` and exits with its return
  // value. The body must stick to async-signal-safe calls. The child has no stdout pipe.
  static absl::StatusOr<ChildProcess> Fork(absl::FunctionRef<int()> body);

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  [[nodiscard]] pid_t pid() const { return pid_; }

  // Sends `signo` unless the child has been reaped already.
  absl::Status Signal(int signo) const;

  // Everything the child writes to stdout, up to its end (normally the child's exit).
  Task<absl::StatusOr<std::string>> ReadStdout(io::Reactor& reactor);

  // Waits for the child to end and reaps it. The object must outlive the task.
  Task<absl::StatusOr<io::ExitStatus>> Wait(io::Reactor& reactor);

 private:
  ChildProcess() = default;
  void KillAndReap();
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd stdout_;
  bool reaped_ = true;
};

// "exit code 3" or "killed by signal 9".
std::string DescribeExit(const io::ExitStatus& status);

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_CHILD_PROCESS_H_

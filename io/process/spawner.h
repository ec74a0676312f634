// Spawner: runs external programs (event handlers, rule and install commands, benchmark
// workers) as children owned through a pidfd (child_process.h), with stdin on /dev/null,
// stdout/stderr captured through pipes and logged line by line under a label, every other
// descriptor closed, a deadline (SIGTERM, then SIGKILL after a grace period, to the child and
// its process group), and no zombie left behind on any path, including a dropped task. A
// request may instead pass this process's standard streams and chosen descriptors through, and
// keep the child in this process's group.
#ifndef HOTRING_IO_PROCESS_SPAWNER_H_
#define HOTRING_IO_PROCESS_SPAWNER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/task.h"
#include "core/unique_fd.h"
#include "io/ops.h"
#include "io/process/child_process.h"
#include "io/reactor.h"

namespace hotring::io::process {

enum class OutputStream { kStdout, kStderr };

// What happens to processes the child leaves in its process group when it exits (a background
// `sleep 30 &`, a grandchild that still holds the output pipes).
enum class LeftoverPolicy {
  kKill,  // SIGKILL the child's process group before reaping it (systemd-udevd's behaviour)
  kKeep,  // leave them; only the deadline's signals reach them
};

// Where a child's stdin comes from.
enum class ChildInput {
  kDevNull,  // /dev/null
  kInherit,  // this process's stdin
};

// Where a child's stdout or stderr goes.
enum class ChildOutput {
  kPipe,     // a pipe whose read end the ChildProcess owns (Run logs it line by line)
  kInherit,  // this process's stdout or stderr (Run does not see it)
  kDevNull,  // /dev/null, for output nobody would see: no pipe to make, poll, read and close
};

// A descriptor of this process that the child gets under a number of its own. Borrowed: the
// caller keeps `parent_fd` open until Start returns (the child has its own copy then).
struct PassedFd {
  int parent_fd;
  int child_fd;  // 3 or above: 0-2 are chosen by ChildInput/ChildOutput
};

// One program to run and the limits of the run. Owns its strings.
struct SpawnRequest {
  std::string program;             // path passed to execve: no PATH search, no shell
  std::vector<std::string> argv;   // argv[0] included; empty means {program}
  std::vector<std::string> envp;   // "KEY=VALUE", the child's whole environment
  std::string label;               // prefixes every log line, e.g. "SEQNUM=12 DEVPATH=/devices/x"
  absl::Duration timeout = absl::Seconds(180);   // SIGTERM after this; InfiniteDuration: never
  absl::Duration kill_grace = absl::Seconds(5);  // then SIGKILL after this; Infinite: never
  size_t max_line_bytes = 1024;    // longer lines are cut (and counted as truncated)
  size_t max_log_bytes = 64 * 1024;  // per run, both streams; later lines are counted, not logged
  // With ProcessGroup::kShared there is no group of the child's to kill: leftovers are kept.
  LeftoverPolicy leftovers = LeftoverPolicy::kKill;
  ChildInput stdin_from = ChildInput::kDevNull;
  ChildOutput stdout_to = ChildOutput::kPipe;
  ChildOutput stderr_to = ChildOutput::kPipe;
  // Besides 0-2, the only descriptors the child has (everything else is closed).
  std::vector<PassedFd> passed_fds;
  // kOwn: the child leads a new session (setsid), so signals reach what it leaves behind.
  // kShared: it stays in this process's group, where a terminal's ^C reaches it too.
  ProcessGroup group = ProcessGroup::kOwn;
  // Told the child's pid once it runs (so a handler can say what an event waits for).
  std::function<void(pid_t)> on_started;
};

// Counters of one output stream of one run.
struct OutputStats {
  uint64_t bytes = 0;            // bytes read from the pipe
  uint64_t lines = 0;            // lines seen (a final line without '\n' counts)
  uint64_t lines_logged = 0;     // lines handed to the log
  uint64_t lines_dropped = 0;    // lines seen after the log budget was spent (not logged)
  uint64_t lines_truncated = 0;  // lines longer than max_line_bytes (logged cut, or dropped)
};

// How a run ended.
struct SpawnResult {
  pid_t pid = 0;
  io::ExitStatus exit;
  bool timed_out = false;         // the timeout passed and SIGTERM was sent
  bool killed = false;            // SIGKILL was sent after the grace period
  bool output_held_open = false;  // after the child exited, something else still held a pipe
  absl::Duration duration;        // from spawn to reap
  OutputStats stdout_stats;
  OutputStats stderr_stats;
};

// One line of a child's output, borrowed for the duration of a LineSink call.
struct OutputLine {
  OutputStream stream;
  absl::string_view label;
  absl::string_view program;
  pid_t pid;
  absl::string_view text;  // without the '\n'; at most max_line_bytes
  bool truncated;
};
using LineSink = std::function<void(const OutputLine&)>;

// Splits a byte stream into lines with bounded memory: a line longer than `max_line_bytes` is
// cut there, and the rest of it is skipped up to the next '\n'. Owns the partial last line.
class LineSplitter {
 public:
  using Callback = absl::FunctionRef<void(absl::string_view line, bool truncated)>;
  explicit LineSplitter(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Calls `on_line` for every line completed by `data`.
  void Push(absl::string_view data, Callback on_line);
  // Calls `on_line` for a pending line without '\n', if any.
  void Finish(Callback on_line);
  [[nodiscard]] size_t pending_bytes() const { return partial_.size(); }

 private:
  void Append(absl::string_view piece);
  size_t max_line_bytes_;
  std::string partial_;
  bool truncated_ = false;  // partial_ was cut; skipping to the next '\n'
  bool has_partial_ = false;
};

// Starts children and supervises their runs on a reactor. Owns the small stack the
// vfork-style clone runs the child on, an open /dev/null (read-write: it may be a child's
// stdin, stdout or stderr), an open /proc/self/status, and a scratch buffer for draining pipes.
// Single-threaded: use it on its reactor's thread, and keep it alive until every Run task it
// returned is finished or destroyed.
class Spawner {
 public:
  // How the child is created (measured costs are in the project's benchmark notes).
  enum class Method {
    kAuto,         // kCloneVfork, falling back down this list when the kernel refuses
    kCloneVfork,   // clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) on a private stack
    kClone3Fork,   // clone3(CLONE_PIDFD), a fork that copies the address space
    kForkPidfdOpen,  // fork() + pidfd_open()
  };

  struct Options {
    Method method = Method::kAuto;
    // Receives every logged line. Empty: stdout lines go to LogInfo, stderr lines to LogWarning,
    // as "<label> <program>[<pid>]: <text>".
    LineSink line_sink;
  };

  static absl::StatusOr<std::unique_ptr<Spawner>> Create(Options options);
  static absl::StatusOr<std::unique_ptr<Spawner>> Create() { return Create(Options()); }
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;
  ~Spawner();

  // The method in use (kAuto is resolved at the first spawn).
  [[nodiscard]] Method method() const { return method_; }

  // Starts `request.program` synchronously (returns once it has exec'd). An exec failure
  // (missing program, not executable, ...) is returned as the execve errno's Status, with the
  // failed child already reaped.
  absl::StatusOr<ChildProcess> Start(const SpawnRequest& request);

  // Starts the program and supervises it until it has been reaped: logs its output, enforces
  // the timeout, and returns how it ended. Takes the request by value because the task is lazy
  // (a reference could dangle before it starts). Destroying the task kills the child's process
  // group and reaps it.
  Task<absl::StatusOr<SpawnResult>> Run(io::Reactor& reactor, SpawnRequest request);

 private:
  struct Stream;
  struct RunOutput;
  class ChildStack;

  Spawner(Options options, UniqueFd dev_null, std::unique_ptr<ChildStack> stack);
  // `unsupported` is set when the kernel (or a seccomp filter) refuses the method itself.
  absl::StatusOr<ChildProcess> StartWith(Method method, const SpawnRequest& request,
                                         bool& unsupported);
  Task<void> ReadStream(io::Reactor& reactor, Stream& stream, RunOutput& output);
  // Reads what the pipe holds now, up to `limit` bytes; true at end of file.
  bool DrainAvailable(Stream& stream, RunOutput& output, size_t limit);
  // This process's /proc/self/status, opened once (again in a forked copy); -1 if it cannot be.
  int OwnStatusFd();

  Options options_;
  Method method_;
  UniqueFd dev_null_;
  std::unique_ptr<ChildStack> stack_;
  // The buffer a read from a child's pipe fills (spawner_run.cc's readers share it), made at
  // the first read: a spawner that never reads a pipe (most never run anything) costs a daemon
  // neither the page faults at start nor the 64 KiB resident.
  static constexpr size_t kScratchBytes = 64 * 1024;
  std::vector<char> scratch_;
  UniqueFd status_fd_;     // read at each spawn for the signal dispositions to reset
  pid_t status_pid_ = -1;  // the process that opened status_fd_
};

[[nodiscard]] absl::string_view MethodName(Spawner::Method method);

// This process's environment, as SpawnRequest::envp wants it (for a child that should see it).
[[nodiscard]] std::vector<std::string> InheritedEnvironment();

}  // namespace hotring::io::process

#endif  // HOTRING_IO_PROCESS_SPAWNER_H_

#include "io/process/spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"
#include "core/task_scope.h"

extern char** environ;

namespace hotring::io::process {
namespace {

// Bytes read from one pipe before the reader yields to the reactor (a flooding child must not
// starve the other tasks), and the most read from a pipe after the child has exited (what a
// leftover process keeps writing is not the run's to wait for).
constexpr size_t kScratchBytes = 64 * 1024;
constexpr size_t kRoundBytes = 256 * 1024;
constexpr size_t kFinalDrainBytes = 4 * 1024 * 1024;

// The vfork-style child runs on this stack only until execve; a few hundred bytes are used.
constexpr size_t kChildStackBytes = 128 * 1024;

// The kernel's signal set is 64 bits on the architectures hotring builds for (x86_64, arm64);
// glibc's sigset_t is 1024 bits, which rt_sigaction refuses.
constexpr size_t kKernelSigsetBytes = sizeof(uint64_t);
constexpr int kMaxSignal = 64;

// The clone3 argument block (CLONE_ARGS_SIZE_VER0), spelled out because glibc 2.36 does not
// declare it and <linux/sched.h> clashes with <sched.h>.
struct Clone3Args {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
};

// The step of the child's setup that failed, reported to the parent with its errno.
enum class ChildStep : int { kNone = 0, kSignals, kSetsid, kDup, kPassFd, kCloseRange, kExec };

absl::string_view ChildStepName(ChildStep step) {
  switch (step) {
    case ChildStep::kNone:
      return "spawn";
    case ChildStep::kSignals:
      return "child: resetting signals";
    case ChildStep::kSetsid:
      return "child: setsid";
    case ChildStep::kDup:
      return "child: dup3 onto fds 0-2";
    case ChildStep::kPassFd:
      return "child: dup3 of a passed descriptor";
    case ChildStep::kCloseRange:
      return "child: close_range";
    case ChildStep::kExec:
      return "execve";
  }
  return "spawn";
}

struct ChildFailure {
  ChildStep step = ChildStep::kNone;
  int err = 0;
};

// Everything the child needs, prepared by the parent before the clone (the child must not
// allocate: with CLONE_VM it runs on the parent's memory while the parent is suspended).
struct ChildArgs {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  // -1: keep this process's. Every descriptor the child dups from is above every number it
  // dups onto (0-2 and the passed ones), so no dup3 overwrites a source still to be used.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Passed descriptors: passed[i].parent_fd (a staged copy) becomes passed[i].child_fd.
  const PassedFd* passed = nullptr;
  size_t passed_count = 0;
  // Ascending: the descriptors from 3 up that survive until execve (the passed ones'
  // numbers, and error_fd).
  const unsigned* keep = nullptr;
  size_t keep_count = 0;
  bool new_session = true;
  // The write end of a close-on-exec pipe for the fork-style methods, where the child's memory
  // is a copy. -1 with CLONE_VM: the child writes `failure` directly.
  int error_fd = -1;
  // Bit n-1 set: signal n is caught or ignored here and must be reset to SIG_DFL in the child.
  uint64_t reset_signals = ~uint64_t{0};
  ChildFailure failure;
};

// The child side. Only raw system calls: no allocation, no locks, no sanitizer interceptors
// (with CLONE_VM this runs on borrowed memory, and after a fork of a threaded parent any lock
// may be held by a thread that no longer exists).
__attribute__((no_sanitize("address", "undefined"))) [[noreturn]] void ChildFail(
    ChildArgs* args, ChildStep step, int err) {
  args->failure.step = step;
  args->failure.err = err;
  if (args->error_fd >= 0) {
    (void)syscall(SYS_write, args->error_fd, &args->failure, sizeof(args->failure));
  }
  syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

__attribute__((no_sanitize("address", "undefined"))) void CloseFrom(ChildArgs* args,
                                                                    unsigned first,
                                                                    unsigned last) {
  if (first > last) return;
  if (syscall(SYS_close_range, first, last, 0) == 0) return;
  if (errno != ENOSYS) ChildFail(args, ChildStep::kCloseRange, errno);
  // Before Linux 5.9: close one by one up to the descriptor limit.
  struct rlimit limit {};
  unsigned end = 65536;
  if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &limit) == 0 &&
      limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < end) {
    end = static_cast<unsigned>(limit.rlim_cur);
  }
  if (last >= end) last = end - 1;
  for (unsigned fd = first; fd <= last && fd < end; ++fd) (void)syscall(SYS_close, fd);
}

__attribute__((no_sanitize("address", "undefined"))) [[noreturn]] void ChildMain(
    ChildArgs* args) {
  // The parent blocked every signal around the clone, so nothing has run a handler here yet.
  // Reset every disposition to the default (SIG_DFL is 0, so an all-zero kernel sigaction is
  // right on every layout) before unblocking: the daemon's handlers must never run in the
  // child, and an ignored SIGPIPE must not be inherited through execve.
  // Only the signals the parent found caught or ignored (ChildArgs::reset_signals): the rest
  // are at SIG_DFL already, and each call is a system call while the parent waits.
  const uint64_t zero[4] = {0, 0, 0, 0};
  for (int sig = 1; sig <= kMaxSignal; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    if ((args->reset_signals & (uint64_t{1} << (sig - 1))) == 0) continue;
    (void)syscall(SYS_rt_sigaction, sig, zero, nullptr, kKernelSigsetBytes);
  }
  if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, zero, nullptr, kKernelSigsetBytes) != 0) {
    ChildFail(args, ChildStep::kSignals, errno);
  }
  // Its own session and process group, so a signal to the group reaches grandchildren.
  if (args->new_session && syscall(SYS_setsid) < 0) ChildFail(args, ChildStep::kSetsid, errno);
  if ((args->stdin_fd >= 0 && syscall(SYS_dup3, args->stdin_fd, 0, 0) < 0) ||
      (args->stdout_fd >= 0 && syscall(SYS_dup3, args->stdout_fd, 1, 0) < 0) ||
      (args->stderr_fd >= 0 && syscall(SYS_dup3, args->stderr_fd, 2, 0) < 0)) {
    ChildFail(args, ChildStep::kDup, errno);
  }
  for (size_t i = 0; i < args->passed_count; ++i) {
    if (syscall(SYS_dup3, args->passed[i].parent_fd, args->passed[i].child_fd, 0) < 0) {
      ChildFail(args, ChildStep::kPassFd, errno);
    }
  }
  // The handler sees fds 0-2 (and those passed) and nothing else, whatever the daemon forgot to
  // mark close-on-exec.
  unsigned next = 3;
  for (size_t i = 0; i < args->keep_count; ++i) {
    CloseFrom(args, next, args->keep[i] - 1);
    next = args->keep[i] + 1;
  }
  CloseFrom(args, next, ~0U);
  syscall(SYS_execve, args->path, args->argv, args->envp);
  ChildFail(args, ChildStep::kExec, errno);
}

__attribute__((no_sanitize("address", "undefined"))) int CloneEntry(void* args) {
  ChildMain(static_cast<ChildArgs*>(args));
}

// The signals whose disposition is not SIG_DFL (SigIgn | SigCgt of /proc/self/status), as a
// mask with bit n-1 for signal n; every signal if the file cannot be read or parsed. Read at
// each spawn, so a handler installed at any time is still reset in the child: resetting all
// 62 in the child cost 62 system calls per handler, with the parent suspended meanwhile.
// `status_fd` is this process's status file, kept open (-1: open it here): a pread at offset 0
// regenerates a seq_file, and saves the path walk and the close, which a profile of the daemon
// spawning cheap handlers showed as half of this function's cost (the rest is formatting).
uint64_t SignalsToReset(int status_fd) {
  constexpr uint64_t kAll = ~uint64_t{0};
  char text[4096];
  const int fd = status_fd >= 0 ? status_fd : ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kAll;
  size_t len = 0;
  for (;;) {
    const ssize_t n =
        ::pread(fd, text + len, sizeof(text) - 1 - len, static_cast<off_t>(len));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
    if (len == sizeof(text) - 1) break;
    // SigCgt comes after SigIgn: once its line is complete, the read that would return end of
    // file can be saved.
    const absl::string_view so_far(text, len);
    const size_t cgt = so_far.find("\nSigCgt:");
    if (cgt != absl::string_view::npos && so_far.find('\n', cgt + 1) != absl::string_view::npos) {
      break;
    }
  }
  if (fd != status_fd) ::close(fd);
  const absl::string_view status(text, len);
  uint64_t mask = 0;
  int found = 0;
  for (const absl::string_view key : {"\nSigIgn:", "\nSigCgt:"}) {
    const size_t at = status.find(key);
    if (at == absl::string_view::npos) return kAll;
    absl::string_view hex = status.substr(at + key.size());
    hex = hex.substr(0, hex.find('\n'));
    uint64_t value = 0;
    if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(hex), &value)) return kAll;
    mask |= value;
    ++found;
  }
  return found == 2 ? mask : kAll;
}

// Blocks every signal for its lifetime (around a clone, so the child starts with none
// deliverable until it has reset the dispositions).
class AllSignalsBlocked {
 public:
  AllSignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old_);
  }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;
  ~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

// Descriptors the child will dup from must not be among the numbers it dups onto: 0-2 (a
// daemon started with closed standard fds gets them from pipe()) and the passed descriptors'
// numbers. `floor` is the lowest number above all of them.
absl::Status MoveToAtLeast(UniqueFd& fd, int floor) {
  if (fd.get() >= floor) return absl::OkStatus();
  const int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, floor);
  if (moved < 0) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC)");
  fd.Reset(moved);
  return absl::OkStatus();
}

// A pipe whose read end (the parent's) is non-blocking; the write end stays blocking, as a
// handler writing its stdout expects.
absl::Status MakeOutputPipe(UniqueFd& read_end, UniqueFd& write_end, int floor) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return ErrnoStatus("pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  if (::fcntl(read_end.get(), F_SETFL, O_NONBLOCK) < 0) return ErrnoStatus("fcntl(O_NONBLOCK)");
  return MoveToAtLeast(write_end, floor);
}

// The lowest descriptor number above 0-2 and every passed descriptor's number in the child;
// an error for a number the child cannot be given.
absl::StatusOr<int> SourceFloor(const std::vector<PassedFd>& passed) {
  int floor = 3;
  for (size_t i = 0; i < passed.size(); ++i) {
    const PassedFd& fd = passed[i];
    if (fd.child_fd < 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spawn: a passed descriptor cannot become fd ", fd.child_fd, " (0-2 are the standard "
          "streams)"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (passed[j].child_fd == fd.child_fd) {
        return absl::InvalidArgumentError(
            absl::StrCat("spawn: two descriptors passed as fd ", fd.child_fd));
      }
    }
    floor = std::max(floor, fd.child_fd + 1);
  }
  return floor;
}

absl::Status CheckNoNul(absl::string_view what, absl::string_view text) {
  if (text.find('\0') == absl::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("spawn: ", what, " contains a NUL byte"));
}

// `now + d`, or nullopt for "never" (InfiniteDuration, or so far off that the clock would
// overflow). A zero or negative `d` is a deadline that has already passed.
std::optional<MonoTime> DeadlineAfter(MonoTime now, absl::Duration d) {
  if (d >= absl::Hours(24 * 365 * 100)) return std::nullopt;
  return now + d;
}

absl::string_view BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<std::string> InheritedEnvironment() {
  std::vector<std::string> env;
  for (char** var = environ; *var != nullptr; ++var) env.emplace_back(*var);
  return env;
}

absl::string_view MethodName(Spawner::Method method) {
  switch (method) {
    case Spawner::Method::kAuto:
      return "auto";
    case Spawner::Method::kCloneVfork:
      return "clone(CLONE_VM|CLONE_VFORK|CLONE_PIDFD)";
    case Spawner::Method::kClone3Fork:
      return "clone3(CLONE_PIDFD)";
    case Spawner::Method::kForkPidfdOpen:
      return "fork+pidfd_open";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// LineSplitter

void LineSplitter::Append(absl::string_view piece) {
  has_partial_ = true;
  if (truncated_) return;
  const size_t room = max_line_bytes_ - partial_.size();
  if (piece.size() > room) {
    partial_.append(piece.data(), room);
    truncated_ = true;
  } else {
    partial_.append(piece.data(), piece.size());
  }
}

void LineSplitter::Push(absl::string_view data, Callback on_line) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    if (newline == absl::string_view::npos) {
      Append(data);
      return;
    }
    const absl::string_view line = data.substr(0, newline);
    data.remove_prefix(newline + 1);
    if (!has_partial_) {
      // The common case: a whole line inside one read, handed over without a copy.
      if (line.size() > max_line_bytes_) {
        on_line(line.substr(0, max_line_bytes_), true);
      } else {
        on_line(line, false);
      }
      continue;
    }
    Append(line);
    on_line(partial_, truncated_);
    partial_.clear();
    truncated_ = false;
    has_partial_ = false;
  }
}

void LineSplitter::Finish(Callback on_line) {
  if (!has_partial_) return;
  on_line(partial_, truncated_);
  partial_.clear();
  truncated_ = false;
  has_partial_ = false;
}

// ---------------------------------------------------------------------------------------------
// Spawner

// Owns an mmap'ed stack with a guard page below it.
class Spawner::ChildStack {
 public:
  static absl::StatusOr<std::unique_ptr<ChildStack>> Create(size_t bytes) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t total = bytes + page;
    void* const base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return ErrnoStatus("mmap(child stack)");
    if (::mprotect(base, page, PROT_NONE) < 0) {
      const absl::Status status = ErrnoStatus("mprotect(child stack guard)");
      ::munmap(base, total);
      return status;
    }
    return std::unique_ptr<ChildStack>(new ChildStack(base, total));
  }
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  ~ChildStack() { ::munmap(base_, size_); }

  // Stacks grow down on every architecture we build for: the child starts at the top.
  [[nodiscard]] void* top() const { return static_cast<char*>(base_) + size_; }

 private:
  ChildStack(void* base, size_t size) : base_(base), size_(size) {}
  void* base_;
  size_t size_;
};

// One output pipe of a run: the parent's read end, its line splitter and its counters.
struct Spawner::Stream {
  Stream(OutputStream kind, UniqueFd fd, size_t max_line_bytes)
      : kind(kind), fd(std::move(fd)), splitter(max_line_bytes), eof(!this->fd) {}
  OutputStream kind;
  UniqueFd fd;  // empty when the child's stream is not a pipe (kInherit, kDevNull)
  LineSplitter splitter;
  OutputStats stats;
  bool eof;
};

// Where a run's lines go, and the run's shared log budget.
struct Spawner::RunOutput {
  const SpawnRequest& request;
  const LineSink& sink;
  std::string prefix;  // "<label> <program>[<pid>]"
  absl::string_view program;
  pid_t pid;
  size_t logged_bytes = 0;
  bool budget_spent = false;

  void Line(Stream& stream, absl::string_view text, bool truncated) {
    ++stream.stats.lines;
    if (truncated) ++stream.stats.lines_truncated;
    if (budget_spent || logged_bytes + text.size() > request.max_log_bytes) {
      if (!budget_spent) {
        budget_spent = true;
        LogWarning("%s: output log budget of %d bytes spent; counting further lines only",
                   prefix, request.max_log_bytes);
      }
      ++stream.stats.lines_dropped;
      return;
    }
    logged_bytes += text.size();
    ++stream.stats.lines_logged;
    if (sink) {
      sink(OutputLine{stream.kind, request.label, program, pid, text, truncated});
      return;
    }
    const absl::string_view mark = truncated ? " [truncated]" : "";
    switch (stream.kind) {
      case OutputStream::kStdout:
        LogInfo("%s: %s%s", prefix, text, mark);
        return;
      case OutputStream::kStderr:
        LogWarning("%s: %s%s", prefix, text, mark);
        return;
    }
  }
};

absl::StatusOr<std::unique_ptr<Spawner>> Spawner::Create(Options options) {
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY));
  if (!dev_null) return ErrnoStatus("open(/dev/null)");
  HOTRING_RETURN_IF_ERROR(MoveToAtLeast(dev_null, 3));
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<ChildStack> stack,
                           ChildStack::Create(kChildStackBytes));
  auto spawner = std::unique_ptr<Spawner>(
      new Spawner(std::move(options), std::move(dev_null), std::move(stack)));
  // Opened now, with the other descriptors the Spawner keeps for its lifetime.
  (void)spawner->OwnStatusFd();
  return spawner;
}

Spawner::Spawner(Options options, UniqueFd dev_null, std::unique_ptr<ChildStack> stack)
    : options_(std::move(options)),
      method_(options_.method),
      dev_null_(std::move(dev_null)),
      stack_(std::move(stack)),
      scratch_(kScratchBytes) {}

Spawner::~Spawner() = default;

int Spawner::OwnStatusFd() {
  // One getpid instead of a path walk and a close per spawn; a forked copy of this process
  // must read its own file, not the one its parent opened.
  const pid_t self = ::getpid();
  if (status_pid_ == self) return status_fd_.get();
  status_pid_ = self;
  status_fd_.Reset(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  // Above 0-2, which a daemon started with closed standard streams could hand out here.
  if (status_fd_ && !MoveToAtLeast(status_fd_, 3).ok()) status_fd_.Reset();
  return status_fd_.get();
}

absl::StatusOr<ChildProcess> Spawner::Start(const SpawnRequest& request) {
  if (method_ != Method::kAuto) {
    bool unsupported = false;
    return StartWith(method_, request, unsupported);
  }
  for (const Method method : {Method::kCloneVfork, Method::kClone3Fork, Method::kForkPidfdOpen}) {
    bool unsupported = false;
    absl::StatusOr<ChildProcess> child = StartWith(method, request, unsupported);
    if (!unsupported) {
      method_ = method;
      return child;
    }
    LogNotice("spawn: %s is not available here (%s); trying the next method",
              MethodName(method), child.status().message());
  }
  return absl::UnimplementedError("spawn: no process creation method with a pidfd works here");
}

absl::StatusOr<ChildProcess> Spawner::StartWith(Method method, const SpawnRequest& request,
                                                bool& unsupported) {
  if (request.program.empty()) return absl::InvalidArgumentError("spawn: empty program path");
  HOTRING_RETURN_IF_ERROR(CheckNoNul("program", request.program));
  std::vector<char*> argv;
  std::vector<char*> envp;
  argv.reserve(request.argv.size() + 1);
  envp.reserve(request.envp.size() + 1);
  for (const std::string& arg : request.argv) {
    HOTRING_RETURN_IF_ERROR(CheckNoNul("an argument", arg));
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  if (argv.empty()) argv.push_back(const_cast<char*>(request.program.c_str()));
  argv.push_back(nullptr);
  for (const std::string& var : request.envp) {
    HOTRING_RETURN_IF_ERROR(CheckNoNul("an environment variable", var));
    envp.push_back(const_cast<char*>(var.c_str()));
  }
  envp.push_back(nullptr);

  HOTRING_ASSIGN_OR_RETURN(const int floor, SourceFloor(request.passed_fds));
  // Close-on-exec copies of the passed descriptors, at or above `floor`: the child dups them
  // onto their numbers, and exec closes the copies.
  std::vector<UniqueFd> staged;
  std::vector<PassedFd> passed;
  std::vector<unsigned> keep;
  staged.reserve(request.passed_fds.size());
  passed.reserve(request.passed_fds.size());
  keep.reserve(request.passed_fds.size() + 1);
  for (const PassedFd& fd : request.passed_fds) {
    const int copy = ::fcntl(fd.parent_fd, F_DUPFD_CLOEXEC, floor);
    if (copy < 0) {
      return ErrnoStatus(absl::StrCat("fcntl(F_DUPFD_CLOEXEC) of fd ", fd.parent_fd,
                                      " passed as fd ", fd.child_fd));
    }
    staged.emplace_back(copy);
    passed.push_back(PassedFd{copy, fd.child_fd});
    keep.push_back(static_cast<unsigned>(fd.child_fd));
  }

  UniqueFd out_read, out_write, err_read, err_write;
  if (request.stdout_to == ChildOutput::kPipe) {
    HOTRING_RETURN_IF_ERROR(MakeOutputPipe(out_read, out_write, floor));
  }
  if (request.stderr_to == ChildOutput::kPipe) {
    HOTRING_RETURN_IF_ERROR(MakeOutputPipe(err_read, err_write, floor));
  }
  // /dev/null is opened once; only a request that passes descriptors up to its number needs a
  // copy above them.
  UniqueFd dev_null_copy;
  int dev_null = dev_null_.get();
  const bool wants_dev_null = request.stdin_from == ChildInput::kDevNull ||
                              request.stdout_to == ChildOutput::kDevNull ||
                              request.stderr_to == ChildOutput::kDevNull;
  if (wants_dev_null && dev_null < floor) {
    dev_null_copy.Reset(::fcntl(dev_null, F_DUPFD_CLOEXEC, floor));
    if (!dev_null_copy) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC) of /dev/null");
    dev_null = dev_null_copy.get();
  }

  ChildArgs args;
  args.path = request.program.c_str();
  args.argv = argv.data();
  args.envp = envp.data();
  args.stdin_fd = request.stdin_from == ChildInput::kDevNull ? dev_null : -1;
  args.stdout_fd = out_write ? out_write.get()
                  : request.stdout_to == ChildOutput::kDevNull ? dev_null
                                                               : -1;
  args.stderr_fd = err_write ? err_write.get()
                  : request.stderr_to == ChildOutput::kDevNull ? dev_null
                                                               : -1;
  args.passed = passed.data();
  args.passed_count = passed.size();
  args.new_session = request.group == ProcessGroup::kOwn;
  args.reset_signals = SignalsToReset(OwnStatusFd());

  UniqueFd error_read, error_write;
  if (method != Method::kCloneVfork) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0) return ErrnoStatus("pipe2");
    error_read.Reset(fds[0]);
    error_write.Reset(fds[1]);
    HOTRING_RETURN_IF_ERROR(MoveToAtLeast(error_write, floor));
    args.error_fd = error_write.get();
    keep.push_back(static_cast<unsigned>(args.error_fd));  // above every passed number
  }
  std::sort(keep.begin(), keep.end());
  args.keep = keep.data();
  args.keep_count = keep.size();

  pid_t pid = -1;
  int pidfd = -1;
  int clone_errno = 0;
  {
    const AllSignalsBlocked blocked;
    switch (method) {
      case Method::kAuto:
        return absl::InvalidArgumentError("spawn: kAuto is not a method");
      case Method::kCloneVfork:
        // The parent is suspended until the child has exec'd or exited, so the child may use
        // `stack_`, `args` and the argv/envp arrays in place.
        pid = ::clone(&CloneEntry, stack_->top(), CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD,
                      &args, &pidfd);
        clone_errno = errno;
        break;
      case Method::kClone3Fork: {
        Clone3Args clone_args{};
        clone_args.flags = CLONE_PIDFD;
        clone_args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
        clone_args.exit_signal = SIGCHLD;
        const long ret = syscall(SYS_clone3, &clone_args, sizeof(clone_args));
        if (ret == 0) ChildMain(&args);
        pid = static_cast<pid_t>(ret);
        clone_errno = errno;
        break;
      }
      case Method::kForkPidfdOpen: {
        pid = ::fork();
        if (pid == 0) ChildMain(&args);
        clone_errno = errno;
        if (pid > 0) {
          pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
          if (pidfd < 0) {
            // Without a pidfd we cannot supervise it: end it now.
            const int err = errno;
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            unsupported = err == ENOSYS;
            return ErrnoStatus("pidfd_open", err);
          }
        }
        break;
      }
    }
  }
  if (pid < 0) {
    // EINVAL: the kernel predates CLONE_PIDFD; ENOSYS: no clone3; EPERM may be a seccomp filter.
    unsupported = clone_errno == ENOSYS || clone_errno == EINVAL ||
                  (clone_errno == EPERM && method != Method::kForkPidfdOpen);
    return ErrnoStatus(method == Method::kClone3Fork ? "clone3" : "clone", clone_errno);
  }
  ChildProcess child(pid, UniqueFd(pidfd), request.group, std::move(out_read),
                     std::move(err_read));

  // The child's ends belong to the child now; our copies would hide its end of file.
  out_write.Reset();
  err_write.Reset();
  ChildFailure failure = args.failure;
  if (error_read) {
    error_write.Reset();
    // Blocks until execve closes the pipe (success) or the child reports why it failed.
    for (;;) {
      const ssize_t n = ::read(error_read.get(), &failure, sizeof(failure));
      if (n < 0 && errno == EINTR) continue;
      if (n != static_cast<ssize_t>(sizeof(failure))) failure = ChildFailure{};
      break;
    }
  }
  if (failure.step != ChildStep::kNone) {
    (void)child.WaitBlocking();
    if (failure.step == ChildStep::kExec) {
      return ErrnoStatus(absl::StrCat("execve(", request.program, ")"), failure.err);
    }
    return ErrnoStatus(absl::StrCat(ChildStepName(failure.step), " for ", request.program),
                       failure.err);
  }
  return child;
}

bool Spawner::DrainAvailable(Stream& stream, RunOutput& output, size_t limit) {
  size_t total = 0;
  while (total < limit) {
    const ssize_t n = ::read(stream.fd.get(), scratch_.data(), scratch_.size());
    if (n > 0) {
      total += static_cast<size_t>(n);
      stream.stats.bytes += static_cast<uint64_t>(n);
      stream.splitter.Push(absl::string_view(scratch_.data(), static_cast<size_t>(n)),
                           [&](absl::string_view line, bool truncated) {
                             output.Line(stream, line, truncated);
                           });
      continue;
    }
    if (n == 0) {
      stream.eof = true;
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return false;
    LogWarning("%s: reading its output: %s", output.prefix, ErrnoStatus("read").message());
    stream.eof = true;
    return true;
  }
  return false;
}

Task<void> Spawner::ReadStream(io::Reactor& reactor, Stream& stream, RunOutput& output) {
  // Poll, then read without blocking: a poll can be cancelled at any time without losing data,
  // which a cancelled read that already completed could not promise.
  while (!stream.eof) {
    const absl::StatusOr<unsigned> ready = co_await io::Poll(reactor, stream.fd.get(), POLLIN);
    if (!ready.ok()) {
      LogWarning("%s: polling its output: %s", output.prefix, ready.status().message());
      co_return;
    }
    (void)DrainAvailable(stream, output, kRoundBytes);
  }
}

Task<absl::StatusOr<SpawnResult>> Spawner::Run(io::Reactor& reactor, SpawnRequest request) {
  const MonoTime start = MonoNow();
  // Declared first, destroyed last: if this task is dropped, the readers and pipes go first,
  // then the child's process group is killed and the child reaped.
  HOTRING_CO_ASSIGN_OR_RETURN(ChildProcess child, Start(request));

  SpawnResult result;
  result.pid = child.pid();
  if (request.on_started) request.on_started(child.pid());
  const absl::string_view program = BaseName(request.program);
  RunOutput output{request, options_.line_sink,
                   request.label.empty()
                       ? absl::StrCat(program, "[", child.pid(), "]")
                       : absl::StrCat(request.label, " ", program, "[", child.pid(), "]"),
                   program, child.pid()};
  Stream out(OutputStream::kStdout, child.TakeStdout(), request.max_line_bytes);
  Stream err(OutputStream::kStderr, child.TakeStderr(), request.max_line_bytes);
  {
    TaskScope readers;
    for (Stream* stream : {&out, &err}) {
      if (!stream->eof) readers.Spawn(ReadStream(reactor, *stream, output));
    }

    enum class Phase { kRunning, kTerminating, kKilling };
    Phase phase = Phase::kRunning;
    std::optional<MonoTime> deadline = DeadlineAfter(start, request.timeout);
    for (;;) {
      // The pidfd polls readable once the child is a zombie. We reap it ourselves (rather than
      // with IORING_OP_WAITID) so that the zombie still pins its process-group id while we
      // signal the group: after the reap the id could name somebody else's group.
      absl::StatusOr<unsigned> exited = absl::DeadlineExceededError("deadline");
      if (!deadline.has_value()) {
        exited = co_await io::Poll(reactor, child.pidfd(), POLLIN);
      } else {
        const absl::Duration left = Since(MonoNow(), *deadline);
        if (left > absl::ZeroDuration()) {
          exited = co_await io::Poll(reactor, child.pidfd(), POLLIN).WithTimeout(left);
        }
      }
      if (exited.ok()) {
        if (request.leftovers == LeftoverPolicy::kKill) (void)child.SignalGroup(SIGKILL);
        HOTRING_CO_ASSIGN_OR_RETURN(std::optional<io::ExitStatus> status, child.TryReap());
        if (!status.has_value()) continue;  // not yet waitable; poll again
        result.exit = *status;
        break;
      }
      if (!absl::IsDeadlineExceeded(exited.status())) co_return exited.status();
      switch (phase) {
        case Phase::kRunning:
          LogWarning("%s: still running after %s; sending SIGTERM", output.prefix,
                     absl::FormatDuration(request.timeout));
          result.timed_out = true;
          HOTRING_CO_RETURN_IF_ERROR(child.Signal(SIGTERM));
          phase = Phase::kTerminating;
          break;
        case Phase::kTerminating:
          LogWarning("%s: still running %s after SIGTERM; sending SIGKILL", output.prefix,
                     absl::FormatDuration(request.kill_grace));
          result.killed = true;
          HOTRING_CO_RETURN_IF_ERROR(child.Signal(SIGKILL));
          phase = Phase::kKilling;
          break;
        case Phase::kKilling:
          // Only an uninterruptible sleep in the kernel outlives SIGKILL; keep waiting.
          LogWarning("%s: still not gone %s after SIGKILL", output.prefix,
                     absl::FormatDuration(request.kill_grace));
          break;
      }
      deadline = DeadlineAfter(MonoNow(), request.kill_grace);
    }
    result.duration = Since(start, MonoNow());
    // Readers are parked in polls (never holding unread data), so cancelling them loses nothing.
    readers.CancelAll();
  }
  // The child is gone, so all it wrote is in the pipes now; take what is there and stop: a
  // leftover process holding a pipe open must not keep the run from finishing.
  for (Stream* stream : {&out, &err}) {
    if (!stream->eof) (void)DrainAvailable(*stream, output, kFinalDrainBytes);
    if (!stream->eof) result.output_held_open = true;
    stream->splitter.Finish(
        [&](absl::string_view line, bool truncated) { output.Line(*stream, line, truncated); });
  }
  if (result.output_held_open) {
    LogNotice("%s: exited, but another process still holds its output open; not waiting for it",
              output.prefix);
  }
  const uint64_t dropped = out.stats.lines_dropped + err.stats.lines_dropped;
  if (dropped > 0) {
    LogWarning("%s: %d output lines were not logged (budget %d bytes)", output.prefix, dropped,
               request.max_log_bytes);
  }
  result.stdout_stats = out.stats;
  result.stderr_stats = err.stats;
  LogDebug("%s: %s %d after %s", output.prefix, result.exit.exited ? "exited with" : "killed by",
           result.exit.code, absl::FormatDuration(result.duration));
  co_return result;
}

}  // namespace hotring::io::process

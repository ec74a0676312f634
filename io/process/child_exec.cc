#include "io/process/child_exec.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "core/status.h"

namespace hotring::io::process {
namespace {

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

// The child side. Only raw system calls: no allocation, no locks, no sanitizer interceptors
// or instrumentation (with CLONE_VM this runs on borrowed memory, on the spawning thread's own
// sanitizer state; after a fork of a threaded parent any lock may be held by a thread that no
// longer exists).
#define HOTRING_CHILD_SIDE __attribute__((no_sanitize("address", "undefined", "thread")))

[[noreturn]] HOTRING_CHILD_SIDE void ChildFail(ChildArgs* args, ChildStep step, int err) {
  args->failure.step = step;
  args->failure.err = err;
  if (args->error_fd >= 0) {
    (void)syscall(SYS_write, args->error_fd, &args->failure, sizeof(args->failure));
  }
  syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

HOTRING_CHILD_SIDE void CloseFrom(ChildArgs* args, unsigned first, unsigned last) {
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

[[noreturn]] HOTRING_CHILD_SIDE void ChildMain(ChildArgs* args) {
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

HOTRING_CHILD_SIDE int CloneEntry(void* args) {
  ChildMain(static_cast<ChildArgs*>(args));
}

#undef HOTRING_CHILD_SIDE

// Starts the vfork-style child. ThreadSanitizer's runtime intercepts clone() as a fork: the
// child releases the runtime's locks and marks the thread's state as after a fork (its
// synchronisation, accesses and reports ignored from then on), then the parent releases the
// locks again. With CLONE_VM that state and those locks are the parent's, so the spawning
// thread's later mutex hand-offs were lost (false races, each fatal to a daemon under test),
// its real races went unreported, and a thread started afterwards made the runtime abort. Under
// that sanitizer the clone goes through glibc's other name for it, which is not intercepted:
// the runtime never sees a child that runs only the uninstrumented code above.
#if defined(__SANITIZE_THREAD__)
#define HOTRING_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOTRING_THREAD_SANITIZER 1
#endif
#endif

#ifdef HOTRING_THREAD_SANITIZER
extern "C" int __clone(int (*fn)(void*), void* stack, int flags, void* arg, ...);
#endif

int CloneSharingMemory(void* stack_top, int flags, ChildArgs& args, int* pidfd) {
#ifdef HOTRING_THREAD_SANITIZER
  return __clone(&CloneEntry, stack_top, flags, &args, pidfd);
#else
  return ::clone(&CloneEntry, stack_top, flags, &args, pidfd);
#endif
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

}  // namespace

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

absl::StatusOr<ClonedChild> CloneChild(Spawner::Method method, void* stack_top, ChildArgs& args,
                                       bool& unsupported) {
  using Method = Spawner::Method;
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
        // the stack, `args` and the argv/envp arrays in place.
        pid = CloneSharingMemory(stack_top, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, args,
                                 &pidfd);
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
  return ClonedChild{pid, pidfd};
}

}  // namespace hotring::io::process

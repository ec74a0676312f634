// Starting children: what the parent prepares for each one (the argv and envp arrays, the
// staged copies of passed descriptors, the pipes and /dev/null on fds 0-2), the choice of the
// clone method, and reading back whether the child reached execve. What the child runs between
// the clone and execve is child_exec.cc's; supervising a started run is spawner_run.cc's.
#include "io/process/spawner.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/log.h"
#include "core/status.h"
#include "io/process/child_exec.h"

extern char** environ;

namespace hotring::io::process {
namespace {

// The vfork-style child runs on this stack only until execve; a few hundred bytes are used.
constexpr size_t kChildStackBytes = 128 * 1024;

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

// What the parent prepares for one child and holds until the child has exec'd: the arrays and
// descriptors `args` points at, and the parent's ends of the child's pipes.
struct ChildSetup {
  std::vector<char*> argv;
  std::vector<char*> envp;
  // Close-on-exec copies of the passed descriptors, at or above the floor: the child dups them
  // onto their numbers, and exec closes the copies.
  std::vector<UniqueFd> staged;
  std::vector<PassedFd> passed;
  std::vector<unsigned> keep;
  UniqueFd out_read, out_write, err_read, err_write;
  // /dev/null is opened once; only a request that passes descriptors up to its number needs a
  // copy above them.
  UniqueFd dev_null_copy;
  ChildArgs args;
  UniqueFd error_read, error_write;
};

// The program, argv and envp as execve wants them, pointing into `request`.
absl::Status SetExecArrays(const SpawnRequest& request, ChildSetup& setup) {
  if (request.program.empty()) return absl::InvalidArgumentError("spawn: empty program path");
  HOTRING_RETURN_IF_ERROR(CheckNoNul("program", request.program));
  std::vector<char*>& argv = setup.argv;
  std::vector<char*>& envp = setup.envp;
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
  setup.args.path = request.program.c_str();
  setup.args.argv = argv.data();
  setup.args.envp = envp.data();
  return absl::OkStatus();
}

absl::Status StagePassedFds(const std::vector<PassedFd>& passed_fds, int floor,
                            ChildSetup& setup) {
  setup.staged.reserve(passed_fds.size());
  setup.passed.reserve(passed_fds.size());
  setup.keep.reserve(passed_fds.size() + 1);
  for (const PassedFd& fd : passed_fds) {
    const int copy = ::fcntl(fd.parent_fd, F_DUPFD_CLOEXEC, floor);
    if (copy < 0) {
      return ErrnoStatus(absl::StrCat("fcntl(F_DUPFD_CLOEXEC) of fd ", fd.parent_fd,
                                      " passed as fd ", fd.child_fd));
    }
    setup.staged.emplace_back(copy);
    setup.passed.push_back(PassedFd{copy, fd.child_fd});
    setup.keep.push_back(static_cast<unsigned>(fd.child_fd));
  }
  setup.args.passed = setup.passed.data();
  setup.args.passed_count = setup.passed.size();
  return absl::OkStatus();
}

// The child's fds 0-2: a pipe, /dev/null (`dev_null`, this process's open one) or, left at -1,
// this process's own.
absl::Status SetStandardStreams(const SpawnRequest& request, int dev_null, int floor,
                                ChildSetup& setup) {
  if (request.stdout_to == ChildOutput::kPipe) {
    HOTRING_RETURN_IF_ERROR(MakeOutputPipe(setup.out_read, setup.out_write, floor));
  }
  if (request.stderr_to == ChildOutput::kPipe) {
    HOTRING_RETURN_IF_ERROR(MakeOutputPipe(setup.err_read, setup.err_write, floor));
  }
  const bool wants_dev_null = request.stdin_from == ChildInput::kDevNull ||
                              request.stdout_to == ChildOutput::kDevNull ||
                              request.stderr_to == ChildOutput::kDevNull;
  if (wants_dev_null && dev_null < floor) {
    setup.dev_null_copy.Reset(::fcntl(dev_null, F_DUPFD_CLOEXEC, floor));
    if (!setup.dev_null_copy) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC) of /dev/null");
    dev_null = setup.dev_null_copy.get();
  }
  ChildArgs& args = setup.args;
  args.stdin_fd = request.stdin_from == ChildInput::kDevNull ? dev_null : -1;
  args.stdout_fd = setup.out_write ? setup.out_write.get()
                  : request.stdout_to == ChildOutput::kDevNull ? dev_null
                                                               : -1;
  args.stderr_fd = setup.err_write ? setup.err_write.get()
                  : request.stderr_to == ChildOutput::kDevNull ? dev_null
                                                               : -1;
  return absl::OkStatus();
}

// The fork-style methods' child has a copy of this memory, not this memory: it reports a failed
// step through a close-on-exec pipe instead.
absl::Status OpenErrorPipe(int floor, ChildSetup& setup) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return ErrnoStatus("pipe2");
  setup.error_read.Reset(fds[0]);
  setup.error_write.Reset(fds[1]);
  HOTRING_RETURN_IF_ERROR(MoveToAtLeast(setup.error_write, floor));
  setup.args.error_fd = setup.error_write.get();
  setup.keep.push_back(static_cast<unsigned>(setup.args.error_fd));  // above every passed number
  return absl::OkStatus();
}

// Returns once the child has exec'd (the vfork-style clone returns only then; the fork-style
// child's error pipe closes at execve). If its setup failed instead, reaps it and says why.
absl::Status AwaitExec(ChildProcess& child, ChildSetup& setup, const std::string& program) {
  // The child's ends belong to the child now; our copies would hide its end of file.
  setup.out_write.Reset();
  setup.err_write.Reset();
  ChildFailure failure = setup.args.failure;
  if (setup.error_read) {
    setup.error_write.Reset();
    // Blocks until execve closes the pipe (success) or the child reports why it failed.
    for (;;) {
      const ssize_t n = ::read(setup.error_read.get(), &failure, sizeof(failure));
      if (n < 0 && errno == EINTR) continue;
      if (n != static_cast<ssize_t>(sizeof(failure))) failure = ChildFailure{};
      break;
    }
  }
  if (failure.step != ChildStep::kNone) {
    (void)child.WaitBlocking();
    if (failure.step == ChildStep::kExec) {
      return ErrnoStatus(absl::StrCat("execve(", program, ")"), failure.err);
    }
    return ErrnoStatus(absl::StrCat(ChildStepName(failure.step), " for ", program),
                       failure.err);
  }
  return absl::OkStatus();
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
      stack_(std::move(stack)) {}

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
  ChildSetup setup;
  HOTRING_RETURN_IF_ERROR(SetExecArrays(request, setup));
  HOTRING_ASSIGN_OR_RETURN(const int floor, SourceFloor(request.passed_fds));
  HOTRING_RETURN_IF_ERROR(StagePassedFds(request.passed_fds, floor, setup));
  HOTRING_RETURN_IF_ERROR(SetStandardStreams(request, dev_null_.get(), floor, setup));
  setup.args.new_session = request.group == ProcessGroup::kOwn;
  setup.args.reset_signals = SignalsToReset(OwnStatusFd());
  if (method != Method::kCloneVfork) HOTRING_RETURN_IF_ERROR(OpenErrorPipe(floor, setup));
  std::sort(setup.keep.begin(), setup.keep.end());
  setup.args.keep = setup.keep.data();
  setup.args.keep_count = setup.keep.size();

  HOTRING_ASSIGN_OR_RETURN(const ClonedChild cloned,
                           CloneChild(method, stack_->top(), setup.args, unsupported));
  ChildProcess child(cloned.pid, UniqueFd(cloned.pidfd), request.group,
                     std::move(setup.out_read), std::move(setup.err_read));
  HOTRING_RETURN_IF_ERROR(AwaitExec(child, setup, request.program));
  return child;
}

}  // namespace hotring::io::process

#include "hotplug/bench/bench_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/clock.h"
#include "core/status.h"
#include "hotplug/client/daemon_child.h"
#include "io/process/child_process.h"
#include "io/socket.h"

namespace hotring::hotplug {
namespace {

// Reaps `pid` if it has exited; the wait status, or nullopt while it runs.
std::optional<int> TryReap(pid_t pid) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) return status;
  if (r < 0 && errno == ECHILD) return 0;  // not ours any more: nothing left to wait for
  return std::nullopt;
}

// Waits up to `timeout` for `pid` to exit (polling: a benchmark's daemon exits in
// milliseconds); the wait status, or nullopt on timeout.
std::optional<int> WaitFor(pid_t pid, absl::Duration timeout) {
  const MonoTime deadline = MonoNow() + timeout;
  for (;;) {
    if (std::optional<int> status = TryReap(pid)) return status;
    if (MonoNow() >= deadline) return std::nullopt;
    ::usleep(1000);
  }
}

// The child's side of Start, between vfork and exec: system calls only (it runs on the
// parent's memory and stack, and must not return).
[[noreturn]] void ExecDaemonChild(pid_t parent, int dev_null, int log, int ready_fd,
                                  const char* binary, char* const* argv) {
  // SIGTERM when the thread that started us dies, so a crashed benchmark leaves no daemon.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(127);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(dev_null, 0);
  ::dup2(dev_null, 1);
  ::dup2(log, 2);
  ::fcntl(ready_fd, F_SETFD, 0);  // the one descriptor the daemon inherits on purpose
  ::execv(binary, argv);
  ::_exit(127);
}


}  // namespace

absl::StatusOr<BenchDaemon> BenchDaemon::Start(Options options) {
  static std::atomic<int> counter{0};
  BenchDaemon d;
  d.socket_ = absl::StrCat("@hotring-bench-", ::getpid(), "-", counter++);
  // The daemon says when it serves (--ready-fd): a newline, or end of file if it gave up.
  int ready_pipe[2];
  if (::pipe2(ready_pipe, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  const UniqueFd ready_read(ready_pipe[0]);
  UniqueFd ready_write(ready_pipe[1]);
  std::vector<std::string> argv = {"hotring",    "daemon", "--socket", d.socket_,
                                   "--ready-fd", absl::StrCat(ready_write.get())};
  argv.insert(argv.end(), options.args.begin(), options.args.end());
  std::vector<char*> c_argv;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);

  // stderr goes to an anonymous file: nothing to clean up, and unlike a pipe nobody has to
  // drain it for the daemon to keep running.
  d.log_ = UniqueFd(::memfd_create("hotring-bench-daemon-log", MFD_CLOEXEC));
  if (!d.log_.valid()) return ErrnoStatus("memfd_create");
  const UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null.valid()) return ErrnoStatus("open(/dev/null)");
  HOTRING_ASSIGN_OR_RETURN(d.reactor_, io::Reactor::Create());
  const pid_t parent = ::getpid();
  HOTRING_ASSIGN_OR_RETURN(ControlClient client, ControlClient::Open(d.socket_));
  d.client_ = std::make_unique<ControlClient>(std::move(client));

  // vfork: the child borrows our memory until it execs, so (unlike fork) none of our pages
  // become copy-on-write and the measurements after this do not pay for faults on them.
  const pid_t pid = ::vfork();
  if (pid < 0) return ErrnoStatus("vfork");
  if (pid == 0) {
    ExecDaemonChild(parent, dev_null.get(), d.log_.get(), ready_write.get(),
                    options.binary.c_str(), c_argv.data());
  }
  d.pid_ = pid;
  ready_write.Reset();  // the daemon's copy is the only one: its exit reads as end of file

  pollfd ready{ready_read.get(), POLLIN, 0};
  const int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(options.ready_timeout));
  int polled;
  do {
    polled = ::poll(&ready, 1, timeout_ms);
  } while (polled < 0 && errno == EINTR);
  char byte = 0;
  if (polled > 0 && ::read(ready_read.get(), &byte, 1) == 1 && byte == '\n') return d;
  if (polled == 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("bench daemon not ready within ",
                     absl::FormatDuration(options.ready_timeout), ": ", d.Log()));
  }
  std::optional<int> status = WaitFor(d.pid_, absl::Seconds(5));
  if (status.has_value()) d.pid_ = -1;  // else dropping `d` stops it
  return absl::FailedPreconditionError(
      absl::StrCat("bench daemon ended at start-up (",
                   status.has_value() ? io::process::DescribeWaitStatus(*status) : "still running", "): ",
                   d.Log()));
}

BenchDaemon::BenchDaemon(BenchDaemon&& other) noexcept
    : socket_(std::move(other.socket_)),
      pid_(std::exchange(other.pid_, -1)),
      log_(std::move(other.log_)),
      reactor_(std::move(other.reactor_)),
      client_(std::move(other.client_)) {}

BenchDaemon::~BenchDaemon() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  if (!WaitFor(pid_, absl::Seconds(5)).has_value()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<ControlReply> BenchDaemon::Request(ControlCommand command,
                                                  absl::Duration timeout) {
  ControlRequest request;
  request.command = command;
  request.cookie = NewCookie();
  HOTRING_ASSIGN_OR_RETURN(
      WireMessage reply,
      reactor_->BlockOn(client_->Request(*reactor_, ControlRequestMessage(request), timeout,
                                         std::min(timeout, absl::Seconds(1)))));
  HOTRING_ASSIGN_OR_RETURN(ControlReply decoded, ControlReplyFromMessage(std::move(reply)));
  if (!decoded.ok) return absl::UnavailableError(decoded.message);
  return decoded;
}

absl::StatusOr<std::map<std::string, uint64_t>> BenchDaemon::Status(absl::Duration timeout) {
  HOTRING_ASSIGN_OR_RETURN(const ControlReply reply, Request(ControlCommand::kStatus, timeout));
  std::map<std::string, uint64_t> counters;
  for (const auto& [key, value] : reply.fields) {
    uint64_t n;
    if (absl::SimpleAtoi(value, &n)) counters[key] = n;
  }
  return counters;
}

absl::Status BenchDaemon::Settle(absl::Duration timeout) {
  return Request(ControlCommand::kSettle, timeout).status();
}

absl::Status BenchDaemon::Stop(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("bench daemon not running");
  ::kill(pid_, SIGTERM);
  std::optional<int> status = WaitFor(pid_, timeout);
  if (!status.has_value()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return absl::DeadlineExceededError(absl::StrCat(
        "bench daemon did not stop within ", absl::FormatDuration(timeout), "; killed"));
  }
  pid_ = -1;
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return absl::InternalError(
        absl::StrCat("bench daemon ended with ", io::process::DescribeWaitStatus(*status), ": ", Log()));
  }
  return absl::OkStatus();
}

std::string BenchDaemon::Log() const {
  if (!log_.valid()) return "";
  struct stat st;
  if (::fstat(log_.get(), &st) != 0 || st.st_size <= 0) return "";
  std::string text(static_cast<size_t>(st.st_size), '\0');
  const ssize_t n = ::pread(log_.get(), text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

int64_t ProcessCpuNs(pid_t pid) {
  clockid_t clock;
  if (::clock_getcpuclockid(pid, &clock) != 0) return -1;
  timespec ts;
  if (::clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t PeakRssKiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "VmHWM:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    (void)absl::ConsumeSuffix(&rest, "kB");
    int64_t kib;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib)) return kib;
  }
  return -1;
}

int64_t ReapedChildrenCpuNs() {
  rusage usage{};
  if (::getrusage(RUSAGE_CHILDREN, &usage) != 0) return -1;
  auto ns = [](const timeval& tv) {
    return static_cast<int64_t>(tv.tv_sec) * 1'000'000'000 +
           static_cast<int64_t>(tv.tv_usec) * 1000;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

int64_t ThreadCpuNs() {
  timespec ts;
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

absl::StatusOr<AppendLineHandler> AppendLineHandler::Copy(const std::string& source) {
  const UniqueFd in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return ErrnoStatus(absl::StrCat("open ", source));
  AppendLineHandler handler;
  char dir[] = "/tmp/hotring-bench-handler-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return ErrnoStatus("mkdtemp");
  handler.dir_ = dir;
  handler.program_ = absl::StrCat(dir, "/append_line");
  const UniqueFd out(
      ::open(handler.program_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755));
  if (!out) return ErrnoStatus(absl::StrCat("create ", handler.program_));
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(in.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read ", source));
    if (n == 0) break;
    if (::write(out.get(), buffer, static_cast<size_t>(n)) != n) {
      return ErrnoStatus(absl::StrCat("write ", handler.program_));
    }
  }
  return handler;
}

AppendLineHandler::AppendLineHandler(AppendLineHandler&& other) noexcept
    : dir_(std::exchange(other.dir_, {})), program_(std::exchange(other.program_, {})) {}

AppendLineHandler& AppendLineHandler::operator=(AppendLineHandler&& other) noexcept {
  std::swap(dir_, other.dir_);
  std::swap(program_, other.program_);
  return *this;
}

AppendLineHandler::~AppendLineHandler() {
  if (dir_.empty()) return;
  ::unlink(absl::StrCat(program_, ".log").c_str());
  ::unlink(program_.c_str());
  ::rmdir(dir_.c_str());
}

absl::StatusOr<uint64_t> AppendLineHandler::TakeLines() {
  const std::string log = absl::StrCat(program_, ".log");
  const UniqueFd fd(::open(log.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return 0;  // no handler ran
    return ErrnoStatus(absl::StrCat("open ", log));
  }
  uint64_t lines = 0;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read ", log));
    if (n == 0) break;
    lines += static_cast<uint64_t>(std::count(buffer, buffer + n, '\n'));
  }
  if (::unlink(log.c_str()) != 0) return ErrnoStatus(absl::StrCat("unlink ", log));
  return lines;
}

absl::Status SendDatagrams(const std::string& socket, int64_t count, int64_t batch,
                          absl::FunctionRef<std::string(int64_t)> encode) {
  HOTRING_ASSIGN_OR_RETURN(const io::SocketAddress address, io::UnixAddress(socket));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd fd, io::UnixSocket(SOCK_DGRAM));
  if (::connect(fd.get(), address.get(), address.length) < 0) return ErrnoStatus("connect");
  if (batch < 1) batch = 1;
  std::vector<std::string> bytes(static_cast<size_t>(batch));
  std::vector<iovec> iov(static_cast<size_t>(batch));
  std::vector<mmsghdr> messages(static_cast<size_t>(batch));
  for (int64_t i = 0; i < count;) {
    const int64_t n = std::min(batch, count - i);
    for (int64_t k = 0; k < n; ++k) {
      const size_t j = static_cast<size_t>(k);
      bytes[j] = encode(i + k);
      iov[j] = iovec{bytes[j].data(), bytes[j].size()};
      messages[j] = mmsghdr{};
      messages[j].msg_hdr.msg_iov = &iov[j];
      messages[j].msg_hdr.msg_iovlen = 1;
    }
    const int sent = ::sendmmsg(fd.get(), messages.data(), static_cast<unsigned>(n), 0);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("sendmmsg");
    }
    i += sent;
  }
  return absl::OkStatus();
}

}  // namespace hotring::hotplug

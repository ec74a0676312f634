#include "io/process/spawner.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/task_scope.h"
#include "gtest/gtest.h"
#include "io/ops.h"
#include "io/reactor.h"

extern char** environ;

namespace hotring::io::process {
namespace {

// ----------------------------------------------------------------------------------------------
// Helpers

std::string HelperPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  std::string path = "io/process/spawner_test_helper";
  if (srcdir != nullptr && workspace != nullptr) {
    path = absl::StrCat(srcdir, "/", workspace, "/", path);
  }
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return path;
  return resolved;
}

// A fresh directory under the test's temporary directory.
std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp", "/spawnerXXXXXX");
  char* const made = ::mkdtemp(pattern.data());
  return made == nullptr ? std::string() : std::string(made);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int CountOpenFds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the directory's own descriptor
}

// State letter and parent pid from /proc/<pid>/stat, or nullopt if the process is gone.
struct ProcState {
  char state;
  pid_t ppid;
};
std::optional<ProcState> ReadProcState(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (stat.empty() || paren == std::string::npos || paren + 4 >= stat.size()) return std::nullopt;
  const std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
  if (fields.size() < 2) return std::nullopt;
  int ppid = 0;
  if (!absl::SimpleAtoi(fields[1], &ppid)) return std::nullopt;
  return ProcState{fields[0][0], static_cast<pid_t>(ppid)};
}

// Our own children that are zombies.
std::vector<pid_t> OurZombies() {
  std::vector<pid_t> zombies;
  DIR* dir = ::opendir("/proc");
  while (const dirent* entry = ::readdir(dir)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    const std::optional<ProcState> state = ReadProcState(pid);
    if (state && state->ppid == ::getpid() && state->state == 'Z') zombies.push_back(pid);
  }
  ::closedir(dir);
  return zombies;
}

// True when we have no child processes at all (running or zombie).
bool HasNoChildren() {
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

// Waits (bounded) until `pid` is gone or a zombie: it is dead either way (an orphan's zombie
// waits for whoever adopted it).
bool BecomesDead(pid_t pid, absl::Duration limit = absl::Seconds(10)) {
  const MonoTime end = MonoNow() + limit;
  while (MonoNow() < end) {
    const std::optional<ProcState> state = ReadProcState(pid);
    if (!state || state->state == 'Z' || state->state == 'X') return true;
    ::usleep(10 * 1000);
  }
  return false;
}

// What /proc/self/fd/FD points to ("/dev/zero", "pipe:[123]"), or "" if it is not open.
std::string FdTarget(int fd) {
  char target[256] = {};
  const ssize_t n =
      ::readlink(absl::StrCat("/proc/self/fd/", fd).c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

// Process group and session of a running process (fields 5 and 6 of /proc/<pid>/stat).
std::optional<std::pair<pid_t, pid_t>> GroupAndSession(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return std::nullopt;
  const std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
  int group = 0, session = 0;
  if (fields.size() < 4 || !absl::SimpleAtoi(fields[2], &group) ||
      !absl::SimpleAtoi(fields[3], &session)) {
    return std::nullopt;
  }
  return std::make_pair(static_cast<pid_t>(group), static_cast<pid_t>(session));
}

pid_t ReadPid(const std::string& path) {
  int pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(path)), &pid)) return -1;
  return pid;
}

struct RecordedLine {
  OutputStream stream;
  std::string label;
  std::string text;
  bool truncated;
};

// A Spawner whose output lines are recorded into `lines`.
std::unique_ptr<Spawner> MakeSpawner(Spawner::Method method, std::vector<RecordedLine>* lines) {
  Spawner::Options options;
  options.method = method;
  if (lines != nullptr) {
    options.line_sink = [lines](const OutputLine& line) {
      lines->push_back(RecordedLine{line.stream, std::string(line.label),
                                    std::string(line.text), line.truncated});
    };
  }
  absl::StatusOr<std::unique_ptr<Spawner>> spawner = Spawner::Create(std::move(options));
  if (!spawner.ok()) return nullptr;
  return std::move(*spawner);
}

absl::StatusOr<SpawnResult> RunOnce(Spawner& spawner, SpawnRequest request) {
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  if (!reactor.ok()) return reactor.status();
  return (*reactor)->BlockOn(spawner.Run(**reactor, std::move(request)));
}

SpawnRequest Shell(const std::string& script) {
  SpawnRequest request;
  request.program = "/bin/sh";
  request.argv = {"sh", "-c", script};
  request.envp = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  request.label = "SEQNUM=12 DEVPATH=/devices/x";
  return request;
}

std::vector<std::string> Texts(const std::vector<RecordedLine>& lines, OutputStream stream) {
  std::vector<std::string> out;
  for (const RecordedLine& line : lines) {
    if (line.stream == stream) out.push_back(line.text);
  }
  return out;
}

// ----------------------------------------------------------------------------------------------
// LineSplitter (pure)

std::vector<std::pair<std::string, bool>> Split(LineSplitter& splitter,
                                                const std::vector<std::string>& pieces,
                                                bool finish) {
  std::vector<std::pair<std::string, bool>> lines;
  auto record = [&](absl::string_view line, bool truncated) {
    lines.emplace_back(std::string(line), truncated);
  };
  for (const std::string& piece : pieces) splitter.Push(piece, record);
  if (finish) splitter.Finish(record);
  return lines;
}

TEST(LineSplitterTest, SplitsLinesAcrossPushes) {
  LineSplitter splitter(100);
  const auto lines = Split(splitter, {"one\ntw", "o\n\nthr", "ee"}, /*finish=*/true);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], std::make_pair(std::string("one"), false));
  EXPECT_EQ(lines[1], std::make_pair(std::string("two"), false));
  EXPECT_EQ(lines[2], std::make_pair(std::string(""), false));
  EXPECT_EQ(lines[3], std::make_pair(std::string("three"), false));
  EXPECT_EQ(splitter.pending_bytes(), 0u);
}

TEST(LineSplitterTest, TruncatesLongLinesInOnePushAndAcrossPushes) {
  LineSplitter splitter(4);
  const auto lines = Split(splitter, {"abcdefgh\nxy", "zzzzzz", "zz\nok\n"}, /*finish=*/true);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], std::make_pair(std::string("abcd"), true));
  EXPECT_EQ(lines[1], std::make_pair(std::string("xyzz"), true));
  EXPECT_EQ(lines[2], std::make_pair(std::string("ok"), false));
}

TEST(LineSplitterTest, MemoryStaysBoundedWithoutNewlines) {
  LineSplitter splitter(16);
  const std::string chunk(1 << 20, 'x');
  int calls = 0;
  for (int i = 0; i < 20; ++i) {
    splitter.Push(chunk, [&](absl::string_view, bool) { ++calls; });
    EXPECT_LE(splitter.pending_bytes(), 16u);
  }
  EXPECT_EQ(calls, 0);
  std::string last;
  splitter.Finish([&](absl::string_view line, bool truncated) {
    last = std::string(line);
    EXPECT_TRUE(truncated);
  });
  EXPECT_EQ(last, std::string(16, 'x'));
}

TEST(LineSplitterTest, FinishWithoutPendingCallsNothing) {
  LineSplitter splitter(8);
  const auto lines = Split(splitter, {"a\n"}, /*finish=*/true);
  EXPECT_EQ(lines.size(), 1u);
}

// ----------------------------------------------------------------------------------------------
// Real processes, once per creation method

class SpawnerMethodTest : public ::testing::TestWithParam<Spawner::Method> {
 protected:
  void SetUp() override {
    spawner_ = MakeSpawner(GetParam(), &lines_);
    ASSERT_NE(spawner_, nullptr);
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    EXPECT_TRUE(OurZombies().empty());
    EXPECT_TRUE(HasNoChildren());
  }

  std::unique_ptr<Spawner> spawner_;
  std::vector<RecordedLine> lines_;
  std::string dir_;
};

TEST_P(SpawnerMethodTest, PassesArgvAndExactEnvironmentAndReportsExitCode) {
  SpawnRequest request;
  request.program = HelperPath();
  const std::string out = dir_ + "/env";
  request.argv = {"handler", "env", out, "block"};
  request.envp = {"ACTION=add", "DEVPATH=/devices/x", "SEQNUM=7"};
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->exit.success());
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(ReadFile(out), absl::StrCat("argv[0]=handler\nargv[1]=env\nargv[2]=", out,
                                        "\nargv[3]=block\n"
                                        "env ACTION=add\nenv DEVPATH=/devices/x\nenv SEQNUM=7\n"));

  const absl::StatusOr<SpawnResult> three = RunOnce(*spawner_, Shell("exit 3"));
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_TRUE(three->exit.exited);
  EXPECT_EQ(three->exit.code, 3);
  EXPECT_FALSE(three->exit.success());
}

TEST_P(SpawnerMethodTest, ChildSeesOnlyStandardFds) {
  // Descriptors a careless daemon leaves without O_CLOEXEC must not reach the handler.
  const int leaked = ::open("/dev/zero", O_RDONLY);
  ASSERT_GE(leaked, 3);
  int leaked_pipe[2];
  ASSERT_EQ(::pipe(leaked_pipe), 0);
  SpawnRequest request;
  request.program = HelperPath();
  const std::string out = dir_ + "/fds";
  request.argv = {"helper", "fds", out};
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ::close(leaked);
  ::close(leaked_pipe[0]);
  ::close(leaked_pipe[1]);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->exit.success()) << result->exit.code;
  std::vector<std::string> fds = absl::StrSplit(ReadFile(out), '\n', absl::SkipEmpty());
  std::sort(fds.begin(), fds.end());
  ASSERT_EQ(fds.size(), 3u) << ReadFile(out);
  EXPECT_EQ(fds[0], "0 /dev/null");
  EXPECT_TRUE(absl::StartsWith(fds[1], "1 pipe:[")) << fds[1];
  EXPECT_TRUE(absl::StartsWith(fds[2], "2 pipe:[")) << fds[2];
  EXPECT_NE(fds[1].substr(2), fds[2].substr(2));  // stdout and stderr are separate pipes
}

TEST_P(SpawnerMethodTest, PassedDescriptorsArriveUnderTheirNumbersAndNothingElse) {
  // Two descriptors swapped (each one's number is the other's target), and one passed first
  // onto the number after the lowest free one, where a copy made without care would land: no
  // dup3 in the child may overwrite a source it still needs.
  UniqueFd zero(::open("/dev/zero", O_RDONLY | O_CLOEXEC));
  UniqueFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  UniqueFd random(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(zero && full && random);
  ASSERT_EQ(::dup3(zero.get(), 50, O_CLOEXEC), 50);
  ASSERT_EQ(::dup3(full.get(), 51, O_CLOEXEC), 51);
  const UniqueFd at50(50), at51(51);
  const int leaked = ::open("/dev/zero", O_RDONLY);  // not close-on-exec, not passed
  ASSERT_GE(leaked, 3);
  const int lowest_free = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)).get();
  ASSERT_GE(lowest_free, 3);
  const int near = lowest_free + 1;
  ASSERT_EQ(FdTarget(near), "") << "expected fd " << near << " to be free";
  SpawnRequest request;
  request.program = HelperPath();
  const std::string out = dir_ + "/fds";
  request.argv = {"helper", "fds", out};
  request.passed_fds = {{.parent_fd = random.get(), .child_fd = near},
                        {.parent_fd = 50, .child_fd = 51},
                        {.parent_fd = 51, .child_fd = 50}};
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ::close(leaked);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->exit.success()) << result->exit.code;
  std::map<int, std::string> fds;
  for (absl::string_view line : absl::StrSplit(ReadFile(out), '\n', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(line, ' ');
    int fd = -1;
    ASSERT_TRUE(absl::SimpleAtoi(parts.first, &fd)) << line;
    fds[fd] = std::string(parts.second);
  }
  ASSERT_EQ(fds.size(), 6u) << ReadFile(out);
  EXPECT_EQ(fds[0], "/dev/null");
  EXPECT_TRUE(absl::StartsWith(fds[1], "pipe:[")) << fds[1];
  EXPECT_TRUE(absl::StartsWith(fds[2], "pipe:[")) << fds[2];
  EXPECT_EQ(fds[near], "/dev/urandom");
  EXPECT_EQ(fds[50], "/dev/full");
  EXPECT_EQ(fds[51], "/dev/zero");
}

TEST_P(SpawnerMethodTest, MissingProgramIsAClearError) {
  const int fds_before = CountOpenFds();
  SpawnRequest request;
  request.program = dir_ + "/no-such-handler";
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound) << result.status();
  EXPECT_TRUE(absl::StrContains(result.status().message(), "execve(" + request.program + ")"))
      << result.status();

  // A file without the execute bit.
  const std::string plain = dir_ + "/not-executable";
  std::ofstream(plain) << "#!/bin/sh\n";
  request.program = plain;
  const absl::StatusOr<SpawnResult> denied = RunOnce(*spawner_, request);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied) << denied.status();
  EXPECT_EQ(CountOpenFds(), fds_before);
}

TEST_P(SpawnerMethodTest, HangingHandlerIsTerminatedAtTheTimeout) {
  SpawnRequest request;
  request.program = "/bin/sleep";
  request.argv = {"sleep", "30"};
  request.timeout = absl::Milliseconds(200);
  request.kill_grace = absl::Seconds(20);
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->timed_out);
  EXPECT_FALSE(result->killed);
  EXPECT_FALSE(result->exit.exited);
  EXPECT_EQ(result->exit.code, SIGTERM);
  EXPECT_GE(result->duration, absl::Milliseconds(200));
}

// The daemon's shape: a worker thread waits for jobs while the reactor thread spawns a handler,
// then hands the worker a fresh eventfd under a mutex (a blocking pool's job and its wake-up).
// The spawn must leave the spawning thread's synchronisation as it was: under ThreadSanitizer a
// vfork-style child that ran the runtime's fork bookkeeping on the shared memory made the
// runtime drop this thread's mutex releases, and the worker's write was reported as a race with
// the eventfd's creation (which killed the daemon).
TEST_P(SpawnerMethodTest, SpawnInAThreadedProcessKeepsTheSpawningThreadsSynchronisation) {
  std::mutex mutex;
  std::condition_variable handed;
  bool ready = false;  // guarded by `mutex`, as is wake_fd
  int wake_fd = -1;
  std::thread worker([&] {
    std::unique_lock<std::mutex> lock(mutex);
    handed.wait(lock, [&] { return ready; });
    const int fd = wake_fd;
    lock.unlock();
    if (fd < 0) return;
    const uint64_t one = 1;
    EXPECT_EQ(::write(fd, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  });
  absl::StatusOr<ChildProcess> child = spawner_->Start(Shell("exit 4"));
  EXPECT_TRUE(child.ok()) << child.status();
  if (child.ok()) {
    const absl::StatusOr<io::ExitStatus> exit = child->WaitBlocking();
    EXPECT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(exit.ok() ? DescribeExit(*exit) : exit.status().ToString(), "exit code 4");
  }

  const int fd = ::eventfd(0, EFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  {
    std::lock_guard<std::mutex> lock(mutex);
    ready = true;
    wake_fd = fd;
  }
  handed.notify_one();
  worker.join();
  ASSERT_GE(fd, 0);
  uint64_t count = 0;
  EXPECT_EQ(::read(fd, &count, sizeof(count)), static_cast<ssize_t>(sizeof(count)));
  EXPECT_EQ(count, 1u);
  ::close(fd);
}

INSTANTIATE_TEST_SUITE_P(Methods, SpawnerMethodTest,
                         ::testing::Values(Spawner::Method::kAuto, Spawner::Method::kCloneVfork,
                                           Spawner::Method::kClone3Fork,
                                           Spawner::Method::kForkPidfdOpen),
                         [](const ::testing::TestParamInfo<Spawner::Method>& info) {
                           switch (info.param) {
                             case Spawner::Method::kAuto:
                               return std::string("Auto");
                             case Spawner::Method::kCloneVfork:
                               return std::string("CloneVfork");
                             case Spawner::Method::kClone3Fork:
                               return std::string("Clone3Fork");
                             case Spawner::Method::kForkPidfdOpen:
                               return std::string("ForkPidfdOpen");
                           }
                           return std::string("Unknown");
                         });

// ----------------------------------------------------------------------------------------------
// Behaviour independent of the creation method (default method)

class SpawnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spawner_ = MakeSpawner(Spawner::Method::kAuto, &lines_);
    ASSERT_NE(spawner_, nullptr);
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    fds_before_ = CountOpenFds();
  }
  void TearDown() override {
    EXPECT_TRUE(OurZombies().empty());
    EXPECT_TRUE(HasNoChildren());
    EXPECT_EQ(CountOpenFds(), fds_before_);
  }

  std::unique_ptr<Spawner> spawner_;
  std::vector<RecordedLine> lines_;
  std::string dir_;
  int fds_before_ = 0;
};

TEST_F(SpawnerTest, ResolvesAutoToTheVforkClone) {
  ASSERT_TRUE(RunOnce(*spawner_, Shell("true")).ok());
  EXPECT_EQ(spawner_->method(), Spawner::Method::kCloneVfork);
}

TEST_F(SpawnerTest, LogsStdoutAndStderrLineByLineWithTheLabel) {
  const absl::StatusOr<SpawnResult> result =
      RunOnce(*spawner_, Shell("echo one; echo two >&2; echo; printf three"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Texts(lines_, OutputStream::kStdout), (std::vector<std::string>{"one", "", "three"}));
  EXPECT_EQ(Texts(lines_, OutputStream::kStderr), (std::vector<std::string>{"two"}));
  for (const RecordedLine& line : lines_) EXPECT_EQ(line.label, "SEQNUM=12 DEVPATH=/devices/x");
  EXPECT_EQ(result->stdout_stats.bytes, 10u);
  EXPECT_EQ(result->stdout_stats.lines, 3u);
  EXPECT_EQ(result->stdout_stats.lines_logged, 3u);
  EXPECT_EQ(result->stderr_stats.bytes, 4u);
  EXPECT_EQ(result->stderr_stats.lines, 1u);
  EXPECT_FALSE(result->output_held_open);
}

TEST_F(SpawnerTest, DefaultSinkWritesLabelledLinesToTheLog) {
  std::unique_ptr<Spawner> logging = MakeSpawner(Spawner::Method::kAuto, nullptr);
  ASSERT_NE(logging, nullptr);
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kInfo).ok());
  // Capture our stderr (the log) in a file for the duration of the run.
  const std::string log_path = dir_ + "/log";
  const int saved = ::dup(2);
  const int file = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(file, 0);
  ::dup2(file, 2);
  ::close(file);
  const absl::StatusOr<SpawnResult> result =
      RunOnce(*logging, Shell("echo hello; echo oops >&2"));
  ::dup2(saved, 2);
  ::close(saved);
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kNotice).ok());
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string log = ReadFile(log_path);
  EXPECT_TRUE(absl::StrContains(
      log, absl::StrCat("info: SEQNUM=12 DEVPATH=/devices/x sh[", result->pid, "]: hello\n")))
      << log;
  EXPECT_TRUE(absl::StrContains(
      log, absl::StrCat("warning: SEQNUM=12 DEVPATH=/devices/x sh[", result->pid, "]: oops\n")))
      << log;
}

TEST_F(SpawnerTest, ChildStartsWithDefaultSignalStateWhateverTheDaemonHas) {
  // The daemon blocks SIGTERM/SIGINT/SIGHUP for its signalfd and may ignore SIGPIPE.
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGHUP);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_pipe {};
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  // A real-time signal too: the child resets only what the parent's SigIgn/SigCgt list, and
  // that list must cover all 64 signals.
  const int rt_signal = SIGRTMIN + 5;
  struct sigaction old_rt {};
  ASSERT_EQ(::sigaction(rt_signal, &ignore, &old_rt), 0);

  SpawnRequest request;
  request.program = HelperPath();
  const std::string out = dir_ + "/sigstate";
  request.argv = {"helper", "sigstate", out};
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);

  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::sigaction(rt_signal, &old_rt, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->exit.success());
  EXPECT_EQ(ReadFile(out), "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST_F(SpawnerTest, HandlerIgnoringSigtermIsKilledAfterTheGrace) {
  SpawnRequest request;
  request.program = HelperPath();
  request.argv = {"helper", "ignore-term"};
  // Long enough for the helper to start and ignore SIGTERM even under a sanitizer on a busy
  // machine (300 ms was not, once).
  request.timeout = absl::Seconds(2);
  request.kill_grace = absl::Milliseconds(200);
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->timed_out);
  EXPECT_TRUE(result->killed);
  EXPECT_FALSE(result->exit.exited);
  EXPECT_EQ(result->exit.code, SIGKILL);
  EXPECT_GE(result->duration, absl::Milliseconds(2200));
  // It was up (and ignoring SIGTERM) before the deadline.
  EXPECT_EQ(Texts(lines_, OutputStream::kStdout), (std::vector<std::string>{"ready"}));
}

TEST_F(SpawnerTest, CrashIsReportedAsTheSignal) {
  const absl::StatusOr<SpawnResult> result =
      RunOnce(*spawner_, Shell("ulimit -c 0; kill -SEGV $$"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->exit.exited);
  EXPECT_EQ(result->exit.code, SIGSEGV);
  EXPECT_FALSE(result->timed_out);
}

TEST_F(SpawnerTest, GrandchildHoldingStdoutDoesNotHoldTheRun) {
  const std::string pid_file = dir_ + "/grandchild";
  SpawnRequest request = Shell(absl::StrCat("sleep 60 & echo $! > ", pid_file, "; echo hi"));
  // Waiting for end of file would run into this timeout; finishing at the child's exit won't.
  request.timeout = absl::Seconds(50);
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->exit.success());
  EXPECT_FALSE(result->timed_out);
  // Not output_held_open: under kKill the holder is killed at the child's exit, and on a slow
  // machine (a 1-vCPU guest) its end closes the pipe before the final drain looks. What is
  // asserted is that the run did not wait for it; KeptLeftoverSurvivesTheChild sees the flag.
  EXPECT_EQ(Texts(lines_, OutputStream::kStdout), (std::vector<std::string>{"hi"}));
  // LeftoverPolicy::kKill: the background sleep went with its process group.
  const pid_t grandchild = ReadPid(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(BecomesDead(grandchild));
}

TEST_F(SpawnerTest, KeptLeftoverSurvivesTheChild) {
  const std::string pid_file = dir_ + "/grandchild";
  SpawnRequest request = Shell(absl::StrCat("sleep 60 & echo $! > ", pid_file, "; echo hi"));
  request.leftovers = LeftoverPolicy::kKeep;
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->exit.success());
  EXPECT_TRUE(result->output_held_open);
  const pid_t grandchild = ReadPid(pid_file);
  ASSERT_GT(grandchild, 0);
  const std::optional<ProcState> state = ReadProcState(grandchild);
  ASSERT_TRUE(state.has_value());
  EXPECT_NE(state->state, 'Z');
  ::kill(grandchild, SIGKILL);
  EXPECT_TRUE(BecomesDead(grandchild));
}

TEST_F(SpawnerTest, TimeoutReachesGrandchildrenThroughTheProcessGroup) {
  const std::string pid_file = dir_ + "/grandchild";
  // The shell waits for its background job; both are killed by the group SIGTERM.
  SpawnRequest request = Shell(absl::StrCat("sleep 60 & echo $! > ", pid_file, "; wait"));
  request.leftovers = LeftoverPolicy::kKeep;
  request.timeout = absl::Milliseconds(300);
  request.kill_grace = absl::Seconds(20);
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->timed_out);
  EXPECT_FALSE(result->killed);
  const pid_t grandchild = ReadPid(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(BecomesDead(grandchild));
}

uint64_t PeakRssKib() {
  const std::string status = ReadFile("/proc/self/status");
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, "VmHWM:")) {
      uint64_t kib = 0;
      (void)absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kib);
      return kib;
    }
  }
  return 0;
}

TEST_F(SpawnerTest, FloodOfOutputIsCountedAndLoggedWithinTheBudget) {
  // 100 MB of 11-byte lines; the last one has no newline.
  constexpr uint64_t kBytes = 100 * 1000 * 1000;
  SpawnRequest request = Shell(absl::StrCat("yes 0123456789 | head -c ", kBytes));
  request.max_log_bytes = 4096;
  // What is checked is the accounting of the whole flood, not the handler timeout: under
  // qemu's TCG (the ARM test guests) the 100 MB take longer than the default 180 s.
  request.timeout = absl::InfiniteDuration();
  const uint64_t peak_before = PeakRssKib();
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  const uint64_t peak_after = PeakRssKib();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->exit.success());
  const OutputStats& out = result->stdout_stats;
  EXPECT_EQ(out.bytes, kBytes);
  EXPECT_EQ(out.lines, kBytes / 11 + 1);
  EXPECT_EQ(out.lines_logged + out.lines_dropped, out.lines);
  EXPECT_EQ(out.lines_logged, lines_.size());
  EXPECT_EQ(out.lines_logged, 4096u / 10);
  size_t logged_bytes = 0;
  for (const RecordedLine& line : lines_) logged_bytes += line.text.size();
  EXPECT_LE(logged_bytes, 4096u);
  // Nothing of the 100 MB was kept (a generous bound: the process's peak barely moves).
  EXPECT_LT(peak_after - peak_before, 32u * 1024) << peak_before << " -> " << peak_after;
}

TEST_F(SpawnerTest, FloodWithoutNewlinesIsOneTruncatedLine) {
  SpawnRequest request = Shell("head -c 20000000 /dev/zero | tr '\\0' x");
  request.max_line_bytes = 100;
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stdout_stats.bytes, 20000000u);
  EXPECT_EQ(result->stdout_stats.lines, 1u);
  EXPECT_EQ(result->stdout_stats.lines_truncated, 1u);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].text, std::string(100, 'x'));
  EXPECT_TRUE(lines_[0].truncated);
}

Task<void> RunInto(Spawner& spawner, io::Reactor& reactor, SpawnRequest request,
                   absl::StatusOr<SpawnResult>* out) {
  *out = co_await spawner.Run(reactor, std::move(request));
}

TEST_F(SpawnerTest, TwoHundredConcurrentSpawnsAllCompleteWithoutZombies) {
  constexpr int kRuns = 200;
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  ASSERT_TRUE(reactor.ok()) << reactor.status();
  std::vector<absl::StatusOr<SpawnResult>> results(kRuns, absl::UnknownError("not run"));
  {
    TaskScope scope;
    for (int i = 0; i < kRuns; ++i) {
      SpawnRequest request;
      request.program = "/bin/true";
      request.label = absl::StrCat("SEQNUM=", i);
      scope.Spawn(RunInto(*spawner_, **reactor, std::move(request), &results[i]));
    }
    ASSERT_TRUE((*reactor)->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope))
                    .ok());
  }
  std::vector<pid_t> pids;
  for (const absl::StatusOr<SpawnResult>& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(result->exit.success());
    pids.push_back(result->pid);
  }
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(std::unique(pids.begin(), pids.end()), pids.end());
}

Task<void> WaitForFileLines(io::Reactor& reactor, std::string path, int lines) {
  const MonoTime end = MonoNow() + absl::Seconds(20);
  while (MonoNow() < end) {
    const std::string text = ReadFile(path);
    if (std::count(text.begin(), text.end(), '\n') >= lines) co_return;
    (void)co_await io::Sleep(reactor, absl::Milliseconds(10));
  }
}

TEST_F(SpawnerTest, DroppingTheRunKillsTheChildAndItsGroup) {
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  ASSERT_TRUE(reactor.ok()) << reactor.status();
  const std::string pid_file = dir_ + "/pids";
  SpawnRequest request =
      Shell(absl::StrCat("echo $$ > ", pid_file, "; sleep 60 & echo $! >> ", pid_file,
                         "; echo started; wait"));
  Task<absl::StatusOr<SpawnResult>> run = spawner_->Run(**reactor, std::move(request));
  run.Start();  // spawns, then parks on the child's pidfd
  ASSERT_TRUE((*reactor)->BlockOn(WaitForFileLines(**reactor, pid_file, 2)).ok());
  std::vector<std::string> pids = absl::StrSplit(ReadFile(pid_file), '\n', absl::SkipEmpty());
  ASSERT_EQ(pids.size(), 2u);
  pid_t child = 0, grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(pids[0], &child));
  ASSERT_TRUE(absl::SimpleAtoi(pids[1], &grandchild));
  ASSERT_TRUE(ReadProcState(child).has_value());
  EXPECT_FALSE(run.done());

  run.Reset();
  // Reaped synchronously by the destructor: already gone, not even a zombie.
  EXPECT_FALSE(ReadProcState(child).has_value());
  EXPECT_TRUE(BecomesDead(grandchild));
  // The reactor settles the cancelled polls without touching freed memory.
  ASSERT_TRUE((*reactor)->BlockOn([](io::Reactor& r) -> Task<void> {
    (void)co_await io::Nop(r);
  }(**reactor)).ok());
}

TEST_F(SpawnerTest, InfiniteTimeoutWaitsForTheExit) {
  SpawnRequest request = Shell("sleep 0.2; exit 4");
  request.timeout = absl::InfiniteDuration();
  request.kill_grace = absl::InfiniteDuration();
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->exit.exited);
  EXPECT_EQ(result->exit.code, 4);
  EXPECT_FALSE(result->timed_out);
}

TEST_F(SpawnerTest, RejectsMalformedRequests) {
  SpawnRequest empty;
  EXPECT_EQ(RunOnce(*spawner_, empty).status().code(), absl::StatusCode::kInvalidArgument);
  SpawnRequest nul = Shell("true");
  nul.envp.push_back(std::string("A=\0B", 4));
  EXPECT_EQ(RunOnce(*spawner_, nul).status().code(), absl::StatusCode::kInvalidArgument);

  // Descriptors that cannot be passed as asked.
  SpawnRequest onto_stdout = Shell("true");
  onto_stdout.passed_fds = {{.parent_fd = 0, .child_fd = 1}};
  EXPECT_EQ(RunOnce(*spawner_, onto_stdout).status().code(), absl::StatusCode::kInvalidArgument);
  SpawnRequest twice = Shell("true");
  twice.passed_fds = {{.parent_fd = 0, .child_fd = 7}, {.parent_fd = 1, .child_fd = 7}};
  EXPECT_EQ(RunOnce(*spawner_, twice).status().code(), absl::StatusCode::kInvalidArgument);
  SpawnRequest closed = Shell("true");
  closed.passed_fds = {{.parent_fd = 999, .child_fd = 3}};
  const absl::Status bad_fd = RunOnce(*spawner_, closed).status();
  EXPECT_TRUE(absl::StrContains(bad_fd.message(), "fd 999 passed as fd 3")) << bad_fd;
}

TEST_F(SpawnerTest, InheritedStreamsAreThisProcesssOwnAndRunLogsOnlyPipes) {
  SpawnRequest request;
  request.program = HelperPath();
  const std::string out = dir_ + "/fds";
  request.argv = {"helper", "fds", out};
  request.stdin_from = ChildInput::kInherit;
  request.stdout_to = ChildOutput::kInherit;
  request.stderr_to = ChildOutput::kInherit;
  const absl::StatusOr<SpawnResult> result = RunOnce(*spawner_, request);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->exit.success()) << result->exit.code;
  std::vector<std::string> fds = absl::StrSplit(ReadFile(out), '\n', absl::SkipEmpty());
  std::sort(fds.begin(), fds.end());
  ASSERT_EQ(fds.size(), 3u) << ReadFile(out);
  for (int fd = 0; fd < 3; ++fd) EXPECT_EQ(fds[fd], absl::StrCat(fd, " ", FdTarget(fd)));

  // stdout to ours (the test log), stderr through a pipe: only stderr is split and logged.
  SpawnRequest mixed = Shell("echo to-the-test-log; echo logged >&2");
  mixed.stdout_to = ChildOutput::kInherit;
  const absl::StatusOr<SpawnResult> run = RunOnce(*spawner_, mixed);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->exit.success());
  EXPECT_EQ(Texts(lines_, OutputStream::kStdout), std::vector<std::string>{});
  EXPECT_EQ(Texts(lines_, OutputStream::kStderr), std::vector<std::string>{"logged"});
  EXPECT_EQ(run->stdout_stats.bytes, 0u);
  EXPECT_EQ(run->stderr_stats.lines, 1u);
}

TEST_F(SpawnerTest, OutputToDevNullIsDiscardedWithoutAPipe) {
  // stdout to /dev/null (writable: the echo succeeds), stderr still through a pipe. The shell
  // reads its own fds ($$) inside $(...): dash applies a command's redirections to itself.
  SpawnRequest request =
      Shell("echo discarded || exit 9; out=$(readlink /proc/$$/fd/1); "
            "in=$(readlink /proc/$$/fd/0); echo $out >&2; echo $in >&2");
  request.stdout_to = ChildOutput::kDevNull;
  absl::StatusOr<ChildProcess> started = spawner_->Start(request);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_FALSE(started->TakeStdout().valid());
  EXPECT_TRUE(started->TakeStderr().valid());
  started->KillAndReap();
  lines_.clear();

  const absl::StatusOr<SpawnResult> run = RunOnce(*spawner_, request);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->exit.success()) << run->exit.code;
  EXPECT_EQ(Texts(lines_, OutputStream::kStdout), std::vector<std::string>{});
  EXPECT_EQ(Texts(lines_, OutputStream::kStderr),
            (std::vector<std::string>{"/dev/null", "/dev/null"}));
  EXPECT_EQ(run->stdout_stats.bytes, 0u);

  // Both to /dev/null: nothing to read at all, and the run still ends with the exit status.
  SpawnRequest quiet = Shell("echo out; echo err >&2; exit 4");
  quiet.stdout_to = ChildOutput::kDevNull;
  quiet.stderr_to = ChildOutput::kDevNull;
  lines_.clear();
  const absl::StatusOr<SpawnResult> silent = RunOnce(*spawner_, quiet);
  ASSERT_TRUE(silent.ok()) << silent.status();
  EXPECT_TRUE(silent->exit.exited);
  EXPECT_EQ(silent->exit.code, 4);
  EXPECT_TRUE(lines_.empty());
}

TEST_F(SpawnerTest, ChildLeadsItsOwnGroupOrStaysInOursAsAsked) {
  SpawnRequest request;
  request.program = "/bin/sleep";
  request.argv = {"sleep", "60"};
  {
    absl::StatusOr<ChildProcess> own = spawner_->Start(request);
    ASSERT_TRUE(own.ok()) << own.status();
    EXPECT_EQ(own->group(), ProcessGroup::kOwn);
    const std::optional<std::pair<pid_t, pid_t>> ids = GroupAndSession(own->pid());
    ASSERT_TRUE(ids.has_value());
    EXPECT_EQ(ids->first, own->pid());
    EXPECT_EQ(ids->second, own->pid());
    EXPECT_TRUE(own->SignalGroup(0).ok());
  }
  request.group = ProcessGroup::kShared;
  absl::StatusOr<ChildProcess> shared = spawner_->Start(request);
  ASSERT_TRUE(shared.ok()) << shared.status();
  const std::optional<std::pair<pid_t, pid_t>> ids = GroupAndSession(shared->pid());
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(ids->first, ::getpgrp());
  EXPECT_EQ(ids->second, ::getsid(0));
  // Our group is not the child's to signal.
  EXPECT_EQ(shared->SignalGroup(SIGTERM).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(shared->Signal(SIGTERM).ok());
  const absl::StatusOr<io::ExitStatus> exit = shared->WaitBlocking();
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->exited);
  EXPECT_EQ(exit->code, SIGTERM);
  EXPECT_EQ(shared->Signal(SIGTERM).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SpawnerTest, ReadStdoutReturnsAllTheChildWroteThenWaitReaps) {
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  ASSERT_TRUE(reactor.ok()) << reactor.status();
  // More than one reading round (256 KiB), written slower than it is read.
  absl::StatusOr<ChildProcess> child =
      spawner_->Start(Shell("echo first; head -c 300000 /dev/zero; sleep 0.1; echo last; exit 3"));
  ASSERT_TRUE(child.ok()) << child.status();
  const absl::StatusOr<std::string> text = (*reactor)->BlockOn(child->ReadStdout(**reactor));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->size(), 6u + 300000u + 5u);
  EXPECT_TRUE(absl::StartsWith(*text, "first\n"));
  EXPECT_TRUE(absl::EndsWith(*text, "last\n"));
  const absl::StatusOr<io::ExitStatus> exit = (*reactor)->BlockOn(child->Wait(**reactor));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(DescribeExit(*exit), "exit code 3");
  EXPECT_TRUE(child->reaped());

  // Without a stdout pipe there is nothing to read.
  SpawnRequest inherit = Shell("true");
  inherit.stdout_to = ChildOutput::kInherit;
  absl::StatusOr<ChildProcess> quiet = spawner_->Start(inherit);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_EQ((*reactor)->BlockOn(quiet->ReadStdout(**reactor)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*reactor)->BlockOn(quiet->Wait(**reactor)).ok());
}

// ----------------------------------------------------------------------------------------------
// Measurements (not assertions). Run with:
//   bazel-bin/io/process/spawner_test --gtest_also_run_disabled_tests --gtest_filter='*Bench*'

double MicrosPer(MonoTime start, int count) {
  return absl::ToDoubleMicroseconds(Since(start, MonoNow())) / count;
}

// CPU time (user + system) of this process, or of its reaped children, in microseconds. On a
// loaded machine wall time mostly measures the scheduler; CPU time measures the spawn.
double CpuMicros(int who) {
  rusage usage{};
  ::getrusage(who, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec +
         usage.ru_stime.tv_usec;
}

void PrintCost(const char* name, double start_us, MonoTime begin, double self_cpu,
               double child_cpu, int count) {
  std::printf("%-40s wall: start %6.1f us, start+wait %6.1f us | cpu: parent %6.1f us, "
              "child %6.1f us\n",
              name, start_us / count, MicrosPer(begin, count),
              (CpuMicros(RUSAGE_SELF) - self_cpu) / count,
              (CpuMicros(RUSAGE_CHILDREN) - child_cpu) / count);
}

TEST(SpawnerBench, DISABLED_SpawnCostByMethod) {
  constexpr int kCount = 2000;
  SpawnRequest request;
  request.program = "/bin/true";
  for (const Spawner::Method method :
       {Spawner::Method::kCloneVfork, Spawner::Method::kClone3Fork,
        Spawner::Method::kForkPidfdOpen}) {
    std::unique_ptr<Spawner> spawner = MakeSpawner(method, nullptr);
    ASSERT_NE(spawner, nullptr);
    // Start only (returns after the exec), then the whole spawn + wait.
    double start_us = 0;
    const double self_cpu = CpuMicros(RUSAGE_SELF);
    const double child_cpu = CpuMicros(RUSAGE_CHILDREN);
    const MonoTime begin = MonoNow();
    for (int i = 0; i < kCount; ++i) {
      const MonoTime t = MonoNow();
      absl::StatusOr<ChildProcess> child = spawner->Start(request);
      start_us += absl::ToDoubleMicroseconds(Since(t, MonoNow()));
      ASSERT_TRUE(child.ok()) << child.status();
      ASSERT_TRUE(child->WaitBlocking().ok());
    }
    PrintCost(std::string(MethodName(method)).c_str(), start_us, begin, self_cpu, child_cpu,
              kCount);
  }
  // posix_spawn + pidfd_open, with the same file actions (stdin /dev/null, two pipes).
  double start_us = 0;
  const double self_cpu = CpuMicros(RUSAGE_SELF);
  const double child_cpu = CpuMicros(RUSAGE_CHILDREN);
  const MonoTime begin = MonoNow();
  for (int i = 0; i < kCount; ++i) {
    const MonoTime t = MonoNow();
    int out[2], err[2];
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    pid_t pid = 0;
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    char* envp[] = {nullptr};
    ASSERT_EQ(::posix_spawn(&pid, "/bin/true", &actions, &attr, argv, envp), 0);
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    start_us += absl::ToDoubleMicroseconds(Since(t, MonoNow()));
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(out[1]);
    ::close(err[1]);
    siginfo_t info{};
    ASSERT_EQ(::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED), 0);
    ::close(pidfd);
    ::close(out[0]);
    ::close(err[0]);
  }
  PrintCost("posix_spawn+pidfd_open", start_us, begin, self_cpu, child_cpu, kCount);
}

Task<void> SerialRuns(Spawner& spawner, io::Reactor& reactor, int count, int* ok) {
  for (int i = 0; i < count; ++i) {
    SpawnRequest request;
    request.program = "/bin/true";
    request.label = absl::StrCat("SEQNUM=", i);
    const absl::StatusOr<SpawnResult> result = co_await spawner.Run(reactor, std::move(request));
    if (result.ok() && result->exit.success()) ++*ok;
  }
}

TEST(SpawnerBench, DISABLED_RunsPerSecond) {
  constexpr int kCount = 2000;
  std::unique_ptr<Spawner> spawner = MakeSpawner(Spawner::Method::kAuto, nullptr);
  ASSERT_NE(spawner, nullptr);
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  ASSERT_TRUE(reactor.ok());
  for (const int parallel : {1, 8}) {
    int ok = 0;
    const double self_cpu = CpuMicros(RUSAGE_SELF);
    const MonoTime begin = MonoNow();
    {
      TaskScope scope;
      for (int w = 0; w < parallel; ++w) {
        scope.Spawn(SerialRuns(*spawner, **reactor, kCount / parallel, &ok));
      }
      ASSERT_TRUE(
          (*reactor)->BlockOn([](TaskScope& s) -> Task<void> { co_await s.Join(); }(scope)).ok());
    }
    const double seconds = absl::ToDoubleSeconds(Since(begin, MonoNow()));
    ASSERT_EQ(ok, kCount);
    std::printf("Run(/bin/true) x%d, %d in parallel: %.0f runs/s (%.1f us wall, %.1f us of "
                "our CPU each)\n",
                kCount, parallel, kCount / seconds, seconds * 1e6 / kCount,
                (CpuMicros(RUSAGE_SELF) - self_cpu) / kCount);
  }
}

}  // namespace
}  // namespace hotring::io::process

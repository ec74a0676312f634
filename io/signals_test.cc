// SignalFd under a stopped-and-continued process. Once a signal outside the signalfd's set has
// woken its poll, io_uring completes the read in an io-wq worker thread that blocks in the
// signalfd; a group stop (SIGSTOP then SIGCONT: job control, a debugger attaching, a freezer)
// interrupts that worker and the read completes with EINTR. The daemon's signal task used to
// end on that error, and from then on it ignored SIGTERM, SIGINT and SIGHUP for good.
//
// The watcher runs in a child process, so that the test can stop it without stopping itself.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/task.h"
#include "gtest/gtest.h"
#include "io/reactor.h"
#include "io/signals.h"

namespace hotring::io {
namespace {

// Exit codes of the watcher child.
constexpr int kGotSigusr1 = 0;
constexpr int kSetupFailed = 3;
constexpr int kNextFailed = 4;

void Ignore(int) {}

Task<absl::StatusOr<int>> WaitForSignal(Reactor& reactor, SignalFd& signals) {
  co_return co_await signals.Next(reactor);
}

// The child: waits for SIGUSR1 through a SignalFd; SIGUSR2 has a handler (it is not in the set:
// it only wakes the signalfd's poll). Writes one byte to `ready` before its first read.
[[noreturn]] void Watch(int ready) {
  struct sigaction action {};
  action.sa_handler = Ignore;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGUSR2, &action, nullptr) != 0) _exit(kSetupFailed);
  absl::StatusOr<SignalFd> signals = SignalFd::Create({SIGUSR1});
  absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create();
  if (!signals.ok() || !reactor.ok()) _exit(kSetupFailed);
  if (::write(ready, "r", 1) != 1) _exit(kSetupFailed);
  ::close(ready);
  absl::StatusOr<int> sig = (*reactor)->BlockOn(WaitForSignal(**reactor, *signals));
  if (!sig.ok()) {
    std::fprintf(stderr, "watcher: Next failed: %s\n", sig.status().ToString().c_str());
    _exit(kNextFailed);
  }
  _exit(*sig == SIGUSR1 ? kGotSigusr1 : kSetupFailed);
}

// Whether `pid` has an io_uring worker thread ("iou-wrk-PID").
bool HasIoWorker(pid_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* tasks = ::opendir(dir.c_str());
  if (tasks == nullptr) return false;
  bool found = false;
  while (const dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(absl::StrCat(dir, "/", entry->d_name, "/comm"));
    std::string name;
    std::getline(comm, name);
    found = found || absl::StartsWith(name, "iou-wrk");
  }
  ::closedir(tasks);
  return found;
}

// Waits up to ~10 s for the child to exit; returns its wait status, or -1.
int WaitExit(pid_t pid) {
  for (int i = 0; i < 1000; ++i) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    ::usleep(10'000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

TEST(SignalFdTest, StopAndContinueDoNotEndTheWait) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    Watch(ready[1]);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the watcher did not start";
  ::close(ready[0]);

  // A signal outside the set wakes the signalfd's poll with nothing to read: io_uring hands
  // the read to a worker thread, which blocks in the signalfd.
  bool worker = false;
  for (int i = 0; i < 200 && !worker; ++i) {
    ASSERT_EQ(::kill(child, SIGUSR2), 0);
    ::usleep(20'000);
    worker = HasIoWorker(child);
  }
  // Linux 6.1 cancels the read instead of leaving it in a worker (each SIGUSR2 above then
  // completed it with ECANCELED): the watcher must have read again every time, and still be
  // waiting below. Newer kernels keep it in a worker, which the stop below interrupts.
  if (!worker) std::fprintf(stderr, "no io_uring worker holds the read (Linux 6.1 cancels it)\n");

  // Job control: stop, continue.
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  ::usleep(100'000);
  ASSERT_EQ(::kill(child, SIGCONT), 0);
  ::usleep(100'000);

  // The watcher must still be waiting, and get the signal it waits for.
  ASSERT_EQ(::kill(child, SIGUSR1), 0);
  const int status = WaitExit(child);
  ASSERT_NE(status, -1) << "the watcher never saw SIGUSR1";
  ASSERT_TRUE(WIFEXITED(status)) << "wait status " << status;
  EXPECT_EQ(WEXITSTATUS(status), kGotSigusr1)
      << (WEXITSTATUS(status) == kNextFailed ? "Next failed after SIGSTOP/SIGCONT"
                                             : "setup failed");
}

}  // namespace
}  // namespace hotring::io

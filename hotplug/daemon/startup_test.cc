// A daemon and a client started at the same moment, as every init script does it, 200 times:
// every client is answered and exits 0, every daemon exits 0 on SIGTERM. That the answer comes
// without a retransmit period's stall (a send that found no socket bound used to wait 1 s for a
// reply that could not come) is the retry schedule's, tested without a clock in
// hotplug/client/retry_schedule_test.cc (OnlyAQueuedSendWaitsForAReply,
// ADaemonThatAppearsLateIsReachedWithinOneBackoff); how long a start takes is
// `hotring bench startup`'s figure, never an assertion here: it depends on the machine's load.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "core/unique_fd.h"
#include "testing/daemon_fixture.h"

extern char** environ;

namespace hotring::hotplug {
namespace {

constexpr int kReadyFd = 3;  // the daemon's --ready-fd

// Starts `argv` with stdin, stdout and stderr on /dev/null and `ready` (if valid) as fd 3.
pid_t Spawn(std::vector<std::string> argv, const UniqueFd& ready) {
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (const int fd : {0, 1, 2}) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
  }
  if (ready.valid()) posix_spawn_file_actions_adddup2(&actions, ready.get(), kReadyFd);
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return err == 0 ? pid : -1;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Start {
  absl::Duration ready;     // launch -> the daemon said it serves
  absl::Duration answered;  // launch -> the client exited with its answer
};

TEST(StartupTest, EveryClientStartedWithTheDaemonIsAnswered) {
  const std::string binary = testing::HotringBinary();
  constexpr int kStarts = 200;
  std::vector<Start> starts;
  for (int i = 0; i < kStarts; ++i) {
    const std::string socket = absl::StrCat("@hotring-startup-test-", ::getpid(), "-", i);
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    const UniqueFd ready_read(fds[0]);
    // Above 3, so the dup2 onto fd 3 always makes a fresh descriptor without close-on-exec.
    const UniqueFd ready_write(::fcntl(fds[1], F_DUPFD_CLOEXEC, 10));
    ::close(fds[1]);
    ASSERT_TRUE(ready_write.valid());
    const absl::Time launch = absl::Now();
    // The client first: its first send finds no socket bound, which is the case that stalled.
    const pid_t client = Spawn({binary, "control", "status", "--socket", socket, "--timeout", "5"},
                               UniqueFd());
    const pid_t daemon = Spawn({binary, "daemon", "--no-netlink", "--socket", socket,
                                "--ready-fd", absl::StrCat(kReadyFd)},
                               ready_write);
    ASSERT_GT(client, 0);
    ASSERT_GT(daemon, 0);
    pollfd p{ready_read.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10'000), 1) << "start " << i << ": the daemon said nothing";
    const absl::Time ready = absl::Now();
    char byte = 0;
    EXPECT_EQ(::read(ready_read.get(), &byte, 1), 1);
    EXPECT_EQ(byte, '\n');
    const int client_exit = WaitExit(client);
    const absl::Time answered = absl::Now();
    ::kill(daemon, SIGTERM);
    const int daemon_exit = WaitExit(daemon);
    ASSERT_EQ(client_exit, 0) << "start " << i << ": control status failed";
    ASSERT_EQ(daemon_exit, 0) << "start " << i;
    starts.push_back(Start{ready - launch, answered - launch});
  }
  std::vector<absl::Duration> answered;
  std::vector<absl::Duration> late;  // after the daemon said it serves
  for (const Start& s : starts) {
    answered.push_back(s.answered);
    late.push_back(s.answered - s.ready);
  }
  std::sort(answered.begin(), answered.end());
  std::sort(late.begin(), late.end());
  auto ms = [](absl::Duration d) { return absl::StrCat(absl::ToDoubleMilliseconds(d)); };
  std::cout << "starts: " << kStarts << ", launch to answer: median " << ms(answered[kStarts / 2])
            << " ms, p90 " << ms(answered[kStarts * 9 / 10]) << " ms, max " << ms(answered.back())
            << " ms; answer after ready: median " << ms(late[kStarts / 2]) << " ms, max "
            << ms(late.back()) << " ms\n";
}

}  // namespace
}  // namespace hotring::hotplug

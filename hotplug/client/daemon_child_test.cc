// DaemonChild against small shell scripts standing in for the daemon: the ready newline on
// fd 3, giving up, never answering, and the redirected stderr.
#include "hotplug/client/daemon_child.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "io/process/child_process.h"

namespace hotring::hotplug {
namespace {

// A "daemon" running `script` with the arguments DaemonChild appends as $1 $2.
DaemonChild::Options Script(const std::string& script) {
  return {.program = "/bin/sh", .argv = {"sh", "-c", script, "sh"}};
}

TEST(DaemonChildTest, ReadyThenTerminated) {
  // Ready only when it was given --ready-fd 3 and fd 3 is the pipe.
  absl::StatusOr<DaemonChild> child = DaemonChild::Start(
      Script("[ \"$1 $2\" = '--ready-fd 3' ] && echo >&3 && exec 3>&- && exec sleep 100"));
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->WaitReady(absl::Seconds(30)).ok());
  EXPECT_TRUE(child->CheckAlive().ok());
  EXPECT_EQ(io::process::DescribeWaitStatus(child->Terminate(absl::Seconds(30))), "signal 15");
  EXPECT_FALSE(child->running());
  EXPECT_FALSE(child->CheckAlive().ok());
}

// The boot's layout: the caller's uevent socket sits on fd 3, where the ready pipe goes. The
// child still finds the pipe on fd 3 and the socket (the same one: its inode) on fd 4, with
// `--netlink-fd 4` after `--ready-fd 3`.
TEST(DaemonChildTest, TheNetlinkSocketGoesToFdFourWhateverFdItHadHere) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  ::close(pair[1]);
  // Onto fd 3, if it is free here (it is in a fresh test process; else wherever it is).
  int socket_fd = pair[0];
  if (pair[0] != 3 && ::fcntl(3, F_GETFD) < 0) {
    ASSERT_EQ(::dup3(pair[0], 3, O_CLOEXEC), 3);
    ::close(pair[0]);
    socket_fd = 3;
  }
  char link[64] = {};
  ASSERT_GT(::readlink(absl::StrCat("/proc/self/fd/", socket_fd).c_str(), link, sizeof(link) - 1),
            0);
  DaemonChild::Options options = Script(absl::StrCat(
      "[ \"$*\" = '--ready-fd 3 --netlink-fd 4' ] && [ \"$(readlink /proc/$$/fd/4)\" = '", link,
      "' ] && echo >&3 && exec 3>&- && exec sleep 100"));
  options.netlink_fd = socket_fd;
  absl::StatusOr<DaemonChild> child = DaemonChild::Start(options);
  ::close(socket_fd);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_TRUE(child->WaitReady(absl::Seconds(30)).ok());
  EXPECT_EQ(io::process::DescribeWaitStatus(child->Terminate(absl::Seconds(30))), "signal 15");
}

TEST(DaemonChildTest, GivingUpSaysHowItEndedAndItsStderrGoesWhereAsked) {
  const std::string log = absl::StrCat(std::getenv("TEST_TMPDIR"), "/daemon.log");
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  DaemonChild::Options options = Script("exec 3>&-; echo 'cannot bind' >&2; exit 4");
  options.stderr_fd = fd;
  absl::StatusOr<DaemonChild> child = DaemonChild::Start(options);
  ::close(fd);
  ASSERT_TRUE(child.ok()) << child.status();
  const absl::Status ready = child->WaitReady(absl::Seconds(30));
  EXPECT_EQ(ready.message(), "the daemon exited: exit 4");
  EXPECT_FALSE(child->running());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "cannot bind\n");
}

TEST(DaemonChildTest, NeverReadyIsADeadlineAndStoppingKillsIt) {
  absl::StatusOr<DaemonChild> child = DaemonChild::Start(Script("trap '' TERM; exec sleep 100"));
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_TRUE(absl::IsDeadlineExceeded(child->WaitReady(absl::Milliseconds(200))));
  EXPECT_EQ(child->WaitExit(absl::Milliseconds(10)), std::nullopt);
  // SIGTERM ignored: SIGKILL after the grace.
  EXPECT_EQ(io::process::DescribeWaitStatus(child->Terminate(absl::Milliseconds(200))), "signal 9");
}

}  // namespace
}  // namespace hotring::hotplug

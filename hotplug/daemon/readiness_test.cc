#include "hotplug/daemon/readiness.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "core/unique_fd.h"
#include "io/socket.h"

namespace hotring::hotplug {
namespace {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Pipe MakePipe() {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Everything the reader can get now; "<EOF>" appended when the writer has closed.
std::string Drain(const UniqueFd& fd) {
  std::string out;
  char buffer[64];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) out += "<EOF>";
    return out;
  }
}

TEST(ReadinessTest, ReadyWritesOneNewlineToTheReadyFdAndClosesIt) {
  Pipe pipe = MakePipe();
  absl::StatusOr<ReadinessNotifier> notifier =
      ReadinessNotifier::Create(pipe.write.Release(), "");
  ASSERT_TRUE(notifier.ok()) << notifier.status();
  EXPECT_EQ(Drain(pipe.read), "");  // nothing before it is ready
  notifier->Ready();
  notifier->Ready();  // once only
  EXPECT_EQ(Drain(pipe.read), "\n<EOF>");
}

TEST(ReadinessTest, TheReadyFdIsNotInheritedByWhatTheDaemonRuns) {
  Pipe pipe = MakePipe();
  ASSERT_EQ(::fcntl(pipe.write.get(), F_SETFD, 0), 0);
  const int fd = pipe.write.Release();
  absl::StatusOr<ReadinessNotifier> notifier = ReadinessNotifier::Create(fd, "");
  ASSERT_TRUE(notifier.ok());
  EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
}

TEST(ReadinessTest, FailureClosesTheReadyFdWithoutANewline) {
  Pipe pipe = MakePipe();
  absl::StatusOr<ReadinessNotifier> notifier =
      ReadinessNotifier::Create(pipe.write.Release(), "");
  ASSERT_TRUE(notifier.ok());
  notifier->Failed("socket @x is already in use");
  notifier->Ready();  // too late: the failure was told
  EXPECT_EQ(Drain(pipe.read), "<EOF>");
}

TEST(ReadinessTest, AClosedReadyFdIsABadArgument) {
  Pipe pipe = MakePipe();
  const int fd = pipe.write.get();
  pipe.write.Reset();
  absl::StatusOr<ReadinessNotifier> notifier = ReadinessNotifier::Create(fd, "");
  ASSERT_FALSE(notifier.ok());
  EXPECT_EQ(notifier.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(notifier.status().message().find("--ready-fd"), absl::string_view::npos);
}

// sd_notify: NOTIFY_SOCKET may name an abstract socket ('@') or a path.
TEST(ReadinessTest, ReadySendsReadyToTheNotifySocket) {
  for (const bool abstract : {true, false}) {
    const std::string name =
        abstract ? absl::StrCat("@hotring-notify-test-", ::getpid())
                 : absl::StrCat("/tmp/hotring-notify-test-", ::getpid());
    ::unlink(name.c_str());
    absl::StatusOr<UniqueFd> manager = io::BindUnix(SOCK_DGRAM, name);
    ASSERT_TRUE(manager.ok()) << manager.status();
    absl::StatusOr<ReadinessNotifier> notifier = ReadinessNotifier::Create(std::nullopt, name);
    ASSERT_TRUE(notifier.ok());
    notifier->Ready();
    char buffer[64];
    const ssize_t n = ::recv(manager->get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    ASSERT_GT(n, 0) << name;
    EXPECT_EQ(std::string(buffer, static_cast<size_t>(n)), "READY=1") << name;
    if (!abstract) ::unlink(name.c_str());
  }
}

// systemd may name a vsock address: that is not for us to send to. It is said once, at start-up,
// and the other ways of telling readiness still work.
TEST(ReadinessTest, ANotifySocketThatIsNoUnixNameIsIgnoredWithAWarning) {
  Pipe pipe = MakePipe();
  ::testing::internal::CaptureStderr();
  absl::StatusOr<ReadinessNotifier> notifier =
      ReadinessNotifier::Create(pipe.write.Release(), "vsock:2:1234");
  const std::string warned = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(notifier.ok()) << notifier.status();
  EXPECT_NE(warned.find("NOTIFY_SOCKET=vsock:2:1234: not a path or an abstract name; not "
                        "notifying it"),
            std::string::npos)
      << warned;
  ::testing::internal::CaptureStderr();
  notifier->Ready();
  const std::string at_ready = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(at_ready, "");  // no attempt to send, so no failure to report
  EXPECT_EQ(Drain(pipe.read), "\n<EOF>");
}

}  // namespace
}  // namespace hotring::hotplug

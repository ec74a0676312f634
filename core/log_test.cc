#include "core/log.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace hotring {
namespace {

// Captures what is written to stderr while `fn` runs.
template <typename Fn>
std::string CaptureStderr(Fn fn) {
  char path[] = "/tmp/hotring_log_test_XXXXXX";
  const int fd = ::mkstemp(path);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  fn();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::string out;
  char buf[4096];
  ::lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  ::close(fd);
  ::unlink(path);
  return out;
}

TEST(LogTest, OneLinePerMessageWithLevelAndFilter) {
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kInfo, "hr").ok());
  const std::string out = CaptureStderr([] {
    LogInfo("SEQNUM=%d DEVPATH=%s", 12, "/devices/x");
    LogDebug("hidden");
    LogError("multi\nline");
  });
  EXPECT_EQ(out, "hr: info: SEQNUM=12 DEVPATH=/devices/x\nhr: error: multi line\n");
}

absl::Time At(int day, int hour, int minute, int second) {
  return absl::FromCivil(absl::CivilSecond(2024, 3, day, hour, minute, second),
                         absl::UTCTimeZone());
}

TEST(LogTest, SyslogLineIsRfc3164WithFacilityDaemon) {
  // <PRI> = daemon (3) * 8 + severity; the day of the month is padded with a space.
  EXPECT_EQ(FormatSyslogLine(LogLevel::kNotice, "hotring", 42, At(5, 7, 8, 9),
                             absl::UTCTimeZone(), "ready\non /run/hotring/control"),
            "<29>Mar  5 07:08:09 hotring[42]: ready on /run/hotring/control");
  EXPECT_EQ(FormatSyslogLine(LogLevel::kError, "mdev", 7, At(15, 23, 59, 0), absl::UTCTimeZone(),
                             "x"),
            "<27>Mar 15 23:59:00 mdev[7]: x");
}

TEST(LogTest, FileLineHasTheTime) {
  EXPECT_EQ(FormatFileLine(LogLevel::kWarning, "hotring", At(5, 7, 8, 9) + absl::Milliseconds(12),
                           absl::UTCTimeZone(), "a\nb"),
            "2024-03-05 07:08:09.012 hotring: warning: a b\n");
}

std::string ReadAll(const std::string& path) {
  std::string out;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

TEST(LogTest, FileSinkAppendsAndStderrStaysQuiet) {
  char dir[] = "/tmp/hotring_log_file_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/daemon.log";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("earlier line\n", f);
    std::fclose(f);
  }
  const std::string err = CaptureStderr([&] {
    ASSERT_TRUE(InitLogging(LogSink::kFile, LogLevel::kInfo, "hr", path).ok());
    LogInfo("SEQNUM=%d", 3);
    LogDebug("hidden");
  });
  EXPECT_EQ(err, "");
  const std::string text = ReadAll(path);
  EXPECT_EQ(text.rfind("earlier line\n", 0), 0u) << text;
  EXPECT_NE(text.find(" hr: info: SEQNUM=3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
  EXPECT_FALSE(InitLogging(LogSink::kFile, LogLevel::kInfo, "hr", std::string(dir) + "/no/such").ok());
  ::unlink(path.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kNotice).ok());
}

TEST(LogTest, SyslogSinkSendsOneDatagramPerLine) {
  char dir[] = "/tmp/hotring_log_syslog_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/log";
  const int server = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(server, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  ASSERT_EQ(::bind(server, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_TRUE(InitLogging(LogSink::kSyslog, LogLevel::kNotice, "hr", path).ok());
  LogNotice("ready");
  LogInfo("hidden");
  LogError("broken");
  char buf[512];
  const ssize_t first = ::recv(server, buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_GT(first, 0);
  const std::string one(buf, static_cast<size_t>(first));
  EXPECT_EQ(one.rfind("<29>", 0), 0u) << one;
  EXPECT_NE(one.find(" hr[" + std::to_string(::getpid()) + "]: ready"), std::string::npos) << one;
  const ssize_t second = ::recv(server, buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_GT(second, 0);
  const std::string two(buf, static_cast<size_t>(second));
  EXPECT_EQ(two.rfind("<27>", 0), 0u) << two;
  EXPECT_NE(two.find("]: broken"), std::string::npos) << two;
  EXPECT_LT(::recv(server, buf, sizeof buf, MSG_DONTWAIT), 0);  // nothing else: info is off
  ::close(server);
  ::unlink(path.c_str());
  // No syslog daemon: an error, lines go to stderr.
  EXPECT_FALSE(InitLogging(LogSink::kSyslog, LogLevel::kNotice, "hr", path).ok());
  ::rmdir(dir);
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kNotice).ok());
}

TEST(LogTest, NoneWritesNothing) {
  ASSERT_TRUE(InitLogging(LogSink::kNone, LogLevel::kDebug, "hr").ok());
  EXPECT_EQ(CaptureStderr([] { LogError("lost"); }), "");
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kNotice).ok());
}

TEST(LogTest, LevelChangesWhileRunning) {
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kNotice, "hr").ok());
  const std::string out = CaptureStderr([] {
    LogInfo("before");
    SetLogLevel(LogLevel::kDebug);
    LogDebug("after");
    SetLogLevel(LogLevel::kError);
    LogWarning("quiet");
  });
  EXPECT_EQ(out, "hr: debug: after\n");
  EXPECT_EQ(CurrentLogLevel(), LogLevel::kError);
}

TEST(LogTest, SyslogPriorities) {
  EXPECT_EQ(LogLevelFromSyslog(0), LogLevel::kError);  // emerg
  EXPECT_EQ(LogLevelFromSyslog(2), LogLevel::kError);  // crit
  EXPECT_EQ(LogLevelFromSyslog(3), LogLevel::kError);
  EXPECT_EQ(LogLevelFromSyslog(4), LogLevel::kWarning);
  EXPECT_EQ(LogLevelFromSyslog(5), LogLevel::kNotice);
  EXPECT_EQ(LogLevelFromSyslog(6), LogLevel::kInfo);
  EXPECT_EQ(LogLevelFromSyslog(7), LogLevel::kDebug);
  EXPECT_EQ(LogLevelFromSyslog(-1), LogLevel::kError);
  EXPECT_EQ(LogLevelFromSyslog(99), LogLevel::kDebug);
}

TEST(LogTest, ParseLevel) {
  LogLevel level;
  ASSERT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_FALSE(ParseLogLevel("loud", &level));
}

}  // namespace
}  // namespace hotring

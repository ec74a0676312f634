#include "core/log.h"

#include <unistd.h>

#include <cstdio>
#include <string>

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

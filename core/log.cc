#include "core/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring {
namespace {

// Logging configuration is process-wide by nature (every component writes to the same place);
// it is set once at start-up and only read afterwards, except for the level (SetLogLevel).
struct LogConfig {
  // Atomic: a failed /dev/kmsg write moves every thread's lines to stderr at once.
  std::atomic<LogSink> sink{LogSink::kStderr};
  // Atomic: `udevadm control --log-level` changes it while pool threads may log.
  std::atomic<LogLevel> max_level{LogLevel::kNotice};
  std::string tag = "hotring";
  UniqueFd kmsg;
};

LogConfig& Config() {
  static LogConfig* const config = new LogConfig;
  return *config;
}

absl::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kNotice:
      return "notice";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

// 0 when everything was written, else the errno of the failed write.
int WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

std::string FormatLine(const LogConfig& config, LogSink sink, LogLevel level,
                       absl::string_view message) {
  std::string line;
  if (sink == LogSink::kKmsg) {
    // /dev/kmsg takes one record per write; the <N> prefix is the syslog priority.
    line = absl::StrCat("<", static_cast<int>(level), ">", config.tag, ": ", message);
  } else {
    line = absl::StrCat(config.tag, ": ", LevelName(level), ": ", message);
  }
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  line.push_back('\n');
  return line;
}

}  // namespace

absl::Status InitLogging(LogSink sink, LogLevel max_level, absl::string_view tag) {
  LogConfig& config = Config();
  config.max_level.store(max_level, std::memory_order_relaxed);
  config.tag = std::string(tag);
  config.sink.store(LogSink::kStderr);
  if (sink == LogSink::kKmsg) {
    const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return ErrnoStatus("open(/dev/kmsg)");
    config.kmsg.Reset(fd);
    config.sink.store(LogSink::kKmsg);
  }
  return absl::OkStatus();
}

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  for (const LogLevel candidate : {LogLevel::kError, LogLevel::kWarning, LogLevel::kNotice,
                                   LogLevel::kInfo, LogLevel::kDebug}) {
    if (text == LevelName(candidate)) {
      *level = candidate;
      return true;
    }
  }
  return false;
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) <=
         static_cast<int>(Config().max_level.load(std::memory_order_relaxed));
}

void SetLogLevel(LogLevel max_level) {
  Config().max_level.store(max_level, std::memory_order_relaxed);
}

LogLevel CurrentLogLevel() { return Config().max_level.load(std::memory_order_relaxed); }

LogLevel LogLevelFromSyslog(int priority) {
  if (priority <= static_cast<int>(LogLevel::kError)) return LogLevel::kError;
  if (priority >= static_cast<int>(LogLevel::kDebug)) return LogLevel::kDebug;
  return static_cast<LogLevel>(priority);
}

void LogLine(LogLevel level, absl::string_view message) {
  LogConfig& config = Config();
  const LogSink sink = config.sink.load(std::memory_order_relaxed);
  if (sink == LogSink::kKmsg) {
    const int error = WriteAll(config.kmsg.get(), FormatLine(config, sink, level, message));
    // A /dev/kmsg that stops taking lines (a full or read-only file in its place, a kernel
    // that refuses) would swallow every later line, errors included: log to stderr from here
    // on, and say why there. Busy (EAGAIN) is no reason to move.
    if (error == 0 || error == EAGAIN) return;
    if (config.sink.exchange(LogSink::kStderr) == LogSink::kKmsg) {
      (void)WriteAll(STDERR_FILENO,
                     FormatLine(config, LogSink::kStderr, LogLevel::kWarning,
                                absl::StrCat("cannot write to /dev/kmsg (", std::strerror(error),
                                             "); logging to stderr")));
    }
  }
  (void)WriteAll(STDERR_FILENO, FormatLine(config, LogSink::kStderr, level, message));
}

}  // namespace hotring

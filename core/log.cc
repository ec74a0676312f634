#include "core/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring {
namespace {

// Logging configuration is process-wide by nature (every component writes to the same place);
// it is set once at start-up and only read afterwards.
struct LogConfig {
  LogSink sink = LogSink::kStderr;
  LogLevel max_level = LogLevel::kNotice;
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

void WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // Nowhere left to report a logging failure.
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

absl::Status InitLogging(LogSink sink, LogLevel max_level, absl::string_view tag) {
  LogConfig& config = Config();
  config.max_level = max_level;
  config.tag = std::string(tag);
  config.sink = LogSink::kStderr;
  if (sink == LogSink::kKmsg) {
    const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return ErrnoStatus("open(/dev/kmsg)");
    config.kmsg.Reset(fd);
    config.sink = LogSink::kKmsg;
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
  return static_cast<int>(level) <= static_cast<int>(Config().max_level);
}

void LogLine(LogLevel level, absl::string_view message) {
  const LogConfig& config = Config();
  std::string line;
  if (config.sink == LogSink::kKmsg) {
    // /dev/kmsg takes one record per write; the <N> prefix is the syslog priority.
    line = absl::StrCat("<", static_cast<int>(level), ">", config.tag, ": ", message);
  } else {
    line = absl::StrCat(config.tag, ": ", LevelName(level), ": ", message);
  }
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  line.push_back('\n');
  WriteAll(config.sink == LogSink::kKmsg ? config.kmsg.get() : STDERR_FILENO, line);
}

}  // namespace hotring

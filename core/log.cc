#include "core/log.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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
  UniqueFd kmsg;  // /dev/kmsg, the --log-file, or the socket syslog lines are sent from
  sockaddr_un syslog_address{};
  socklen_t syslog_address_length = 0;
  absl::TimeZone zone;
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

void ReplaceNewlines(std::string& line) {
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
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
  ReplaceNewlines(line);
  line.push_back('\n');
  return line;
}

// Opens the syslog socket and checks that a syslog daemon listens on `path`.
absl::Status OpenSyslog(LogConfig& config, absl::string_view path) {
  if (path.empty()) path = "/dev/log";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("syslog socket ", path, ": name too long"));
  }
  path.copy(address.sun_path, path.size());
  const socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("socket(AF_UNIX)");
  // A probe only: lines are sent with sendto, so a restarted syslog daemon (a new socket under
  // the same name) gets them without a reconnect.
  UniqueFd probe(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return ErrnoStatus("socket(AF_UNIX)");
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    return ErrnoStatus(absl::StrCat("connect(", path, ")"));
  }
  config.kmsg = std::move(fd);
  config.syslog_address = address;
  config.syslog_address_length = length;
  return absl::OkStatus();
}

}  // namespace

std::string FormatSyslogLine(LogLevel level, absl::string_view tag, int pid, absl::Time now,
                             absl::TimeZone zone, absl::string_view message) {
  constexpr int kFacilityDaemon = 3;
  std::string line = absl::StrCat("<", kFacilityDaemon * 8 + static_cast<int>(level), ">",
                                  absl::FormatTime("%b %e %H:%M:%S", now, zone), " ", tag, "[",
                                  pid, "]: ", message);
  ReplaceNewlines(line);
  return line;
}

std::string FormatFileLine(LogLevel level, absl::string_view tag, absl::Time now,
                           absl::TimeZone zone, absl::string_view message) {
  std::string line = absl::StrCat(absl::FormatTime("%Y-%m-%d %H:%M:%E3S", now, zone), " ", tag,
                                  ": ", LevelName(level), ": ", message);
  ReplaceNewlines(line);
  line.push_back('\n');
  return line;
}

absl::Status InitLogging(LogSink sink, LogLevel max_level, absl::string_view tag,
                         absl::string_view path) {
  LogConfig& config = Config();
  config.max_level.store(max_level, std::memory_order_relaxed);
  config.tag = std::string(tag);
  config.sink.store(LogSink::kStderr);
  config.kmsg.Reset();
  switch (sink) {
    case LogSink::kStderr:
    case LogSink::kNone:
      break;
    case LogSink::kKmsg: {
      const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd < 0) return ErrnoStatus("open(/dev/kmsg)");
      config.kmsg.Reset(fd);
      break;
    }
    case LogSink::kFile: {
      const std::string file(path);
      const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
                            0640);
      if (fd < 0) return ErrnoStatus(absl::StrCat("open(", file, ")"));
      config.kmsg.Reset(fd);
      config.zone = absl::LocalTimeZone();
      break;
    }
    case LogSink::kSyslog:
      if (absl::Status opened = OpenSyslog(config, path); !opened.ok()) return opened;
      config.zone = absl::LocalTimeZone();
      break;
  }
  config.sink.store(sink);
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
  switch (sink) {
    case LogSink::kNone:
      return;
    case LogSink::kFile:
      // A full disk loses lines; it is no reason to write them anywhere else.
      (void)WriteAll(config.kmsg.get(), FormatFileLine(level, config.tag,
                                                       absl::Now(),  // realtime-ok: a line's date
                                                       config.zone, message));
      return;
    case LogSink::kSyslog: {
      // Never waits: a syslog daemon that does not keep up loses lines, the daemon no time.
      const std::string line = FormatSyslogLine(level, config.tag, ::getpid(),
                                                absl::Now(),  // realtime-ok: RFC 3164's date
                                                config.zone, message);
      (void)::sendto(config.kmsg.get(), line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                     reinterpret_cast<const sockaddr*>(&config.syslog_address),
                     config.syslog_address_length);
      return;
    }
    case LogSink::kStderr:
    case LogSink::kKmsg:
      break;
  }
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

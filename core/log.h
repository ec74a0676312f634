// Logging: one line per fact, to stderr, to /dev/kmsg (the initramfs convention, where the
// kernel's <N> prefix carries the priority), to a file, or to syslog (/dev/log). The sink is
// chosen once at start-up.
#ifndef HOTRING_CORE_LOG_H_
#define HOTRING_CORE_LOG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hotring {

// Syslog priorities, as /dev/kmsg expects them.
enum class LogLevel { kError = 3, kWarning = 4, kNotice = 5, kInfo = 6, kDebug = 7 };

// Where lines go. kNone writes nothing (a daemon that let go of its caller's streams and has
// nowhere else to write).
enum class LogSink { kStderr, kKmsg, kFile, kSyslog, kNone };

// Chooses where lines go and the most verbose level written. `path`: the file kFile appends to
// (created 0640), the socket kSyslog sends to ("" for /dev/log). An error when /dev/kmsg, the
// file or the socket cannot be opened; lines then go to stderr. Call once, before logging
// starts (a later call replaces the sink).
absl::Status InitLogging(LogSink sink, LogLevel max_level, absl::string_view tag = "hotring",
                         absl::string_view path = "");

// A syslog datagram as RFC 3164 and glibc's syslog(3) write it: `<PRI>Mmm dd hh:mm:ss
// TAG[PID]: MESSAGE`, facility daemon, the time in `zone`, newlines replaced by spaces.
[[nodiscard]] std::string FormatSyslogLine(LogLevel level, absl::string_view tag, int pid,
                                           absl::Time now, absl::TimeZone zone,
                                           absl::string_view message);
// A --log-file line: `YYYY-MM-DD hh:mm:ss.mmm TAG: LEVEL: MESSAGE\n` (a file has no clock of
// its own, unlike the kernel's log and syslog).
[[nodiscard]] std::string FormatFileLine(LogLevel level, absl::string_view tag, absl::Time now,
                                         absl::TimeZone zone, absl::string_view message);

// Parses "error", "warning", "notice", "info", "debug".
[[nodiscard]] bool ParseLogLevel(absl::string_view text, LogLevel* level);

[[nodiscard]] bool LogEnabled(LogLevel level);

// Changes the most verbose level written, while the program runs (`udevadm control
// --log-level`); the sink stays.
void SetLogLevel(LogLevel max_level);
[[nodiscard]] LogLevel CurrentLogLevel();

// A syslog priority (0 emerg .. 7 debug) as a level: the ones above error (emerg, alert, crit)
// become error, which hotring's most severe lines use.
[[nodiscard]] LogLevel LogLevelFromSyslog(int priority);

// Writes one line (a trailing newline is added; embedded newlines are replaced).
void LogLine(LogLevel level, absl::string_view message);

template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kError)) LogLine(LogLevel::kError, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kWarning)) {
    LogLine(LogLevel::kWarning, absl::StrFormat(format, args...));
  }
}
template <typename... Args>
void LogNotice(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kNotice)) LogLine(LogLevel::kNotice, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogInfo(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kInfo)) LogLine(LogLevel::kInfo, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogDebug(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (LogEnabled(LogLevel::kDebug)) LogLine(LogLevel::kDebug, absl::StrFormat(format, args...));
}

}  // namespace hotring

#endif  // HOTRING_CORE_LOG_H_

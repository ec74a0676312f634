// Logging: one line per fact, to stderr or to /dev/kmsg (the initramfs convention, where the
// kernel's <N> prefix carries the priority). The sink is chosen once at start-up.
#ifndef HOTRING_CORE_LOG_H_
#define HOTRING_CORE_LOG_H_

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace hotring {

// Syslog priorities, as /dev/kmsg expects them.
enum class LogLevel { kError = 3, kWarning = 4, kNotice = 5, kInfo = 6, kDebug = 7 };

enum class LogSink { kStderr, kKmsg };

// Chooses where lines go and the most verbose level written. kKmsg opens /dev/kmsg and falls
// back to stderr (with a warning) when it cannot. Call once, before logging starts.
absl::Status InitLogging(LogSink sink, LogLevel max_level, absl::string_view tag = "hotring");

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

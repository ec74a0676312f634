#include "hotplug/udevrules/rule_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"

namespace hotring::hotplug::udevrules {
namespace {

// An empty regular file or a character device (/dev/null): systemd's null_or_empty.
bool NullOrEmpty(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return true;  // a dangling link contributes nothing
  return (S_ISREG(st.st_mode) && st.st_size <= 0) || S_ISCHR(st.st_mode);
}

bool IsFileOrLink(const std::string& dir, const struct dirent& entry) {
  switch (entry.d_type) {
    case DT_REG:
    case DT_LNK:
      return true;
    case DT_UNKNOWN: {
      struct stat st;
      const std::string path = absl::StrCat(dir, "/", entry.d_name);
      return ::lstat(path.c_str(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
    }
    default:
      return false;
  }
}

}  // namespace

std::vector<std::string> DefaultRulesDirs() {
  return {"/etc/udev/rules.d", "/run/udev/rules.d", "/usr/local/lib/udev/rules.d",
          "/usr/lib/udev/rules.d", "/lib/udev/rules.d"};
}

absl::StatusOr<std::vector<RulesFile>> ListRulesFiles(absl::Span<const std::string> dirs) {
  std::vector<RulesFile> files;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      return ErrnoStatus(absl::StrCat("opendir(", dir, ")"));
    }
    while (const struct dirent* e = ::readdir(d)) {
      const absl::string_view name(e->d_name);
      if (name.empty() || name[0] == '.' || !absl::EndsWith(name, ".rules")) continue;
      if (!IsFileOrLink(dir, *e)) continue;
      if (!seen.insert(std::string(name)).second) continue;  // hidden by an earlier directory
      RulesFile file;
      file.name = std::string(name);
      file.path = absl::StrCat(dir, "/", name);
      file.masked = NullOrEmpty(file.path);
      files.push_back(std::move(file));
    }
    ::closedir(d);
  }
  std::sort(files.begin(), files.end(),
            [](const RulesFile& a, const RulesFile& b) { return a.name < b.name; });
  return files;
}

bool ParseSeconds(absl::string_view text, absl::Duration* out) {
  struct Unit {
    absl::string_view name;
    absl::Duration scale;
  };
  // systemd's table, longest names first so that "msec" is not read as "m" + "sec".
  static const Unit kUnits[] = {
      {"seconds", absl::Seconds(1)}, {"second", absl::Seconds(1)}, {"minutes", absl::Minutes(1)},
      {"minute", absl::Minutes(1)},  {"hours", absl::Hours(1)},    {"hour", absl::Hours(1)},
      {"days", absl::Hours(24)},     {"day", absl::Hours(24)},     {"weeks", absl::Hours(168)},
      {"week", absl::Hours(168)},    {"msec", absl::Milliseconds(1)}, {"usec", absl::Microseconds(1)},
      {"nsec", absl::Nanoseconds(1)}, {"sec", absl::Seconds(1)},   {"min", absl::Minutes(1)},
      {"hr", absl::Hours(1)},        {"ms", absl::Milliseconds(1)}, {"us", absl::Microseconds(1)},
      {"µs", absl::Microseconds(1)}, {"ns", absl::Nanoseconds(1)}, {"s", absl::Seconds(1)},
      {"m", absl::Minutes(1)},       {"h", absl::Hours(1)},        {"d", absl::Hours(24)},
      {"w", absl::Hours(168)},
  };
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  if (rest.empty()) return false;
  if (rest == "infinity") {
    *out = absl::InfiniteDuration();
    return true;
  }
  absl::Duration total;
  while (!rest.empty()) {
    size_t n = 0;
    while (n < rest.size() && (absl::ascii_isdigit(rest[n]) || rest[n] == '.')) ++n;
    if (n == 0) return false;
    double value = 0;
    if (!absl::SimpleAtod(rest.substr(0, n), &value) || value < 0) return false;
    rest.remove_prefix(n);
    rest = absl::StripLeadingAsciiWhitespace(rest);
    absl::Duration scale = absl::Seconds(1);
    for (const Unit& unit : kUnits) {
      if (absl::StartsWith(rest, unit.name)) {
        scale = unit.scale;
        rest.remove_prefix(unit.name.size());
        break;
      }
    }
    total += value * scale;
    rest = absl::StripLeadingAsciiWhitespace(rest);
  }
  *out = total;
  return true;
}

bool ParseSyslogLevel(absl::string_view text, int* level) {
  static const char* const kNames[] = {"emerg", "alert",  "crit", "err",
                                       "warning", "notice", "info", "debug"};
  for (int i = 0; i < 8; ++i) {
    if (text == kNames[i]) {
      *level = i;
      return true;
    }
  }
  return absl::SimpleAtoi(text, level) && *level >= 0 && *level <= 7;
}

bool ParseSignalName(absl::string_view text, int* signal) {
  struct Name {
    const char* name;
    int number;
  };
  static const Name kSignals[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},
                                  {"ABRT", SIGABRT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
                                  {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
                                  {"CONT", SIGCONT}, {"STOP", SIGSTOP}};
  absl::string_view name = text;
  absl::ConsumePrefix(&name, "SIG");
  for (const Name& s : kSignals) {
    if (name == s.name) {
      *signal = s.number;
      return true;
    }
  }
  return absl::SimpleAtoi(text, signal) && *signal > 0 && *signal < _NSIG;
}

namespace {

// One assignment of an environment file, after quotes and escapes.
struct Assignment {
  std::string key;
  std::string value;
  int line = 0;
};

// systemd's environment-file reader, for what udev.conf holds.
std::vector<Assignment> ReadEnvironmentFile(absl::string_view text) {
  std::vector<Assignment> out;
  int line = 1;
  size_t i = 0;
  while (i < text.size()) {
    // Leading whitespace, then a comment or an empty line.
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i < text.size() && (text[i] == '#' || text[i] == ';')) {
      while (i < text.size() && text[i] != '\n') ++i;
    }
    if (i >= text.size()) break;
    if (text[i] == '\n' || text[i] == '\r') {
      if (text[i] == '\n') ++line;
      ++i;
      continue;
    }
    Assignment a;
    a.line = line;
    while (i < text.size() && text[i] != '=' && text[i] != '\n') a.key.push_back(text[i++]);
    a.key = std::string(absl::StripAsciiWhitespace(a.key));
    if (i >= text.size() || text[i] != '=') {  // no '=': not an assignment
      continue;
    }
    ++i;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::string value;
    size_t trailing_space = 0;  // unquoted trailing whitespace to drop
    char quote = 0;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else if (c == '\\' && quote == '"' && i + 1 < text.size()) {
          const char n = text[++i];
          if (n == '\n') {
            ++line;
          } else if (n == '"' || n == '\\' || n == '`' || n == '$') {
            value.push_back(n);
          } else {
            value.push_back('\\');
            value.push_back(n);
          }
        } else {
          if (c == '\n') ++line;
          value.push_back(c);
        }
        trailing_space = 0;
        continue;
      }
      if (c == '\n') break;
      if (c == '\'' || c == '"') {
        quote = c;
        trailing_space = 0;
      } else if (c == '\\' && i + 1 < text.size()) {
        const char n = text[++i];
        if (n == '\n') {
          ++line;  // a joined line
        } else {
          value.push_back(n);
        }
        trailing_space = 0;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        value.push_back(c);
        ++trailing_space;
      } else {
        value.push_back(c);
        trailing_space = 0;
      }
    }
    value.resize(value.size() - std::min(trailing_space, value.size()));
    a.value = std::move(value);
    if (!a.key.empty()) out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

std::optional<ResolveNames> ParseResolveNames(absl::string_view text) {
  if (text == "early") return ResolveNames::kEarly;
  if (text == "late") return ResolveNames::kLate;
  if (text == "never") return ResolveNames::kNever;
  return std::nullopt;
}

absl::string_view ResolveNamesName(ResolveNames when) {
  switch (when) {
    case ResolveNames::kEarly: return "early";
    case ResolveNames::kLate: return "late";
    case ResolveNames::kNever: return "never";
  }
  return "early";
}

absl::StatusOr<UdevConf> ParseUdevConf(absl::string_view text, absl::string_view file_name) {
  UdevConf conf;
  for (const Assignment& a : ReadEnvironmentFile(text)) {
    const std::string where = absl::StrCat(file_name, ":", a.line, ": ");
    if (a.value.empty()) continue;  // "KEY=" leaves the default, as udevd does
    if (a.key == "udev_log") {
      int level = 0;
      if (ParseSyslogLevel(a.value, &level)) {
        conf.log_level = level;
      } else {
        conf.warnings.push_back(
            absl::StrCat(where, "failed to set udev log level '", a.value, "', ignoring"));
      }
    } else if (a.key == "children_max") {
      unsigned n = 0;
      if (absl::SimpleAtoi(a.value, &n)) {
        conf.children_max = n;
      } else {
        conf.warnings.push_back(
            absl::StrCat(where, "failed to parse children_max=", a.value, ", ignoring"));
      }
    } else if (a.key == "exec_delay") {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "exec_delay=", a.value,
                       " is not supported (RUN programs are never delayed on purpose); remove it"));
    } else if (a.key == "event_timeout") {
      absl::Duration d;
      if (ParseSeconds(a.value, &d)) {
        conf.event_timeout = d;
      } else {
        conf.warnings.push_back(
            absl::StrCat(where, "failed to parse event_timeout=", a.value, ", ignoring"));
      }
    } else if (a.key == "resolve_names") {
      if (std::optional<ResolveNames> when = ParseResolveNames(a.value); when.has_value()) {
        conf.resolve_names = when;
      } else {
        conf.warnings.push_back(
            absl::StrCat(where, "failed to parse resolve_names=", a.value, ", ignoring"));
      }
    } else if (a.key == "timeout_signal") {
      int signal = 0;
      if (ParseSignalName(a.value, &signal)) {
        conf.timeout_signal = signal;
      } else {
        conf.warnings.push_back(
            absl::StrCat(where, "failed to parse timeout_signal=", a.value, ", ignoring"));
      }
    }
  }
  return conf;
}

absl::StatusOr<UdevConf> ReadUdevConf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return UdevConf();
    return ErrnoStatus(absl::StrCat("open(", path, ")"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseUdevConf(text.str(), path);
}

}  // namespace hotring::hotplug::udevrules

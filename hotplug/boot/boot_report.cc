#include "hotplug/boot/boot_report.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hotring::hotplug::boot {
namespace {

absl::string_view TypeName(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFBLK: return "block";
    case S_IFCHR: return "char";
    case S_IFDIR: return "dir";
    case S_IFLNK: return "link";
    case S_IFREG: return "file";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "socket";
    default: return "unknown";
  }
}

std::string ErrnoName(int err) {
  switch (err) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case ENOTDIR: return "ENOTDIR";
    case ELOOP: return "ELOOP";
    default: return absl::StrCat("errno", err);
  }
}

}  // namespace

std::vector<std::string> ParseProcModules(absl::string_view text) {
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const size_t space = line.find(' ');
    names.emplace_back(line.substr(0, space));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string NodeFact(absl::string_view path, const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return absl::StrCat("node ", OneWord(path), " type=", TypeName(st.st_mode),
                      " rdev=", major(st.st_rdev), ":", minor(st.st_rdev), " uid=", st.st_uid,
                      " gid=", st.st_gid, " mode=", mode);
}

std::string MissingNodeFact(absl::string_view path, int err) {
  return absl::StrCat("node ", OneWord(path), " missing ", ErrnoName(err));
}

std::string StatusFact(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string line = "status";
  for (const auto& [key, value] : fields) absl::StrAppend(&line, " ", OneWord(key), "=", OneWord(value));
  return line;
}

std::string OneWord(absl::string_view text) {
  std::string word(text);
  for (char& c : word) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) c = '_';
  }
  return word.empty() ? "-" : word;
}

std::string StatusValue(const std::vector<std::pair<std::string, std::string>>& fields,
                        absl::string_view key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "";
}

std::string SummaryLine(const std::vector<std::pair<std::string, std::string>>& status,
                        absl::Duration coldplug, size_t modules_loaded) {
  auto value = [&](absl::string_view key) {
    const std::string v = StatusValue(status, key);
    return v.empty() ? std::string("?") : v;
  };
  return absl::StrCat("hotring: settled ", value("received"), " events in ",
                      absl::ToInt64Milliseconds(coldplug), " ms; modules: ", modules_loaded,
                      " loaded; status: received=", value("received"),
                      " handled=", value("handled"), " failed=", value("failed"),
                      " overruns=", value("netlink_overruns"));
}

CpuTicks ParseProcStatCpu(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "cpu ")) continue;
    std::vector<uint64_t> v;
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(word, &n)) return CpuTicks{};
      v.push_back(n);
    }
    if (v.size() < 4) return CpuTicks{};
    v.resize(std::max<size_t>(v.size(), 8), 0);
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    return CpuTicks{.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7], .idle = v[3] + v[4]};
  }
  return CpuTicks{};
}

uint64_t ParseProcPidCpuTicks(absl::string_view text) {
  const size_t paren = text.rfind(')');
  if (paren == absl::string_view::npos) return 0;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(text.substr(paren + 1), ' ', absl::SkipEmpty());
  // fields[0] is the state (field 3 of proc(5)); utime and stime are fields 14 and 15.
  uint64_t utime = 0;
  uint64_t stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return 0;
  }
  return utime + stime;
}

std::string CpuFact(const CpuTicks& start, const CpuTicks& end, uint64_t init_ticks,
                    uint64_t daemon_ticks, uint64_t reactor_ticks, uint64_t ticks_per_second) {
  const auto ms = [&](uint64_t ticks) {
    return ticks_per_second == 0 ? uint64_t{0} : ticks * 1000 / ticks_per_second;
  };
  const uint64_t busy = end.busy >= start.busy ? end.busy - start.busy : 0;
  const uint64_t idle = end.idle >= start.idle ? end.idle - start.idle : 0;
  return absl::StrFormat("cpu busy_ms=%d idle_ms=%d init_ms=%d daemon_ms=%d reactor_ms=%d",
                         ms(busy), ms(idle), ms(init_ticks), ms(daemon_ticks), ms(reactor_ticks));
}

}  // namespace hotring::hotplug::boot

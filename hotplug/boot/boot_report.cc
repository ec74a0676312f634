#include "hotplug/boot/boot_report.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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

}  // namespace hotring::hotplug::boot

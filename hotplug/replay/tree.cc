#include "hotplug/replay/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/devroot/node_placeholder.h"
#include "hotplug/sysfs.h"

namespace hotring::hotplug::replay {
namespace {

// Closes a DIR* (a functor type, since closedir carries attributes a template argument drops).
struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

constexpr size_t kMaxDevEntries = 100'000;
constexpr int kMaxDevDepth = 32;

absl::StatusOr<std::string> ReadLink(const std::string& path) {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof(buffer));
  if (n < 0) return ErrnoStatus(absl::StrCat("readlink(", path, ")"));
  if (static_cast<size_t>(n) == sizeof(buffer)) {
    return absl::OutOfRangeError(absl::StrCat(path, ": link target too long"));
  }
  return std::string(buffer, static_cast<size_t>(n));
}

absl::StatusOr<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&::free)> real(::realpath(path.c_str(), nullptr), &::free);
  if (!real) return ErrnoStatus(absl::StrCat("realpath(", path, ")"));
  return std::string(real.get());
}

absl::Status MakeDirs(const std::string& path) {
  std::string sofar;
  for (const absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    absl::StrAppend(&sofar, "/", part);
    if (::mkdir(sofar.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("mkdir(", sofar, ")"));
    }
  }
  return absl::OkStatus();
}

// A relative link from directory `from_dir` to `to` (both relative to one root, '/'-led).
std::string RelativeTarget(absl::string_view from_dir, absl::string_view to) {
  std::string out;
  for (const absl::string_view part : absl::StrSplit(from_dir, '/', absl::SkipEmpty())) {
    (void)part;
    out += "../";
  }
  out += std::string(to.substr(1));
  return out;
}

absl::Status Link(const std::string& target, const std::string& path) {
  if (::symlink(target.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("symlink(", path, ")"));
  }
  return absl::OkStatus();
}

std::string Dirname(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == absl::string_view::npos ? "/" : std::string(path.substr(0, slash));
}

std::string Basename(absl::string_view path) {
  return std::string(path.substr(path.rfind('/') + 1));
}

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  std::string out;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read(", path, ")"));
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return absl::OutOfRangeError(absl::StrCat(path, ": longer than ", max_bytes, " bytes"));
    }
  }
  return out;
}

absl::Status WriteWholeFile(const std::string& path, absl::string_view content, int mode) {
  const std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  {
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", temp, ")"));
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const absl::Status error = ErrnoStatus(absl::StrCat("write(", temp, ")"));
        ::unlink(temp.c_str());
        return error;
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const absl::Status error = ErrnoStatus(absl::StrCat("rename(", path, ")"));
    ::unlink(temp.c_str());
    return error;
  }
  return absl::OkStatus();
}

absl::StatusOr<RecordResult> RecordMachine(const RecordOptions& options) {
  RecordResult result;
  Recording& rec = result.recording;
  if (!options.kernel.empty()) {
    rec.kernel = options.kernel;
  } else {
    struct utsname uts {};
    if (::uname(&uts) != 0) return ErrnoStatus("uname");
    rec.kernel = uts.release;
  }
  // Loaded modules: the first word of each /proc/modules line.
  absl::StatusOr<std::string> modules =
      ReadWholeFile(absl::StrCat(options.proc_root, "/modules"), 16 << 20);
  if (modules.ok()) {
    for (const absl::string_view line : absl::StrSplit(*modules, '\n', absl::SkipEmpty())) {
      const std::string name(line.substr(0, line.find(' ')));
      if (IsSafeName(name)) rec.loaded_modules.push_back(name);
    }
    std::sort(rec.loaded_modules.begin(), rec.loaded_modules.end());
  } else if (!absl::IsNotFound(modules.status())) {
    result.problems.push_back(std::string(modules.status().message()));
  }
  for (const auto& [file, into] : {std::pair{"passwd", &rec.passwd}, {"group", &rec.group}}) {
    absl::StatusOr<std::string> text =
        ReadWholeFile(absl::StrCat(options.etc_root, "/", file), 4 << 20);
    if (!text.ok()) {
      result.problems.push_back(std::string(text.status().message()));
      continue;
    }
    for (const absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      into->push_back(std::string(line));
    }
  }

  SysfsFilter filter;
  filter.subsystems = false;
  HOTRING_ASSIGN_OR_RETURN(const SysfsScan scan, ScanSysfs(options.sysfs_root, filter));
  for (const SysfsProblem& p : scan.problems) {
    result.problems.push_back(absl::StrCat(p.path, ": ", p.status.message()));
  }
  HOTRING_ASSIGN_OR_RETURN(const std::string real_root, RealPath(options.sysfs_root));
  uint64_t seqnum = 0;
  for (const SysfsEntry& entry : scan.entries) {
    if (!IsSafeDevpath(entry.devpath)) {
      result.problems.push_back(absl::StrCat(entry.devpath, ": not a plain /devices path"));
      continue;
    }
    if (rec.devices.size() == kMaxRecordedDevices) {
      result.problems.push_back("too many devices: the rest is not recorded");
      break;
    }
    const std::string dir = absl::StrCat(options.sysfs_root, entry.devpath);
    RecordedDevice device;
    device.devpath = entry.devpath;
    if (absl::StatusOr<std::string> link = ReadLink(dir + "/subsystem"); link.ok()) {
      const std::string name = Basename(*link);
      const std::string parent = Basename(Dirname(*link));
      if (IsSafeName(name) && (parent == "class" || parent == "bus")) {
        device.subsystem = name;
        device.kind = parent == "class" ? SubsystemKind::kClass : SubsystemKind::kBus;
      }
    }
    for (const char* attribute : {"uevent", "dev", "modalias"}) {
      absl::StatusOr<std::string> content =
          ReadWholeFile(absl::StrCat(dir, "/", attribute), kMaxAttributeBytes);
      if (content.ok()) {
        device.attributes.emplace_back(attribute, std::move(*content));
      } else if (!absl::IsNotFound(content.status())) {
        result.problems.push_back(std::string(content.status().message()));
      }
    }
    if (absl::StatusOr<std::string> driver = RealPath(dir + "/driver"); driver.ok()) {
      if (absl::StartsWith(*driver, real_root + "/")) {
        const std::string relative = driver->substr(real_root.size());
        if (IsSafeDriverPath(relative)) {
          device.driver = relative;
        } else {
          result.problems.push_back(absl::StrCat(dir, "/driver: target ", relative,
                                                 " is not a plain /bus or /module path"));
        }
      }
    }
    absl::StatusOr<Event> event = ReadUeventFile(options.sysfs_root, entry, "add",
                                                 EventSource::kResync);
    if (!event.ok()) {
      if (!absl::IsNotFound(event.status())) {
        result.problems.push_back(absl::StrCat(entry.devpath, ": ", event.status().message()));
      }
      continue;  // vanished while we read it, or a uevent file the daemon would reject
    }
    rec.devices.push_back(std::move(device));
    RecordedEvent env = std::move(event->env);
    env.emplace_back("SEQNUM", absl::StrCat(++seqnum));
    rec.events.push_back(std::move(env));
  }
  return result;
}

absl::Status BuildSysfs(const Recording& recording, const std::string& root) {
  for (const char* top : {"devices", "bus", "class", "module"}) {
    HOTRING_RETURN_IF_ERROR(MakeDirs(absl::StrCat(root, "/", top)));
  }
  for (const RecordedDevice& d : recording.devices) {
    const std::string dir = root + d.devpath;
    HOTRING_RETURN_IF_ERROR(MakeDirs(dir));
    for (const auto& [name, content] : d.attributes) {
      HOTRING_RETURN_IF_ERROR(WriteWholeFile(absl::StrCat(dir, "/", name), content));
    }
    if (d.kind != SubsystemKind::kNone) {
      const std::string subsystem_dir =
          d.kind == SubsystemKind::kClass ? absl::StrCat("/class/", d.subsystem)
                                          : absl::StrCat("/bus/", d.subsystem);
      const std::string members =
          d.kind == SubsystemKind::kClass ? subsystem_dir : subsystem_dir + "/devices";
      HOTRING_RETURN_IF_ERROR(MakeDirs(root + members));
      HOTRING_RETURN_IF_ERROR(
          Link(RelativeTarget(d.devpath, subsystem_dir), dir + "/subsystem"));
      HOTRING_RETURN_IF_ERROR(Link(RelativeTarget(members, d.devpath),
                                   absl::StrCat(root, members, "/", Basename(d.devpath))));
    }
    if (!d.driver.empty()) {
      HOTRING_RETURN_IF_ERROR(MakeDirs(root + d.driver));
      HOTRING_RETURN_IF_ERROR(Link(RelativeTarget(d.devpath, d.driver), dir + "/driver"));
    }
  }
  // Without `loading` the daemon's loader waits for it (30 tries, a second apart), as it must
  // on a board where the kernel makes it a moment after the event.
  for (const FirmwareRequest& request : FirmwareRequests(recording)) {
    const std::string dir = root + request.devpath;
    HOTRING_RETURN_IF_ERROR(MakeDirs(dir));
    for (const char* name : {"/loading", "/data"}) {
      HOTRING_RETURN_IF_ERROR(WriteWholeFile(dir + name, ""));
    }
  }
  return absl::OkStatus();
}

absl::Status StageFirmware(const Recording& recording, const std::string& from,
                           const std::string& to) {
  HOTRING_RETURN_IF_ERROR(MakeDirs(to));
  for (const FirmwareRequest& request : FirmwareRequests(recording)) {
    const absl::string_view name = request.name;
    bool safe = !absl::StartsWith(name, "/");
    for (const absl::string_view part : absl::StrSplit(name, '/')) {
      safe = safe && !part.empty() && part != "." && part != "..";
    }
    if (!safe) continue;
    absl::StatusOr<std::string> content =
        ReadWholeFile(absl::StrCat(from, "/", name), kMaxFirmwareBytes);
    if (!content.ok()) {
      // Unreadable (missing, a directory) is what the daemon would answer "missing" to.
      if (absl::IsOutOfRange(content.status())) return content.status();
      continue;
    }
    const std::string path = absl::StrCat(to, "/", name);
    HOTRING_RETURN_IF_ERROR(MakeDirs(path.substr(0, path.rfind('/'))));
    HOTRING_RETURN_IF_ERROR(WriteWholeFile(path, *content));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FirmwareOutcomeIn(const std::string& root,
                                              const FirmwareRequest& request) {
  const absl::StatusOr<std::string> text =
      ReadWholeFile(absl::StrCat(root, request.devpath, "/loading"), 64);
  if (!text.ok()) return text.status();
  // The loader writes into one open file: "1" then "0" (or "-1"), or "-1" alone.
  const absl::string_view loading = *text;
  if (loading == "10") return std::string("found");
  if (loading == "-1") return std::string("missing");
  if (loading == "1-1") return std::string("failed");
  return std::string("unanswered");
}

absl::Status BuildUsersRoot(const Recording& recording, const std::string& root) {
  HOTRING_RETURN_IF_ERROR(MakeDirs(root + "/etc"));
  auto text = [](const std::vector<std::string>& lines, absl::string_view fallback) {
    if (lines.empty()) return std::string(fallback);
    std::string out;
    for (const std::string& line : lines) absl::StrAppend(&out, line, "\n");
    return out;
  };
  HOTRING_RETURN_IF_ERROR(WriteWholeFile(root + "/etc/passwd",
                                         text(recording.passwd, "root:x:0:0:root:/:/bin/sh\n")));
  return WriteWholeFile(root + "/etc/group", text(recording.group, "root:x:0:\n"));
}

absl::StatusOr<std::vector<DevEntry>> ListDevRoot(const std::string& root, ListOwner self) {
  std::vector<DevEntry> out;
  // (relative directory, depth) still to list.
  std::vector<std::pair<std::string, int>> pending = {{"", 0}};
  while (!pending.empty()) {
    auto [relative, depth] = std::move(pending.back());
    pending.pop_back();
    const std::string dir_path = relative.empty() ? root : absl::StrCat(root, "/", relative);
    std::unique_ptr<DIR, DirCloser> dir(::opendir(dir_path.c_str()));
    if (!dir) return ErrnoStatus(absl::StrCat("opendir(", dir_path, ")"));
    while (const dirent* entry = ::readdir(dir.get())) {
      const absl::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (out.size() == kMaxDevEntries) {
        return absl::OutOfRangeError(
            absl::StrCat(root, ": more than ", kMaxDevEntries, " entries"));
      }
      DevEntry e;
      e.path = relative.empty() ? std::string(name) : absl::StrCat(relative, "/", name);
      const std::string full = absl::StrCat(root, "/", e.path);
      struct stat st {};
      if (::lstat(full.c_str(), &st) != 0) return ErrnoStatus(absl::StrCat("lstat(", full, ")"));
      // A placeholder's owner is the planned one, never ours: only lstat's ids are ours.
      if (!devroot::StatAsNode(::dirfd(dir.get()), entry->d_name, st)) {
        if (st.st_uid == self.uid) st.st_uid = 0;
        if (st.st_gid == self.gid) st.st_gid = 0;
      }
      e.uid = st.st_uid;
      e.gid = st.st_gid;
      e.mode = st.st_mode & 07777;
      switch (st.st_mode & S_IFMT) {
        case S_IFDIR:
          e.type = DevEntry::Type::kDir;
          if (depth + 1 >= kMaxDevDepth) {
            return absl::OutOfRangeError(absl::StrCat(full, ": deeper than ", kMaxDevDepth));
          }
          pending.emplace_back(e.path, depth + 1);
          break;
        case S_IFREG: e.type = DevEntry::Type::kFile; break;
        case S_IFCHR:
        case S_IFBLK:
          e.type = S_ISCHR(st.st_mode) ? DevEntry::Type::kChar : DevEntry::Type::kBlock;
          e.major = major(st.st_rdev);
          e.minor = minor(st.st_rdev);
          break;
        case S_IFLNK: {
          e.type = DevEntry::Type::kLink;
          HOTRING_ASSIGN_OR_RETURN(e.target, ReadLink(full));
          break;
        }
        default: e.type = DevEntry::Type::kOther;
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace hotring::hotplug::replay

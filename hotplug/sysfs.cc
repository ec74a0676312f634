#include "hotplug/sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/log.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/event_parser.h"

namespace hotring::hotplug {
namespace {

// Larger than any uevent file the kernel writes (its env buffer is 2 KiB); a bigger file is
// not a uevent file.
constexpr size_t kMaxUeventFileBytes = 8192;

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using UniqueDir = std::unique_ptr<DIR, DirCloser>;

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

// Collects what a walk found and what went wrong, for one ScanSysfs call.
class Walker {
 public:
  Walker(std::string root, const SysfsFilter& filter) : root_(std::move(root)), filter_(filter) {}

  void ScanSubsystems();
  void ScanDevices();
  SysfsScan Finish();

 private:
  // Names in `dir` (no dot entries). A missing directory is an empty one (sysfs is racy and
  // fake trees are partial); any other failure is a problem.
  std::vector<std::string> List(const std::string& dir);
  bool Exists(const std::string& path) const;
  bool MatchSubsystem(absl::string_view subsystem) const;
  bool MatchSysname(absl::string_view sysname) const;
  bool MatchAttributes(const std::string& dir);
  // Resolves `path` and, if it is an object with a uevent file under the root, adds it.
  void Consider(const std::string& path, SysfsEntryKind kind, absl::string_view subsystem,
                absl::string_view sysname, std::vector<SysfsEntry>& out);
  void Problem(std::string path, absl::Status status) {
    scan_.problems.push_back(SysfsProblem{std::move(path), std::move(status)});
  }

  std::string root_;  // canonical, no trailing '/'
  const SysfsFilter& filter_;
  std::vector<SysfsEntry> subsystems_;
  std::vector<SysfsEntry> devices_;
  SysfsScan scan_;
};

std::vector<std::string> Walker::List(const std::string& dir) {
  std::vector<std::string> names;
  UniqueDir handle(::opendir(dir.c_str()));
  if (handle == nullptr) {
    if (!IsVanishedErrno(errno)) Problem(dir, ErrnoStatus(absl::StrCat("opendir(", dir, ")")));
    return names;
  }
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(handle.get());
    if (entry == nullptr) {
      if (errno != 0 && !IsVanishedErrno(errno)) {
        Problem(dir, ErrnoStatus(absl::StrCat("readdir(", dir, ")")));
      }
      break;
    }
    if (entry->d_name[0] == '.') continue;
    names.emplace_back(entry->d_name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool Walker::Exists(const std::string& path) const {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool GlobMatch(const std::string& pattern, absl::string_view text) {
  return ::fnmatch(pattern.c_str(), std::string(text).c_str(), 0) == 0;
}

bool Walker::MatchSubsystem(absl::string_view subsystem) const {
  for (const std::string& pattern : filter_.subsystem_nomatch) {
    if (GlobMatch(pattern, subsystem)) return false;
  }
  if (filter_.subsystem_match.empty()) return true;
  for (const std::string& pattern : filter_.subsystem_match) {
    if (GlobMatch(pattern, subsystem)) return true;
  }
  return false;
}

bool Walker::MatchSysname(absl::string_view sysname) const {
  if (filter_.sysname_match.empty()) return true;
  for (const std::string& pattern : filter_.sysname_match) {
    if (GlobMatch(pattern, sysname)) return true;
  }
  return false;
}

bool Walker::MatchAttributes(const std::string& dir) {
  for (const SysfsFilter::Attribute& attribute : filter_.attr_match) {
    const std::string path = absl::StrCat(dir, "/", attribute.name);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return false;
    if (!attribute.value.has_value()) continue;
    char buffer[4096];
    ssize_t n;
    do {
      n = ::read(fd.get(), buffer, sizeof(buffer));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return false;  // unreadable (write-only, or the device went away): no match
    absl::string_view value(buffer, static_cast<size_t>(n));
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ' ||
                              value.back() == '\t' || value.back() == '\r')) {
      value.remove_suffix(1);
    }
    if (!GlobMatch(*attribute.value, value)) return false;
  }
  return true;
}

void Walker::Consider(const std::string& path, SysfsEntryKind kind, absl::string_view subsystem,
                      absl::string_view sysname, std::vector<SysfsEntry>& out) {
  if (!MatchSysname(sysname)) return;
  std::unique_ptr<char, FreeDeleter> resolved(::realpath(path.c_str(), nullptr));
  if (resolved == nullptr) {
    if (IsVanishedErrno(errno)) {
      ++scan_.vanished;
    } else {
      Problem(path, ErrnoStatus(absl::StrCat("realpath(", path, ")")));
    }
    return;
  }
  const std::string real(resolved.get());
  if (!absl::StartsWith(real, root_) || real.size() <= root_.size() || real[root_.size()] != '/') {
    Problem(path, absl::FailedPreconditionError(
                      absl::StrCat(path, " resolves to ", real, ", outside the sysfs root")));
    return;
  }
  // Not an object (a plain attribute like class/net/bonding_masters, or a link into nowhere):
  // nothing to trigger.
  if (!Exists(absl::StrCat(real, "/uevent"))) return;
  if (!MatchAttributes(real)) return;
  SysfsEntry entry;
  entry.kind = kind;
  entry.devpath = real.substr(root_.size());
  entry.sysname = std::string(sysname);
  entry.subsystem = std::string(subsystem);
  if (kind == SysfsEntryKind::kDevice) {
    char link[4096];
    const std::string link_path = absl::StrCat(real, "/subsystem");
    const ssize_t n = ::readlink(link_path.c_str(), link, sizeof(link));
    if (n > 0 && static_cast<size_t>(n) < sizeof(link)) {
      const absl::string_view target(link, static_cast<size_t>(n));
      const size_t slash = target.rfind('/');
      entry.subsystem = std::string(slash == absl::string_view::npos ? target
                                                                     : target.substr(slash + 1));
    }
  }
  out.push_back(std::move(entry));
}

void Walker::ScanSubsystems() {
  if (MatchSubsystem("module")) {
    const std::string dir = root_ + "/module";
    for (const std::string& name : List(dir)) {
      Consider(absl::StrCat(dir, "/", name), SysfsEntryKind::kModule, "module", name, subsystems_);
    }
  }
  const std::string base =
      Exists(root_ + "/subsystem") ? root_ + "/subsystem" : root_ + "/bus";
  const bool buses = MatchSubsystem("subsystem");
  const bool drivers = MatchSubsystem("drivers");
  if (!buses && !drivers) return;
  for (const std::string& bus : List(base)) {
    const std::string bus_dir = absl::StrCat(base, "/", bus);
    if (buses) Consider(bus_dir, SysfsEntryKind::kBus, "subsystem", bus, subsystems_);
    if (drivers) {
      const std::string drivers_dir = bus_dir + "/drivers";
      for (const std::string& driver : List(drivers_dir)) {
        Consider(absl::StrCat(drivers_dir, "/", driver), SysfsEntryKind::kDriver, "drivers",
                 driver, subsystems_);
      }
    }
  }
}

void Walker::ScanDevices() {
  const bool unified = Exists(root_ + "/subsystem");
  const std::string bus_base = unified ? root_ + "/subsystem" : root_ + "/bus";
  for (const std::string& bus : List(bus_base)) {
    if (!MatchSubsystem(bus)) continue;
    const std::string dir = absl::StrCat(bus_base, "/", bus, "/devices");
    for (const std::string& name : List(dir)) {
      Consider(absl::StrCat(dir, "/", name), SysfsEntryKind::kDevice, bus, name, devices_);
    }
  }
  if (unified) return;
  const std::string class_base = root_ + "/class";
  for (const std::string& klass : List(class_base)) {
    if (!MatchSubsystem(klass)) continue;
    const std::string dir = absl::StrCat(class_base, "/", klass);
    for (const std::string& name : List(dir)) {
      Consider(absl::StrCat(dir, "/", name), SysfsEntryKind::kDevice, klass, name, devices_);
    }
  }
}

struct DevpathKey {
  bool delayed = false;
  std::vector<std::string> parts;
};

DevpathKey MakeKey(absl::string_view devpath) {
  DevpathKey key;
  // As udevadm: md and dm devices stack on others, so they come after every other device.
  key.delayed = absl::StrContains(devpath, "/block/md") || absl::StrContains(devpath, "/block/dm-");
  key.parts = absl::StrSplit(devpath, '/', absl::SkipEmpty());
  // A sound card's control device comes after the card's other devices: applications take an
  // ACL change on controlC* as the sign that the whole card is ready. "\xff" sorts after any
  // name (std::string compares bytes as unsigned).
  for (size_t i = 2; i < key.parts.size(); ++i) {
    if (key.parts[i - 2] == "sound" && absl::StartsWith(key.parts[i - 1], "card") &&
        absl::StartsWith(key.parts[i], "controlC")) {
      key.parts[i] = absl::StrCat("\xff", key.parts[i]);
    }
  }
  return key;
}

bool KeyBefore(const DevpathKey& a, const DevpathKey& b) {
  if (a.delayed != b.delayed) return !a.delayed;
  return a.parts < b.parts;  // a prefix (a parent) sorts first
}

void SortAndDedup(std::vector<SysfsEntry>& entries) {
  std::vector<std::pair<DevpathKey, SysfsEntry>> keyed;
  keyed.reserve(entries.size());
  for (SysfsEntry& entry : entries) {
    DevpathKey key = MakeKey(entry.devpath);
    keyed.emplace_back(std::move(key), std::move(entry));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return KeyBefore(a.first, b.first);
  });
  entries.clear();
  for (auto& [key, entry] : keyed) {
    // The same device is listed under its bus and its class: keep the first.
    if (!entries.empty() && entries.back().devpath == entry.devpath) continue;
    entries.push_back(std::move(entry));
  }
}

SysfsScan Walker::Finish() {
  SortAndDedup(subsystems_);
  SortAndDedup(devices_);
  scan_.entries = std::move(subsystems_);
  scan_.entries.insert(scan_.entries.end(), std::make_move_iterator(devices_.begin()),
                       std::make_move_iterator(devices_.end()));
  return std::move(scan_);
}

absl::StatusOr<std::string> CanonicalRoot(absl::string_view sysfs_root) {
  const std::string given(sysfs_root.empty() ? kDefaultSysfsRoot : sysfs_root);
  std::unique_ptr<char, FreeDeleter> resolved(::realpath(given.c_str(), nullptr));
  if (resolved == nullptr) return ErrnoStatus(absl::StrCat("sysfs root ", given));
  std::string root(resolved.get());
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) return ErrnoStatus(absl::StrCat("stat(", root, ")"));
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("sysfs root ", given, " is not a directory"));
  }
  bool looks_like_sysfs = false;
  for (const char* dir : {"/bus", "/class", "/subsystem", "/module", "/devices"}) {
    if (::stat((root + dir).c_str(), &st) == 0) looks_like_sysfs = true;
  }
  if (!looks_like_sysfs) {
    return absl::NotFoundError(absl::StrCat("sysfs root ", given,
                                            " has none of bus/, class/, module/, devices/"));
  }
  if (root == "/") root.clear();  // so root + "/bus" is "/bus"
  return root;
}

}  // namespace

bool IsVanishedErrno(int err) {
  return err == ENOENT || err == ENODEV || err == ENOTDIR || err == ESTALE || err == ENXIO;
}

bool DevpathBefore(absl::string_view a, absl::string_view b) {
  return KeyBefore(MakeKey(a), MakeKey(b));
}

absl::StatusOr<SysfsScan> ScanSysfs(absl::string_view sysfs_root, const SysfsFilter& filter) {
  HOTRING_ASSIGN_OR_RETURN(std::string root, CanonicalRoot(sysfs_root));
  Walker walker(std::move(root), filter);
  if (filter.subsystems) walker.ScanSubsystems();
  if (filter.devices) walker.ScanDevices();
  return walker.Finish();
}

std::string UeventPath(absl::string_view sysfs_root, const SysfsEntry& entry) {
  absl::string_view root = sysfs_root.empty() ? kDefaultSysfsRoot : sysfs_root;
  while (absl::EndsWith(root, "/")) root.remove_suffix(1);
  return absl::StrCat(root, entry.devpath, "/uevent");
}

absl::StatusOr<Event> ReadUeventFile(absl::string_view sysfs_root, const SysfsEntry& entry,
                                     absl::string_view action, EventSource source) {
  const std::string path = UeventPath(sysfs_root, entry);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (IsVanishedErrno(err)) return absl::NotFoundError(absl::StrCat(path, ": vanished"));
    return ErrnoStatus(absl::StrCat("open(", path, ")"), err);
  }
  std::string content(kMaxUeventFileBytes + 1, '\0');
  size_t length = 0;
  while (length < content.size()) {
    const ssize_t n = ::read(fd.get(), content.data() + length, content.size() - length);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (IsVanishedErrno(err)) return absl::NotFoundError(absl::StrCat(path, ": vanished"));
      return ErrnoStatus(absl::StrCat("read(", path, ")"), err);
    }
    length += static_cast<size_t>(n);
  }
  if (length > kMaxUeventFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than ", kMaxUeventFileBytes, " bytes, not a uevent file"));
  }
  content.resize(length);
  EnvVars env;
  env.emplace_back("ACTION", std::string(action));
  env.emplace_back("DEVPATH", entry.devpath);
  env.emplace_back("SUBSYSTEM", entry.subsystem);
  for (const absl::string_view line : absl::StrSplit(content, '\n', absl::SkipEmpty())) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": line without '=': ", QuoteForLog(line)));
    }
    env.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  absl::StatusOr<Event> event = EventFromEnv(std::move(env), source);
  if (!event.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", event.status().message()));
  }
  return event;
}

absl::StatusOr<SynthesizedEvents> SynthesizeAddEventsReport(absl::string_view sysfs_root) {
  SysfsFilter filter;
  filter.subsystems = false;
  HOTRING_ASSIGN_OR_RETURN(SysfsScan scan, ScanSysfs(sysfs_root, filter));
  SynthesizedEvents result;
  result.problems = std::move(scan.problems);
  result.vanished = scan.vanished;
  result.events.reserve(scan.entries.size());
  for (const SysfsEntry& entry : scan.entries) {
    absl::StatusOr<Event> event = ReadUeventFile(sysfs_root, entry, "add", EventSource::kResync);
    if (event.ok()) {
      result.events.push_back(std::move(*event));
    } else if (absl::IsNotFound(event.status())) {
      ++result.vanished;
    } else {
      result.problems.push_back(SysfsProblem{UeventPath(sysfs_root, entry), event.status()});
    }
  }
  return result;
}

absl::StatusOr<std::vector<Event>> SynthesizeAddEvents(absl::string_view sysfs_root) {
  HOTRING_ASSIGN_OR_RETURN(SynthesizedEvents result, SynthesizeAddEventsReport(sysfs_root));
  for (const SysfsProblem& problem : result.problems) {
    LogWarning("resync: skipped %s: %s", problem.path, problem.status.ToString());
  }
  return std::move(result.events);
}

}  // namespace hotring::hotplug

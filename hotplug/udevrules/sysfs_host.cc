#include "hotplug/udevrules/sysfs_host.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udevrules {
namespace {

// Reads at most `max_size` bytes of `path`.
absl::Status ReadBounded(const std::string& path, size_t max_size, std::string* out) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  out->clear();
  char buf[4096];
  while (out->size() < max_size) {
    const ssize_t n = ::read(fd.get(), buf, std::min(sizeof(buf), max_size - out->size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read(", path, ")"));
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status WriteWhole(const std::string& path, absl::string_view value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  const ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) return ErrnoStatus(absl::StrCat("write(", path, ")"));
  if (static_cast<size_t>(n) != value.size()) return absl::DataLossError(absl::StrCat(path, ": short write"));
  return absl::OkStatus();
}

}  // namespace

SysfsHost::SysfsHost(Roots roots)
    : roots_(std::move(roots)),
      view_(roots_.sysfs, roots_.sysfs_mounted.has_value() ? *roots_.sysfs_mounted : udev::IsSysfsMount(roots_.sysfs)) {}

std::string SysfsHost::Resolve(absl::string_view path) const {
  if (path == "/sys" || absl::StartsWith(path, "/sys/")) return absl::StrCat(roots_.sysfs, path.substr(4));
  return absl::StrCat(roots_.files, path);
}

bool SysfsHost::ReadAttribute(absl::string_view devpath, absl::string_view name, std::string* out) {
  // The core links read as the last component of their target (ATTR{driver}), as in
  // sd_device; only those: every other attribute is a file (a readlink each would cost).
  if (name == "driver" || name == "subsystem" || name == "module") {
    std::optional<std::string> link = sysfs().LinkName(devpath, name);
    if (!link.has_value()) return false;
    *out = std::move(*link);
    return true;
  }
  std::optional<std::string> value = sysfs().Attribute(devpath, name);
  if (!value.has_value()) return false;
  *out = std::move(*value);
  return true;
}

bool SysfsHost::Subsystem(absl::string_view devpath, std::string* out) {
  std::optional<std::string> s = sysfs().LinkName(devpath, "subsystem");
  if (!s.has_value()) return false;
  *out = std::move(*s);
  return true;
}

bool SysfsHost::Driver(absl::string_view devpath, std::string* out) {
  std::optional<std::string> d = sysfs().LinkName(devpath, "driver");
  if (!d.has_value()) return false;
  *out = std::move(*d);
  return true;
}

bool SysfsHost::Parent(absl::string_view devpath, std::string* out) {
  std::optional<std::string> p = udev::ParentOf(sysfs(), devpath);
  if (!p.has_value()) return false;
  *out = std::move(*p);
  return true;
}

bool SysfsHost::FindDevice(absl::string_view subsystem, absl::string_view sysname, std::string* out) {
  std::string name(sysname);
  for (char& c : name) c = c == '/' ? '!' : c;
  std::vector<std::string> candidates;
  if (subsystem == "subsystem") {
    candidates = {absl::StrCat("/bus/", name), absl::StrCat("/class/", name)};
  } else if (subsystem == "module") {
    candidates = {absl::StrCat("/module/", name)};
  } else if (subsystem == "drivers") {
    const size_t colon = name.find(':');
    if (colon == std::string::npos) return false;
    candidates = {absl::StrCat("/bus/", name.substr(0, colon), "/drivers/", name.substr(colon + 1))};
  } else {
    candidates = {absl::StrCat("/bus/", subsystem, "/devices/", name),
                  absl::StrCat("/class/", subsystem, "/", name),
                  absl::StrCat("/firmware/", subsystem, "/", name)};
  }
  char resolved[PATH_MAX];
  char root[PATH_MAX];
  if (::realpath(roots_.sysfs.c_str(), root) == nullptr) return false;
  const absl::string_view root_view(root);
  for (const std::string& candidate : candidates) {
    const std::string full = absl::StrCat(roots_.sysfs, candidate);
    if (::realpath(full.c_str(), resolved) == nullptr) continue;
    absl::string_view r(resolved);
    if (!absl::ConsumePrefix(&r, root_view) || r.empty() || r[0] != '/') continue;
    *out = std::string(r);
    return true;
  }
  return false;
}

std::optional<uint32_t> SysfsHost::FileMode(absl::string_view path) {
  struct stat st;
  if (::stat(Resolve(path).c_str(), &st) != 0) return std::nullopt;
  return st.st_mode;
}

bool SysfsHost::ListDirectory(absl::string_view path, std::vector<std::string>* names) {
  names->clear();
  absl::string_view rel = path;
  if (absl::ConsumePrefix(&rel, "/sys")) {
    struct stat st;
    if (::stat(Resolve(path).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
    *names = view_.List(rel.empty() ? "/" : rel);
    return true;
  }
  udev::DirSysfsView files(roots_.files.empty() ? "/" : roots_.files);
  *names = files.List(path);
  return !names->empty();
}

absl::Status SysfsHost::WriteAttribute(absl::string_view path, absl::string_view value) {
  return WriteWhole(Resolve(path), value);
}

absl::Status SysfsHost::ReadFile(absl::string_view path, size_t max_size, std::string* out) {
  return ReadBounded(Resolve(path), max_size, out);
}

bool SysfsHost::ReadSysctl(absl::string_view name, std::string* out) {
  if (absl::StrContains(name, "..")) return false;
  return ReadBounded(absl::StrCat(roots_.proc_sys, "/", name), 65536, out).ok();
}

absl::Status SysfsHost::WriteSysctl(absl::string_view name, absl::string_view value) {
  // systemd's sysctl_write refuses names that are not normalized paths.
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrCat("invalid sysctl name '", name, "'"));
    }
  }
  // With a newline, as systemd's sysctl_write writes it.
  return WriteWhole(absl::StrCat(roots_.proc_sys, "/", name), absl::StrCat(value, "\n"));
}

bool SysfsHost::DeviceProperties(absl::string_view devpath, OwnedProperties* out) {
  out->clear();
  // The uevent file makes a device; read through ReadAttribute, which a host may cache.
  std::string uevent;
  if (!ReadAttribute(devpath, "uevent", &uevent)) return false;
  out->emplace_back("DEVPATH", std::string(devpath));
  std::string value;
  if (Subsystem(devpath, &value)) out->emplace_back("SUBSYSTEM", value);
  {
    for (absl::string_view line : absl::StrSplit(uevent, '\n', absl::SkipEmpty())) {
      const size_t eq = line.find('=');
      if (eq == absl::string_view::npos) continue;
      const absl::string_view key = line.substr(0, eq);
      std::string v(line.substr(eq + 1));
      if (key == "DEVNAME" && !v.empty() && v[0] != '/') v = absl::StrCat("/dev/", v);
      out->emplace_back(std::string(key), std::move(v));
    }
  }
  DatabaseProperties(devpath, out);
  return true;
}

std::string SysfsHost::DeviceId(absl::string_view devpath) {
  std::string uevent;
  if (!ReadAttribute(devpath, "uevent", &uevent)) return "";
  std::string major, minor, ifindex;
  for (absl::string_view line : absl::StrSplit(uevent, '\n')) {
    if (absl::ConsumePrefix(&line, "MAJOR=")) major = std::string(line);
    if (absl::ConsumePrefix(&line, "MINOR=")) minor = std::string(line);
    if (absl::ConsumePrefix(&line, "IFINDEX=")) ifindex = std::string(line);
  }
  std::string subsystem;
  (void)Subsystem(devpath, &subsystem);
  if (!major.empty() && !minor.empty()) {
    return absl::StrCat(subsystem == "block" ? "b" : "c", major, ":", minor);
  }
  if (!ifindex.empty()) return absl::StrCat("n", ifindex);
  const size_t slash = devpath.rfind('/');
  return absl::StrCat("+", subsystem, ":", devpath.substr(slash + 1));
}

}  // namespace hotring::hotplug::udevrules

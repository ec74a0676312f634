#include "hotplug/cli/udevadm/device.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udevadm {
namespace {

// sysfs attributes are at most a page; uevent files and database entries a few KiB.
constexpr size_t kMaxFile = 1 << 20;

bool PathStartsWith(absl::string_view path, absl::string_view prefix) {
  // Component-wise, as systemd's path_startswith: "/bus" starts with "/bus/".
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (!absl::StartsWith(path, prefix)) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::optional<std::string> LinkBasename(const std::string& path) {
  char buf[PATH_MAX];
  const ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  absl::string_view target(buf, static_cast<size_t>(n));
  const size_t slash = target.rfind('/');
  return std::string(slash == absl::string_view::npos ? target : target.substr(slash + 1));
}

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::optional<std::string> ReadSmallFile(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return std::nullopt;
  std::string out;
  char buf[4096];
  while (out.size() < kMaxFile) {
    const ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int PathCompare(absl::string_view a, absl::string_view b) {
  // Absolute paths first, then component by component; a prefix sorts first.
  const bool abs_a = !a.empty() && a[0] == '/';
  const bool abs_b = !b.empty() && b[0] == '/';
  if (abs_a != abs_b) return abs_a ? -1 : 1;
  for (;;) {
    while (!a.empty() && a[0] == '/') a.remove_prefix(1);
    while (!b.empty() && b[0] == '/') b.remove_prefix(1);
    if (a.empty() || b.empty()) return a.empty() == b.empty() ? 0 : (a.empty() ? -1 : 1);
    const size_t ja = std::min(a.find('/'), a.size());
    const size_t jb = std::min(b.find('/'), b.size());
    const int c = a.substr(0, ja).compare(b.substr(0, jb));
    if (c != 0) return c < 0 ? -1 : 1;
    a.remove_prefix(ja);
    b.remove_prefix(jb);
  }
}

Roots Roots::FromEnvironment() {
  Roots roots;
  const char* root = getenv("HOTRING_UDEVADM_ROOT");
  if (root != nullptr && root[0] != '\0') {
    roots.sys = absl::StrCat(root, "/sys");
    roots.run = absl::StrCat(root, "/run/udev");
    roots.dev = absl::StrCat(root, "/dev");
  }
  return roots;
}

std::string Roots::Map(absl::string_view logical) const {
  if (PathStartsWith(logical, "/sys")) return absl::StrCat(sys, logical.substr(4));
  if (PathStartsWith(logical, "/run/udev")) return absl::StrCat(run, logical.substr(9));
  if (PathStartsWith(logical, "/dev")) return absl::StrCat(dev, logical.substr(4));
  return std::string(logical);
}

UdevDevice::UdevDevice(Roots roots, std::string syspath)
    : roots_(std::move(roots)), syspath_(std::move(syspath)) {
  SetProperty("DEVPATH", devpath());
}

absl::StatusOr<std::unique_ptr<UdevDevice>> UdevDevice::FromSyspath(const Roots& roots,
                                                                    absl::string_view syspath,
                                                                    bool verify) {
  if (!absl::StartsWith(syspath, "/sys/")) {
    return absl::InvalidArgumentError(absl::StrCat("'", syspath, "' is not below /sys"));
  }
  std::string logical(syspath);
  if (verify) {
    char real_root[PATH_MAX];
    char real[PATH_MAX];
    if (realpath(roots.sys.c_str(), real_root) == nullptr) return ErrnoStatus(absl::StrCat("realpath ", roots.sys));
    if (realpath(roots.Map(syspath).c_str(), real) == nullptr) {
      if (errno == ENOENT || errno == ENOTDIR) return absl::NotFoundError("No such device");
      return ErrnoStatus(absl::StrCat("realpath ", syspath));
    }
    absl::string_view r(real);
    if (!PathStartsWith(r, real_root)) return absl::NotFoundError("No such device");
    logical = absl::StrCat("/sys", r.substr(strlen(real_root)));
    if (absl::StartsWith(logical, "/sys/devices/") || logical == "/sys/devices") {
      if (access(roots.Map(absl::StrCat(logical, "/uevent")).c_str(), F_OK) != 0) {
        return absl::NotFoundError("No such device");
      }
    } else if (!IsDir(roots.Map(logical))) {
      return absl::NotFoundError("No such device");
    }
  }
  while (logical.size() > 5 && logical.back() == '/') logical.pop_back();
  if (logical.size() <= 5) return absl::NotFoundError("No such device");
  return std::unique_ptr<UdevDevice>(new UdevDevice(roots, std::move(logical)));
}

absl::StatusOr<std::unique_ptr<UdevDevice>> UdevDevice::FromDevnum(const Roots& roots, char type,
                                                                   dev_t devnum) {
  return FromSyspath(roots, absl::StrCat("/sys/dev/", type == 'b' ? "block" : "char", "/",
                                         major(devnum), ":", minor(devnum)));
}

absl::StatusOr<std::unique_ptr<UdevDevice>> UdevDevice::FromSubsystemSysname(
    const Roots& roots, absl::string_view subsystem, absl::string_view sysname) {
  auto try_path = [&](const std::string& p) -> std::unique_ptr<UdevDevice> {
    if (access(roots.Map(p).c_str(), F_OK) != 0) return nullptr;
    absl::StatusOr<std::unique_ptr<UdevDevice>> d = FromSyspath(roots, p);
    return d.ok() ? std::move(*d) : nullptr;
  };
  std::unique_ptr<UdevDevice> found;
  if (subsystem == "subsystem") {
    for (const char* base : {"/sys/subsystem/", "/sys/bus/", "/sys/class/"}) {
      if ((found = try_path(absl::StrCat(base, sysname)))) return found;
    }
  } else if (subsystem == "module") {
    if ((found = try_path(absl::StrCat("/sys/module/", sysname)))) return found;
  } else if (subsystem == "drivers") {
    const size_t colon = sysname.find(':');
    if (colon != absl::string_view::npos && colon + 1 < sysname.size()) {
      for (const char* base : {"/sys/subsystem/", "/sys/bus/"}) {
        if ((found = try_path(absl::StrCat(base, sysname.substr(0, colon), "/drivers/",
                                           sysname.substr(colon + 1))))) {
          return found;
        }
      }
    }
  }
  std::string name(sysname);
  std::replace(name.begin(), name.end(), '/', '!');
  for (const char* base : {"/sys/subsystem/", "/sys/bus/"}) {
    if ((found = try_path(absl::StrCat(base, subsystem, "/devices/", name)))) return found;
  }
  if ((found = try_path(absl::StrCat("/sys/class/", subsystem, "/", name)))) return found;
  if ((found = try_path(absl::StrCat("/sys/firmware/", subsystem, "/", sysname)))) return found;
  return absl::NotFoundError("No such device");
}

absl::StatusOr<std::unique_ptr<UdevDevice>> UdevDevice::FromDeviceId(const Roots& roots,
                                                                     absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("empty device id");
  if (id[0] == 'b' || id[0] == 'c') {
    std::vector<absl::string_view> parts = absl::StrSplit(id.substr(1), ':');
    unsigned maj = 0, min = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &maj) || !absl::SimpleAtoi(parts[1], &min)) {
      return absl::InvalidArgumentError("bad device id");
    }
    return FromDevnum(roots, id[0], makedev(maj, min));
  }
  if (id[0] == '+') {
    const size_t colon = id.find(':');
    if (colon == absl::string_view::npos) return absl::InvalidArgumentError("bad device id");
    return FromSubsystemSysname(roots, id.substr(1, colon - 1), id.substr(colon + 1));
  }
  if (id[0] == 'n') {
    // An interface index names an interface only through rtnetlink: look for it in class/net.
    int ifindex = 0;
    if (!absl::SimpleAtoi(id.substr(1), &ifindex) || ifindex <= 0) {
      return absl::InvalidArgumentError("bad device id");
    }
    DIR* dir = opendir(roots.Map("/sys/class/net").c_str());
    if (dir == nullptr) return absl::NotFoundError("No such device");
    std::optional<std::string> name;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      std::optional<std::string> v =
          ReadSmallFile(roots.Map(absl::StrCat("/sys/class/net/", e->d_name, "/ifindex")));
      int n = 0;
      if (v && absl::SimpleAtoi(absl::StripAsciiWhitespace(*v), &n) && n == ifindex) {
        name = e->d_name;
        break;
      }
    }
    closedir(dir);
    if (!name) return absl::NotFoundError("No such device");
    return FromSyspath(roots, absl::StrCat("/sys/class/net/", *name));
  }
  return absl::InvalidArgumentError("bad device id");
}

void UdevDevice::SetProperty(absl::string_view key, std::optional<absl::string_view> value) {
  auto it = std::find_if(properties_.begin(), properties_.end(),
                         [&](const auto& p) { return p.first == key; });
  if (!value) {
    if (it != properties_.end()) properties_.erase(it);
    return;
  }
  if (it != properties_.end()) {
    it->second = std::string(*value);
  } else {
    properties_.emplace_back(std::string(key), std::string(*value));
  }
}

std::string UdevDevice::Sysname() const {
  std::string name(syspath_.substr(syspath_.rfind('/') + 1));
  std::replace(name.begin(), name.end(), '!', '/');
  return name;
}

std::optional<std::string> UdevDevice::Sysnum() const {
  const std::string name = Sysname();
  size_t i = name.size();
  while (i > 0 && absl::ascii_isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  // A name of digits only has no number (sd-device: the number must follow something).
  if (i == name.size() || i == 0) return std::nullopt;
  return name.substr(i);
}

std::optional<std::string> UdevDevice::Subsystem() {
  if (!subsystem_set_) {
    subsystem_set_ = true;
    const absl::string_view dp = devpath();
    if (std::optional<std::string> link = LinkBasename(roots_.Map(syspath_ + "/subsystem"))) {
      subsystem_ = *link;
    } else if (absl::StartsWith(dp, "/module/") && dp.size() > 8) {
      subsystem_ = "module";
    } else if (syspath_.find("/drivers/") != std::string::npos ||
               absl::EndsWith(syspath_, "/drivers")) {
      // The bus is the component before the last "drivers".
      std::vector<absl::string_view> parts = absl::StrSplit(dp, '/', absl::SkipEmpty());
      for (size_t i = parts.size(); i-- > 1;) {
        if (parts[i] == "drivers") {
          driver_subsystem_ = std::string(parts[i - 1]);
          subsystem_ = "drivers";
          break;
        }
      }
    } else if ((absl::StartsWith(dp, "/class/") && dp.size() > 7) ||
               (absl::StartsWith(dp, "/bus/") && dp.size() > 5)) {
      subsystem_ = "subsystem";
    }
    if (subsystem_) SetProperty("SUBSYSTEM", *subsystem_);
  }
  return subsystem_;
}

void UdevDevice::ReadUevent() {
  if (uevent_loaded_) return;
  uevent_loaded_ = true;
  std::optional<std::string> text = ReadSmallFile(roots_.Map(syspath_ + "/uevent"));
  if (!text) return;
  std::optional<std::string> major, minor;
  for (absl::string_view line : absl::StrSplit(*text, absl::ByAnyChar("\n\r"), absl::SkipEmpty())) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key = line.substr(0, eq);
    const absl::string_view value = line.substr(eq + 1);
    if (key == "DEVTYPE") {
      devtype_ = std::string(value);
      SetProperty(key, value);
    } else if (key == "IFINDEX") {
      int n = 0;
      if (absl::SimpleAtoi(value, &n) && n > 0) {
        ifindex_ = n;
        SetProperty(key, value);
      }
    } else if (key == "DEVNAME") {
      devname_ = absl::StartsWith(value, "/") ? std::string(value) : absl::StrCat("/dev/", value);
      SetProperty(key, *devname_);
    } else if (key == "DEVMODE") {
      unsigned mode = 0;
      if (absl::SimpleAtoi(value, &mode) && mode <= 07777) SetProperty(key, value);
    } else if (key == "DISKSEQ") {
      uint64_t seq = 0;
      if (absl::SimpleAtoi(value, &seq) && seq > 0) {
        diskseq_ = seq;
        SetProperty(key, value);
      }
    } else if (key == "MAJOR") {
      major = std::string(value);
    } else if (key == "MINOR") {
      minor = std::string(value);
    } else {
      SetProperty(key, value);
    }
  }
  unsigned maj = 0, min = 0;
  if (major && absl::SimpleAtoi(*major, &maj) && maj > 0 &&
      (!minor || absl::SimpleAtoi(*minor, &min))) {
    SetProperty("MAJOR", *major);
    if (minor) SetProperty("MINOR", *minor);
    devnum_ = std::make_pair(maj, min);
  }
}

std::optional<std::string> UdevDevice::DevType() {
  ReadUevent();
  return devtype_;
}
std::optional<std::pair<unsigned, unsigned>> UdevDevice::Devnum() {
  ReadUevent();
  return devnum_;
}
std::optional<int> UdevDevice::Ifindex() {
  ReadUevent();
  if (ifindex_ <= 0) return std::nullopt;
  return ifindex_;
}
std::optional<std::string> UdevDevice::DevName() {
  ReadUevent();
  return devname_;
}
std::optional<uint64_t> UdevDevice::Diskseq() {
  ReadUevent();
  if (diskseq_ == 0) return std::nullopt;
  return diskseq_;
}

std::optional<std::string> UdevDevice::Driver() {
  if (!driver_set_) {
    driver_set_ = true;
    driver_ = LinkBasename(roots_.Map(syspath_ + "/driver"));
    SetProperty("DRIVER", driver_ ? std::optional<absl::string_view>(*driver_) : std::nullopt);
  }
  return driver_;
}

std::optional<std::string> UdevDevice::DeviceId() {
  if (device_id_) return device_id_;
  const std::optional<std::string> subsystem = Subsystem();
  if (!subsystem) return std::nullopt;
  std::string id;
  if (std::optional<std::pair<unsigned, unsigned>> num = Devnum()) {
    id = absl::StrCat(*subsystem == "block" ? "b" : "c", num->first, ":", num->second);
  } else if (std::optional<int> ifindex = Ifindex()) {
    id = absl::StrCat("n", *ifindex);
  } else {
    const std::string base = syspath_.substr(syspath_.rfind('/') + 1);
    id = *subsystem == "drivers" ? absl::StrCat("+drivers:", driver_subsystem_, ":", base)
                                 : absl::StrCat("+", *subsystem, ":", base);
  }
  if (id.find('/') != std::string::npos || id.size() > 255) return std::nullopt;
  device_id_ = id;
  return device_id_;
}

void UdevDevice::ReadDatabase() {
  if (db_loaded_) return;
  const std::optional<std::string> id = DeviceId();
  if (!id) return;
  std::optional<std::string> text = ReadSmallFile(roots_.Map(absl::StrCat("/run/udev/data/", *id)));
  if (!text) return;
  initialized_ = true;
  db_loaded_ = true;
  for (absl::string_view line : absl::StrSplit(*text, absl::ByAnyChar("\n\r"), absl::SkipEmpty())) {
    if (line.size() < 2 || line[1] != ':') continue;
    const char key = line[0];
    const absl::string_view value = line.substr(2);
    // sd-device takes a line only with a value after the colon.
    if (value.empty()) continue;
    switch (key) {
      case 'G':
      case 'Q': {
        if (value.find(':') != absl::string_view::npos || value.find(' ') != absl::string_view::npos) {
          break;
        }
        auto add = [&](std::vector<std::string>& set) {
          if (std::find(set.begin(), set.end(), value) == set.end()) set.emplace_back(value);
        };
        add(tags_);
        if (key == 'Q') add(current_tags_);
        tags_outdated_ = true;
        break;
      }
      case 'S': {
        std::string link = absl::StrCat("/dev/", value);
        if (std::find(devlinks_.begin(), devlinks_.end(), link) == devlinks_.end()) {
          devlinks_.push_back(std::move(link));
        }
        devlinks_outdated_ = true;
        break;
      }
      case 'E': {
        const size_t eq = value.find('=');
        if (eq == absl::string_view::npos) break;
        const absl::string_view v = value.substr(eq + 1);
        SetProperty(value.substr(0, eq), v.empty() ? std::nullopt : std::optional<absl::string_view>(v));
        break;
      }
      case 'I': {
        uint64_t t = 0;
        if (absl::SimpleAtoi(value, &t)) {
          usec_initialized_ = t;
          SetProperty("USEC_INITIALIZED", absl::StrCat(t));
        }
        break;
      }
      case 'L': {
        int p = 0;
        if (absl::SimpleAtoi(value, &p)) devlink_priority_ = p;
        break;
      }
      case 'V': {
        unsigned v = 0;
        if (absl::SimpleAtoi(value, &v)) database_version_ = v;
        break;
      }
      default:
        break;
    }
  }
}

bool UdevDevice::IsInitialized() {
  ReadDatabase();
  return initialized_;
}

std::optional<uint64_t> UdevDevice::UsecInitialized() {
  ReadDatabase();
  if (!initialized_ || usec_initialized_ == 0) return std::nullopt;
  return usec_initialized_;
}

int UdevDevice::DevlinkPriority() {
  ReadDatabase();
  return devlink_priority_;
}

const std::vector<std::string>& UdevDevice::Devlinks() {
  ReadDatabase();
  return devlinks_;
}

const std::vector<std::string>& UdevDevice::Tags() {
  ReadDatabase();
  return tags_;
}

const std::vector<std::string>& UdevDevice::CurrentTags() {
  ReadDatabase();
  // Before database version 1 every tag was a current one.
  return database_version_ >= 1 ? current_tags_ : tags_;
}

bool UdevDevice::HasTag(absl::string_view tag) {
  const std::vector<std::string>& tags = Tags();
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

bool UdevDevice::PrepareProperties() {
  ReadUevent();
  // sd-device gives up when the device has no id (no subsystem): no properties at all.
  if (!DeviceId()) return false;
  ReadDatabase();
  if (devlinks_outdated_) {
    devlinks_outdated_ = false;
    if (!devlinks_.empty()) {
      std::string joined;
      for (const std::string& l : devlinks_) absl::StrAppend(&joined, joined.empty() ? "" : " ", l);
      SetProperty("DEVLINKS", joined);
    }
  }
  if (tags_outdated_) {
    tags_outdated_ = false;
    auto join = [](const std::vector<std::string>& set) {
      std::string s;
      for (const std::string& t : set) absl::StrAppend(&s, ":", t);
      if (!s.empty()) s += ":";
      return s;
    };
    if (!tags_.empty()) SetProperty("TAGS", join(tags_));
    if (!current_tags_.empty()) SetProperty("CURRENT_TAGS", join(current_tags_));
  }
  return true;
}

const std::vector<std::pair<std::string, std::string>>& UdevDevice::Properties() {
  static const std::vector<std::pair<std::string, std::string>> kNone;
  if (!PrepareProperties()) return kNone;
  return properties_;
}

std::optional<std::string> UdevDevice::Property(absl::string_view key) {
  for (const auto& [k, v] : Properties()) {
    if (k == key) return v;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> UdevDevice::SysattrValue(absl::string_view name) {
  const std::string path = roots_.Map(absl::StrCat(syspath_, "/", name));
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return absl::NotFoundError("no such attribute");
  if (S_ISLNK(st.st_mode)) {
    if (name == "driver" || name == "subsystem" || name == "module") {
      std::optional<std::string> base = LinkBasename(path);
      if (base) return *base;
    }
    return absl::FailedPreconditionError("a link");
  }
  if (S_ISDIR(st.st_mode)) return absl::FailedPreconditionError("a directory");
  if ((st.st_mode & S_IRUSR) == 0) return absl::PermissionDeniedError("not readable");
  std::optional<std::string> value = ReadSmallFile(path);
  if (!value) {
    if (errno == EACCES || errno == EPERM) return absl::PermissionDeniedError("not readable");
    return absl::FailedPreconditionError("unreadable");
  }
  while (!value->empty() && (value->back() == '\n' || value->back() == '\r')) value->pop_back();
  return *std::move(value);
}

void UdevDevice::ListSysattrs(const std::string& subdir, std::vector<std::string>* out) const {
  const std::string base = subdir.empty() ? syspath_ : absl::StrCat(syspath_, "/", subdir);
  if (!subdir.empty() && access(roots_.Map(base + "/uevent").c_str(), F_OK) == 0) return;
  DIR* dir = opendir(roots_.Map(base).c_str());
  if (dir == nullptr) return;
  std::vector<std::pair<std::string, unsigned char>> entries;
  while (dirent* e = readdir(dir)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    entries.emplace_back(e->d_name, e->d_type);
  }
  closedir(dir);
  for (const auto& [name, type] : entries) {
    const std::string rel = subdir.empty() ? name : absl::StrCat(subdir, "/", name);
    if (type == DT_DIR) {
      ListSysattrs(rel, out);
      continue;
    }
    if (type != DT_LNK && type != DT_REG) continue;
    struct stat st;
    if (lstat(roots_.Map(absl::StrCat(syspath_, "/", rel)).c_str(), &st) != 0) continue;
    if ((st.st_mode & S_IRUSR) == 0) continue;
    out->push_back(rel);
  }
}

std::vector<std::string> UdevDevice::SysattrNames() {
  std::vector<std::string> names;
  ListSysattrs("", &names);
  return names;
}

UdevDevice* UdevDevice::Parent() {
  if (!parent_set_) {
    parent_set_ = true;
    std::string path = syspath_;
    for (;;) {
      const size_t slash = path.rfind('/');
      // Stop at "/sys/x": "/sys" itself is no device.
      if (slash == std::string::npos || slash < 4 + 2) break;
      path.resize(slash);
      absl::StatusOr<std::unique_ptr<UdevDevice>> d = FromSyspath(roots_, path);
      if (d.ok()) {
        parent_ = std::move(*d);
        break;
      }
    }
  }
  return parent_.get();
}

}  // namespace hotring::hotplug::udevadm

#include "hotplug/rules/mdev_scan.h"

#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::rules {
namespace {

// Busybox reads `dev` and `uevent` into a 128-byte scratch area (SCRATCH_SIZE - 1 bytes).
constexpr size_t kScratch = 127;

// Reads at most `cap` bytes of `name` beneath `dir_fd` into `out` (NUL-terminated, so `out`
// holds cap + 1); false when it cannot be opened or read (a directory reads as EISDIR).
bool ReadInto(int dir_fd, const char* name, char* out, size_t cap, size_t& len) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return false;
  ssize_t n;
  do {
    n = ::read(fd.get(), out, cap);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return false;
  len = static_cast<size_t>(n);
  out[len] = '\0';
  return true;
}

bool ReadSmall(int dir_fd, const char* name, char (&out)[kScratch + 1], size_t& len) {
  return ReadInto(dir_fd, name, out, kScratch, len);
}

// "MAJOR=8\nMINOR=1\n..." -> "8:1": the number the kernel also writes into `dev` (both come
// from the device's dev_t). Empty when either line is missing.
std::string NumberFromUevent(absl::string_view uevent) {
  absl::string_view major;
  absl::string_view minor;
  while (!uevent.empty()) {
    const size_t newline = uevent.find('\n');
    const absl::string_view line = uevent.substr(0, newline);
    if (line.substr(0, 6) == "MAJOR=") major = line.substr(6);
    if (line.substr(0, 6) == "MINOR=") minor = line.substr(6);
    if (newline == absl::string_view::npos) break;
    uevent.remove_prefix(newline + 1);
  }
  if (major.empty() || minor.empty()) return std::string();
  return absl::StrCat(major, ":", minor, "\n");
}

// The walk's state: one path buffer grown and cut as it descends (no allocation per entry).
class Walker {
 public:
  Walker(std::string root, absl::FunctionRef<void(const ScannedDevice&)> on_device)
      : path_(std::move(root)), on_device_(on_device) {}

  // recursive_action(ACTION_RECURSE | ACTION_FOLLOWLINKS) with mdev's dirAction: a directory
  // at depth >= 3 is skipped; a non-directory named "dev" at any depth is a device (its parent
  // directory). `fd` is the open directory `path_` at `depth`.
  void Directory(int fd, int depth) {
    if (depth >= 3) return;
    DIR* dir = ::fdopendir(::dup(fd));
    if (dir == nullptr) return;
    const size_t base = path_.size();
    while (const struct dirent* entry = ::readdir(dir)) {
      const char* name = entry->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      path_.resize(base);
      path_.push_back('/');
      path_.append(name);
      const int child_depth = depth + 1;
      if (child_depth == 2) {
        // Depth 3 holds the device's files, where only a file named "dev" matters and
        // subdirectories are skipped: so "dev" is read directly instead of listing the rest.
        // /sys/dev/<char|block>/<M:m>: the device's files are read through the entry's link
        // ("M:m/dev", "M:m/uevent", "M:m/subsystem" relative to this directory) rather than
        // by opening the device directory: two system calls fewer per device.
        DeviceAt(fd, base, name);
        continue;
      }
      UniqueFd child(::openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (child.valid()) {
        Directory(child.get(), child_depth);
      } else if (errno == ENOTDIR && std::strcmp(name, "dev") == 0) {
        Device(fd, base);
      }
    }
    path_.resize(base);
    ::closedir(dir);
  }

 private:
  // The entry `name` of the directory `dir_fd` (path_ = "<that directory>/<name>", the
  // directory's path being path_[0, base)), at depth 2: a device directory when "name/dev" can
  // be read, a file named "dev" when "name" is not a directory.
  void DeviceAt(int dir_fd, size_t base, const char* name) {
    const size_t name_len = std::strlen(name);
    if (name_len + sizeof("/subsystem") > sizeof(rel_)) return;
    std::memcpy(rel_, name, name_len);
    rel_[name_len] = '/';
    char* const leaf = rel_ + name_len + 1;
    // The whole uevent first: on a kernel's sysfs its MAJOR and MINOR are what `dev` says, which
    // saves reading `dev` (three system calls a device). A tree whose uevent lacks them (busybox's
    // own test trees have no uevent at all) is read as busybox reads it: `dev` decides.
    std::memcpy(leaf, "uevent", sizeof("uevent"));
    size_t uevent_len = 0;
    if (!ReadInto(dir_fd, rel_, uevent_, sizeof(uevent_) - 1, uevent_len)) {
      if (errno == ENOTDIR) {
        // Not a directory: only a file named "dev" counts, for the directory being listed.
        if (std::strcmp(name, "dev") == 0) Device(dir_fd, base);
        return;
      }
      uevent_len = 0;
    }
    const absl::string_view uevent(uevent_, uevent_len);
    const std::string number = NumberFromUevent(uevent);
    if (!number.empty()) {
      Report(dir_fd, rel_, leaf, base + 1 + name_len, number, uevent);
      return;
    }
    std::memcpy(leaf, "dev", sizeof("dev"));
    char dev[kScratch + 1];
    size_t dev_len = 0;
    if (!ReadSmall(dir_fd, rel_, dev, dev_len)) return;  // no `dev` (or a directory): no device
    Report(dir_fd, rel_, leaf, base + 1 + name_len, absl::string_view(dev, dev_len), uevent);
  }

  // A file named "dev" directly in the directory `dir_fd` being listed (path_ = "<dir>/dev",
  // and the directory's path is path_[0, dir_len)).
  void Device(int dir_fd, size_t dir_len) {
    char dev[kScratch + 1];
    size_t dev_len = 0;
    if (!ReadSmall(dir_fd, "dev", dev, dev_len)) dev_len = 0;
    rel_[0] = '\0';
    size_t uevent_len = 0;
    if (!ReadInto(dir_fd, "uevent", uevent_, sizeof(uevent_) - 1, uevent_len)) uevent_len = 0;
    Report(dir_fd, rel_, rel_, dir_len, absl::string_view(dev, dev_len),
           absl::string_view(uevent_, uevent_len));
  }

  // The device whose directory is path_[0, dir_len); its files are `prefix` + file name
  // relative to `dir_fd`, written at `leaf` (prefix is "" or "M:m/"). `uevent` was read.
  void Report(int dir_fd, char* prefix, char* leaf, size_t dir_len, absl::string_view dev,
              absl::string_view uevent) {
    ScannedDevice device;
    device.path = absl::string_view(path_).substr(0, dir_len);
    device.dev = dev;
    char link[4096];
    std::memcpy(leaf, "subsystem", sizeof("subsystem"));
    const ssize_t n = ::readlinkat(dir_fd, prefix, link, sizeof(link) - 1);
    if (n > 0) device.subsystem = LastComponent(absl::string_view(link, static_cast<size_t>(n)));
    // DevnameFromUevent looks at the first 127 bytes only, as busybox reads them.
    const std::optional<absl::string_view> devname = DevnameFromUevent(uevent);
    device.name = devname ? *devname : LastComponent(device.path);
    on_device_(device);
  }

  char uevent_[4096];
  char rel_[NAME_MAX + sizeof("/subsystem") + 1];
  std::string path_;
  absl::FunctionRef<void(const ScannedDevice&)> on_device_;
};

}  // namespace

absl::string_view LastComponent(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

std::optional<absl::string_view> DevnameFromUevent(absl::string_view uevent) {
  uevent = uevent.substr(0, kScratch);
  constexpr absl::string_view kKey = "\nDEVNAME=";
  const size_t at = uevent.find(kKey);
  if (at == absl::string_view::npos) return std::nullopt;
  absl::string_view value = uevent.substr(at + kKey.size());
  const size_t newline = value.find('\n');
  if (newline != absl::string_view::npos) value = value.substr(0, newline);
  return value;
}

absl::Status ScanSysDev(const std::string& sys_dev,
                        absl::FunctionRef<void(const ScannedDevice&)> on_device) {
  UniqueFd fd(::open(sys_dev.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", sys_dev, ")"));
  Walker walker(sys_dev, on_device);
  walker.Directory(fd.get(), 0);
  return absl::OkStatus();
}

SysfsDeviceFiles ReadSysfsDevice(const std::string& dir, bool read_dev, bool read_uevent) {
  SysfsDeviceFiles files;
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return files;
  char buf[kScratch + 1];
  size_t len = 0;
  if (read_dev && ReadSmall(fd.get(), "dev", buf, len)) files.dev.assign(buf, len);
  if (read_uevent && ReadSmall(fd.get(), "uevent", buf, len)) files.uevent.assign(buf, len);
  return files;
}

}  // namespace hotring::hotplug::rules

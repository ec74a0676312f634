#include "hotplug/udevrules/watches.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "hotplug/devroot/dev_root.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::hotplug::udevrules {
namespace {

constexpr char kWatchDir[] = "watch";
constexpr char kOldWatchDir[] = "watch.old";

std::optional<std::string> ReadLinkAt(int dir, const std::string& name) {
  char buf[256];
  const ssize_t n = ::readlinkat(dir, name.c_str(), buf, sizeof(buf));
  if (n < 0 || static_cast<size_t>(n) >= sizeof(buf)) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

UniqueFd OpenDir(int parent, const char* name) {
  return UniqueFd(::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Every name in directory `dir` but "." and "..".
std::vector<std::string> Names(int dir) {
  std::vector<std::string> names;
  const int copy = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return names;
  DIR* d = ::fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return names;
  }
  while (const dirent* e = ::readdir(d)) {
    const absl::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

// rm -r of a directory that holds only symlinks (the watch records).
void RemoveRecords(int parent, const char* name) {
  UniqueFd dir = OpenDir(parent, name);
  if (!dir.valid()) return;
  for (const std::string& entry : Names(dir.get())) (void)::unlinkat(dir.get(), entry.c_str(), 0);
  (void)::unlinkat(parent, name, AT_REMOVEDIR);
}

struct DeviceNumber {
  bool block = false;
  std::string numbers;  // "MAJ:MIN"
};

// "b8:0" / "c13:64"; nullopt for ids of devices without a node ("n3", "+pci:...").
std::optional<DeviceNumber> ParseNodeId(absl::string_view id) {
  if (id.size() < 4 || (id[0] != 'b' && id[0] != 'c')) return std::nullopt;
  const absl::string_view numbers = id.substr(1);
  const size_t colon = numbers.find(':');
  uint32_t major = 0;
  uint32_t minor = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(numbers.substr(0, colon), &major) ||
      !absl::SimpleAtoi(numbers.substr(colon + 1), &minor)) {
    return std::nullopt;
  }
  return DeviceNumber{.block = id[0] == 'b', .numbers = std::string(numbers)};
}

// The devpath ("/devices/...") of node device `id`, through SYSFS/dev/{block,char}/MAJ:MIN;
// nullopt when the device is gone.
std::optional<std::string> DevpathOf(const std::string& sysfs_root, const DeviceNumber& number) {
  const std::string link = absl::StrCat(sysfs_root, "/dev/", number.block ? "block/" : "char/", number.numbers);
  char buf[4096];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf));
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return std::nullopt;
  const absl::string_view target(buf, static_cast<size_t>(n));
  const size_t devices = target.find("/devices/");
  if (devices == absl::string_view::npos) return std::nullopt;
  return std::string(target.substr(devices));
}

absl::Status WriteChange(const std::string& sysfs_root, absl::string_view devpath) {
  const std::string path = absl::StrCat(sysfs_root, devpath, "/uevent");
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  constexpr absl::string_view kChange = "change";
  if (::write(fd.get(), kChange.data(), kChange.size()) != static_cast<ssize_t>(kChange.size())) {
    return ErrnoStatus(absl::StrCat("write(", path, ")"));
  }
  return absl::OkStatus();
}

// BLKRRPART on the disk's node, as udevd: only when nobody holds the node's lock.
absl::Status RereadPartitionTable(const std::string& node) {
  UniqueFd fd(::open(node.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", node, ")"));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return ErrnoStatus(absl::StrCat("flock(", node, ")"));
  if (::ioctl(fd.get(), BLKRRPART, 0) != 0) return ErrnoStatus(absl::StrCat("BLKRRPART(", node, ")"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Watches>> Watches::Open(const std::string& run_dir, std::string dev_root) {
  UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify.valid()) return ErrnoStatus("inotify_init1");
  UniqueFd dir(::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return ErrnoStatus(absl::StrCat("open(", run_dir, ")"));
  return std::unique_ptr<Watches>(new Watches(std::move(inotify), std::move(dir), std::move(dev_root)));
}

int Watches::Clear(int watch_dir, absl::string_view id) {
  const std::string id_name(id);
  int wd = -1;
  if (const std::optional<std::string> number = ReadLinkAt(watch_dir, id_name); number.has_value()) {
    int n = -1;
    // The number's record must name this device: otherwise the number is another's now.
    if (absl::SimpleAtoi(*number, &n) && n >= 0 && ReadLinkAt(watch_dir, *number) == id_name) {
      (void)::unlinkat(watch_dir, number->c_str(), 0);
      wd = n;
    }
  } else if (errno == ENOENT) {
    return -1;
  }
  (void)::unlinkat(watch_dir, id_name.c_str(), 0);
  return wd;
}

void Watches::End(absl::string_view id) {
  {
    // Most devices have none; the others' records are read, and removed, beneath the directory.
    std::lock_guard<std::mutex> lock(mutex_);
    if (recorded_.erase(id) == 0) return;
  }
  UniqueFd dir = OpenDir(run_dir_.get(), kWatchDir);
  if (!dir.valid()) return;
  const int wd = Clear(dir.get(), id);
  if (wd >= 0) (void)::inotify_rm_watch(inotify_.get(), wd);
}

absl::Status Watches::Begin(absl::string_view id, absl::string_view devname) {
  if (!devroot::IsSafeRelativePath(devname)) {
    return absl::InvalidArgumentError(absl::StrCat("node name '", devname, "' is not beneath the dev root"));
  }
  if (::mkdirat(run_dir_.get(), kWatchDir, 0755) != 0 && errno != EEXIST) return ErrnoStatus("mkdir(watch)");
  UniqueFd dir = OpenDir(run_dir_.get(), kWatchDir);
  if (!dir.valid()) return ErrnoStatus("open(watch)");
  (void)Clear(dir.get(), id);
  const std::string node = absl::StrCat(dev_root_, "/", devname);
  const int wd = ::inotify_add_watch(inotify_.get(), node.c_str(), IN_CLOSE_WRITE);
  if (wd < 0) return ErrnoStatus(absl::StrCat("inotify_add_watch(", node, ")"));
  const std::string id_name(id);
  const std::string number = absl::StrCat(wd);
  absl::Status status;
  if (::symlinkat(number.c_str(), dir.get(), id_name.c_str()) != 0) {
    status = ErrnoStatus(absl::StrCat("symlink(watch/", id_name, ")"));
  } else if (::symlinkat(id_name.c_str(), dir.get(), number.c_str()) != 0) {
    // The number was another device's, whose event has not dropped it yet.
    status = ErrnoStatus(absl::StrCat("symlink(watch/", number, ")"));
    (void)::unlinkat(dir.get(), id_name.c_str(), 0);
  }
  if (!status.ok()) {
    (void)::inotify_rm_watch(inotify_.get(), wd);
    return status;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  recorded_.insert(id_name);
  return status;
}

std::string Watches::WatchedDevice(int wd) const {
  return ReadLinkAt(run_dir_.get(), absl::StrCat(kWatchDir, "/", wd)).value_or("");
}

std::vector<int> Watches::TakeClosed() {
  std::vector<int> closed;
  alignas(struct inotify_event) char buf[4096];
  for (;;) {
    const ssize_t n = ::read(inotify_.get(), buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: nothing more for now
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(struct inotify_event)) <= n;) {
      struct inotify_event e;
      std::memcpy(&e, buf + at, sizeof(e));
      if ((e.mask & IN_CLOSE_WRITE) != 0 && e.wd >= 0) closed.push_back(e.wd);
      at += static_cast<ssize_t>(sizeof(e) + e.len);
    }
  }
  return closed;
}

size_t Watches::Restore(const std::string& sysfs_root) {
  RemoveRecords(run_dir_.get(), kOldWatchDir);
  if (::renameat(run_dir_.get(), kWatchDir, run_dir_.get(), kOldWatchDir) != 0) return 0;
  size_t restored = 0;
  const udev::DirSysfsView view(sysfs_root);
  if (UniqueFd old = OpenDir(run_dir_.get(), kOldWatchDir); old.valid()) {
    for (const std::string& name : Names(old.get())) {
      int wd = 0;
      if (!absl::SimpleAtoi(name, &wd)) continue;  // the number -> id records name each device once
      const std::optional<std::string> id = ReadLinkAt(old.get(), name);
      if (!id.has_value()) continue;
      const std::optional<DeviceNumber> number = ParseNodeId(*id);
      if (!number.has_value()) continue;
      const std::optional<std::string> devpath = DevpathOf(sysfs_root, *number);
      if (!devpath.has_value()) continue;  // gone since
      const std::optional<std::string> devname = udev::UeventValue(view, *devpath, "DEVNAME");
      if (devname.has_value() && Begin(*id, *devname).ok()) ++restored;
    }
  }
  RemoveRecords(run_dir_.get(), kOldWatchDir);
  return restored;
}

ChangeReport SynthesizeChange(const std::string& sysfs_root, const std::string& dev_root, absl::string_view id) {
  ChangeReport report;
  const std::optional<DeviceNumber> number = ParseNodeId(id);
  if (!number.has_value()) {
    report.log.push_back(absl::StrCat("watch of '", id, "': not a device node's id"));
    return report;
  }
  const std::optional<std::string> devpath = DevpathOf(sysfs_root, *number);
  if (!devpath.has_value()) return report;  // removed just after the close
  const auto change = [&](absl::string_view path) {
    if (const absl::Status s = WriteChange(sysfs_root, path); s.ok()) {
      ++report.changes;
    } else {
      report.log.push_back(std::string(s.message()));
    }
  };
  const udev::DirSysfsView view(sysfs_root);
  const absl::string_view sysname = absl::string_view(*devpath).substr(devpath->rfind('/') + 1);
  if (!number->block || absl::StartsWith(sysname, "dm-") || udev::DevTypeOf(view, *devpath) != "disk") {
    change(*devpath);
    return report;
  }
  const std::optional<std::string> devname = udev::UeventValue(view, *devpath, "DEVNAME");
  absl::Status reread = absl::NotFoundError("no DEVNAME");
  if (devname.has_value() && devroot::IsSafeRelativePath(*devname)) {
    reread = RereadPartitionTable(absl::StrCat(dev_root, "/", *devname));
  }
  if (!reread.ok()) report.log.push_back(absl::StrCat("re-reading the partition table: ", reread.message()));
  std::vector<std::string> partitions;
  for (const std::string& name : view.List(*devpath)) {
    const std::string child = absl::StrCat(*devpath, "/", name);
    if (absl::StartsWith(name, sysname) && view.IsDevice(child) && udev::DevTypeOf(view, child) == "partition") {
      partitions.push_back(child);
    }
  }
  std::sort(partitions.begin(), partitions.end());
  // The kernel sent a change for the disk and remove/add for its partitions itself.
  if (reread.ok() && !partitions.empty()) {
    report.reread = true;
    return report;
  }
  change(*devpath);
  for (const std::string& partition : partitions) change(partition);
  return report;
}

}  // namespace hotring::hotplug::udevrules

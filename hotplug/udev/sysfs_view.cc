#include "hotplug/udev/sysfs_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udev {
namespace {

constexpr size_t kMaxAttribute = 65536;
// statfs's f_type of sysfs (linux/magic.h).
constexpr decltype(statfs::f_type) kSysfsMagic = 0x62656572;
// One read asks for at most a page (x86's; a larger page only returns more).
constexpr size_t kReadSize = 4096;

// A devpath or attribute name must not climb out of the tree: sysfs names never hold "..".
bool SafeComponentPath(absl::string_view path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return false;
  }
  return true;
}

// What `shapes` kept of `devpath` (Kept: DeviceShapes::Uevent or ::Subsystem) when it keeps it
// (`shapes` not null), else `read()`, kept with Keep (a read that raced with a Forget is not).
template <typename Kept, typename Keep, typename Read>
std::optional<std::string> KeptOrRead(DeviceShapes* shapes, absl::string_view devpath, Kept kept, Keep keep,
                                      Read read) {
  if (shapes == nullptr) return read();
  if (std::optional<std::optional<std::string>> answer = (shapes->*kept)(devpath); answer.has_value()) {
    return *std::move(answer);
  }
  const uint64_t generation = shapes->generation();
  std::optional<std::string> value = read();
  (shapes->*keep)(devpath, value, generation);
  return value;
}

}  // namespace

bool IsSysfsMount(const std::string& root) {
  struct statfs fs;
  return ::statfs(root.empty() ? "/" : root.c_str(), &fs) == 0 && fs.f_type == kSysfsMagic;
}

DirSysfsView::DirSysfsView(std::string root) : root_(std::move(root)), sysfs_(IsSysfsMount(root_)) {}

std::optional<std::string> DirSysfsView::Attribute(absl::string_view devpath,
                                                   absl::string_view name) const {
  if (!SafeComponentPath(devpath) || !SafeComponentPath(name)) return std::nullopt;
  const std::string path = absl::StrCat(root_, devpath, "/", name);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return std::nullopt;
  // Only a regular file is an attribute. A directory fails its read (EISDIR), and sysfs holds
  // nothing else but symlinks, so the type is asked only of what reads as empty in a tree that
  // is not sysfs (a FIFO in a test's tree): one system call less for every attribute read, and
  // for an empty one on sysfs (the uevent file of /devices/system/memory and other bus roots).
  std::string out(kReadSize, '\0');
  size_t got = 0;
  while (got < kMaxAttribute) {
    if (got == out.size()) out.resize(std::min(out.size() * 2, kMaxAttribute));
    const size_t want = std::min(out.size() - got, kReadSize);
    const ssize_t n = ::read(fd.get(), out.data() + got, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    got += static_cast<size_t>(n);
    // A read that does not fill what it asked for ends the file, as systemd's read_virtual_file
    // takes it: sysfs returns an attribute's whole text in its first read, and a binary
    // attribute at most a page per read, which is all a read here asks for. It saves the read
    // that would return 0, one per attribute.
    if (static_cast<size_t>(n) < want) break;
  }
  if (got == 0 && !sysfs_) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  }
  out.resize(got);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::optional<std::string> DirSysfsView::LinkName(absl::string_view devpath,
                                                  absl::string_view name) const {
  if (!SafeComponentPath(devpath) || !SafeComponentPath(name)) return std::nullopt;
  const std::string path = absl::StrCat(root_, devpath, "/", name);
  char target[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof(target));
  if (n <= 0) return std::nullopt;
  absl::string_view t(target, static_cast<size_t>(n));
  const size_t slash = t.rfind('/');
  if (slash != absl::string_view::npos) t.remove_prefix(slash + 1);
  if (t.empty()) return std::nullopt;
  return std::string(t);
}

bool DirSysfsView::IsDevice(absl::string_view devpath) const {
  if (!SafeComponentPath(devpath)) return false;
  const std::string path = absl::StrCat(root_, devpath, "/uevent");
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> DirSysfsView::List(absl::string_view path) const {
  std::vector<std::string> out;
  if (!SafeComponentPath(path)) return out;
  const std::string dir = absl::StrCat(root_, path);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    out.emplace_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

std::optional<std::string> CachingSysfsView::Attribute(absl::string_view devpath,
                                                       absl::string_view name) const {
  std::string key = absl::StrCat(devpath, "\n", name);
  auto it = attributes_.find(key);
  if (it == attributes_.end()) {
    std::optional<std::string> value =
        KeptOrRead(name == "uevent" ? shapes_ : nullptr, devpath, &DeviceShapes::Uevent, &DeviceShapes::KeepUevent,
                   [&] { return base_.Attribute(devpath, name); });
    it = attributes_.emplace(std::move(key), std::move(value)).first;
  }
  return it->second;
}

std::optional<std::string> CachingSysfsView::LinkName(absl::string_view devpath,
                                                      absl::string_view name) const {
  std::string key = absl::StrCat(devpath, "\n", name);
  auto it = links_.find(key);
  if (it == links_.end()) {
    std::optional<std::string> link =
        KeptOrRead(name == "subsystem" ? shapes_ : nullptr, devpath, &DeviceShapes::Subsystem,
                   &DeviceShapes::KeepSubsystem, [&] { return base_.LinkName(devpath, name); });
    it = links_.emplace(std::move(key), std::move(link)).first;
  }
  return it->second;
}

bool CachingSysfsView::IsDevice(absl::string_view devpath) const {
  auto it = devices_.find(devpath);
  if (it == devices_.end()) {
    std::optional<bool> device = shapes_ != nullptr ? shapes_->IsDevice(devpath) : std::nullopt;
    if (!device.has_value()) {
      const uint64_t generation = shapes_ != nullptr ? shapes_->generation() : 0;
      device = base_.IsDevice(devpath);
      if (shapes_ != nullptr) shapes_->KeepIsDevice(devpath, *device, generation);
    }
    it = devices_.emplace(std::string(devpath), *device).first;
  }
  return it->second;
}

std::optional<bool> DeviceShapes::IsDevice(absl::string_view devpath) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = shapes_.find(devpath);
  if (it == shapes_.end() || it->second.device < 0) return std::nullopt;
  return it->second.device > 0;
}

std::optional<std::optional<std::string>> DeviceShapes::Subsystem(absl::string_view devpath) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = shapes_.find(devpath);
  if (it == shapes_.end() || !it->second.subsystem_known) return std::nullopt;
  return it->second.subsystem;
}

std::optional<std::optional<std::string>> DeviceShapes::Uevent(absl::string_view devpath) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = shapes_.find(devpath);
  if (it == shapes_.end() || !it->second.uevent_known) return std::nullopt;
  return it->second.uevent;
}

DeviceShapes::Shape& DeviceShapes::EntryLocked(absl::string_view devpath) {
  auto it = shapes_.find(devpath);
  if (it != shapes_.end()) return it->second;
  if (shapes_.size() >= max_entries_) shapes_.clear();
  return shapes_.emplace(std::string(devpath), Shape()).first->second;
}

uint64_t DeviceShapes::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

void DeviceShapes::KeepIsDevice(absl::string_view devpath, bool device, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation != generation_) return;
  EntryLocked(devpath).device = device ? 1 : 0;
}

void DeviceShapes::KeepSubsystem(absl::string_view devpath, const std::optional<std::string>& subsystem,
                                 uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation != generation_) return;
  Shape& shape = EntryLocked(devpath);
  shape.subsystem_known = true;
  shape.subsystem = subsystem;
}

void DeviceShapes::KeepUevent(absl::string_view devpath, const std::optional<std::string>& uevent,
                              uint64_t generation) {
  if (uevent.has_value() && uevent->size() > kMaxUevent) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation != generation_) return;
  Shape& shape = EntryLocked(devpath);
  shape.uevent_known = true;
  shape.uevent = uevent;
}

void DeviceShapes::ForgetUevent(absl::string_view devpath) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++generation_;  // a read of it may be on its way in
  if (auto it = shapes_.find(devpath); it != shapes_.end()) {
    it->second.uevent_known = false;
    it->second.uevent.reset();
  }
}

void DeviceShapes::Forget(absl::string_view devpath) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++generation_;  // also when nothing is kept: an answer may be on its way in
  if (shapes_.empty()) return;
  // The device ("/a/b") and what is beneath it ("/a/b/..."; not "/a/bc", which sorts between).
  if (auto it = shapes_.find(devpath); it != shapes_.end()) shapes_.erase(it);
  const std::string below = absl::StrCat(devpath, "/");
  const std::string after = absl::StrCat(devpath, "0");  // '0' follows '/'
  shapes_.erase(shapes_.lower_bound(below), shapes_.lower_bound(after));
}

void DeviceShapes::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++generation_;
  shapes_.clear();
}

size_t DeviceShapes::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shapes_.size();
}

std::vector<std::string> CachingSysfsView::List(absl::string_view path) const { return base_.List(path); }

void CachingSysfsView::Clear() {
  attributes_.clear();
  links_.clear();
  devices_.clear();
}

std::string SubsystemOf(const SysfsView& view, absl::string_view devpath) {
  return view.LinkName(devpath, "subsystem").value_or("");
}

std::optional<std::string> UeventValue(const SysfsView& view, absl::string_view devpath,
                                       absl::string_view key) {
  const std::optional<std::string> uevent = view.Attribute(devpath, "uevent");
  if (!uevent.has_value()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*uevent, '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, "=")) {
      return std::string(line);
    }
  }
  return std::nullopt;
}

std::string DevTypeOf(const SysfsView& view, absl::string_view devpath) {
  return UeventValue(view, devpath, "DEVTYPE").value_or("");
}

std::optional<std::string> ParentOf(const SysfsView& view, absl::string_view devpath) {
  absl::string_view p = devpath;
  while (true) {
    const size_t slash = p.rfind('/');
    if (slash == absl::string_view::npos || slash == 0) return std::nullopt;
    p = p.substr(0, slash);
    if (p == "/devices") return std::nullopt;
    if (view.IsDevice(p)) return std::string(p);
  }
}

std::optional<std::string> ParentWith(const SysfsView& view, absl::string_view devpath,
                                      absl::string_view subsystem, absl::string_view devtype) {
  std::optional<std::string> p = ParentOf(view, devpath);
  while (p.has_value()) {
    if (SubsystemOf(view, *p) == subsystem &&
        (devtype.empty() || DevTypeOf(view, *p) == devtype)) {
      return p;
    }
    p = ParentOf(view, *p);
  }
  return std::nullopt;
}

std::string SysnameOf(absl::string_view devpath) {
  const size_t slash = devpath.rfind('/');
  std::string name(slash == absl::string_view::npos ? devpath : devpath.substr(slash + 1));
  for (char& c : name) {
    if (c == '!') c = '/';
  }
  return name;
}

std::string SysnumOf(absl::string_view devpath) {
  const std::string name = SysnameOf(devpath);
  size_t i = name.size();
  while (i > 0 && absl::ascii_isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  return name.substr(i);
}

}  // namespace hotring::hotplug::udev

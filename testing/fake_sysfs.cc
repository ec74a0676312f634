#include "testing/fake_sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::testing {
namespace {

int RemoveOne(const char* path, const struct stat*, int, FTW*) {
  return ::remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

absl::Status RemoveTree(const std::string& path) {
  if (::nftw(path.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("remove ", path));
  }
  return absl::OkStatus();
}

size_t Depth(absl::string_view relative) {
  size_t depth = 0;
  for (const absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    (void)part;
    ++depth;
  }
  return depth;
}

// "../" repeated so that a link `depth` directories below the root reaches the root.
std::string UpTo(size_t depth) {
  std::string up;
  for (size_t i = 0; i < depth; ++i) up += "../";
  return up;
}

absl::Status CheckName(absl::string_view what, absl::string_view name) {
  if (name.empty() || absl::StrContains(name, '/') || name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("bad ", what, " name '", name, "'"));
  }
  return absl::OkStatus();
}

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

std::vector<std::string> ListNames(const std::string& dir) {
  std::vector<std::string> names;
  std::unique_ptr<DIR, DirCloser> handle(::opendir(dir.c_str()));
  if (handle == nullptr) return names;
  while (const dirent* entry = ::readdir(handle.get())) {
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  }
  return names;
}

std::optional<std::string> Resolve(const std::string& path) {
  struct FreeDeleter {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeDeleter> resolved(::realpath(path.c_str(), nullptr));
  if (resolved == nullptr) return std::nullopt;
  return std::string(resolved.get());
}

}  // namespace

std::string FormatUeventFile(const std::vector<std::pair<std::string, std::string>>& vars) {
  std::string out;
  for (const auto& [key, value] : vars) absl::StrAppend(&out, key, "=", value, "\n");
  return out;
}

absl::StatusOr<FakeSysfs> FakeSysfs::Create() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                     "/fake_sysfs.XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) return ErrnoStatus("mkdtemp(" + pattern + ")");
  FakeSysfs sysfs(pattern);
  for (const char* dir : {"devices", "bus", "class", "module"}) {
    HOTRING_RETURN_IF_ERROR(sysfs.MakeDirs(dir));
  }
  return sysfs;
}

FakeSysfs& FakeSysfs::operator=(FakeSysfs&& other) noexcept {
  if (this != &other) {
    if (!root_.empty()) (void)RemoveTree(root_);
    root_ = std::exchange(other.root_, std::string());
  }
  return *this;
}

FakeSysfs::~FakeSysfs() {
  if (!root_.empty()) (void)RemoveTree(root_);
}

std::string FakeSysfs::Path(absl::string_view relative) const {
  absl::ConsumePrefix(&relative, "/");
  return absl::StrCat(root_, "/", relative);
}

std::string FakeSysfs::UeventPath(absl::string_view devpath) const {
  return Path(absl::StrCat(devpath, "/uevent"));
}

absl::Status FakeSysfs::MakeDirs(absl::string_view relative) {
  std::string path = root_;
  for (const absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    absl::StrAppend(&path, "/", part);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("mkdir(", path, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status FakeSysfs::WriteFile(absl::string_view relative, absl::string_view content) {
  const size_t slash = relative.rfind('/');
  if (slash != absl::string_view::npos) {
    HOTRING_RETURN_IF_ERROR(MakeDirs(relative.substr(0, slash)));
  }
  const std::string path = Path(relative);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("write(", path, ")"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status FakeSysfs::Symlink(absl::string_view target, absl::string_view relative_link) {
  const std::string link = Path(relative_link);
  ::unlink(link.c_str());
  if (::symlink(std::string(target).c_str(), link.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("symlink(", target, ", ", link, ")"));
  }
  return absl::OkStatus();
}

absl::Status FakeSysfs::AddBus(absl::string_view name) {
  HOTRING_RETURN_IF_ERROR(CheckName("bus", name));
  HOTRING_RETURN_IF_ERROR(MakeDirs(absl::StrCat("bus/", name, "/devices")));
  HOTRING_RETURN_IF_ERROR(MakeDirs(absl::StrCat("bus/", name, "/drivers")));
  return WriteFile(absl::StrCat("bus/", name, "/uevent"), "");
}

absl::Status FakeSysfs::AddDriver(absl::string_view bus, absl::string_view name) {
  HOTRING_RETURN_IF_ERROR(CheckName("driver", name));
  HOTRING_RETURN_IF_ERROR(AddBus(bus));
  return WriteFile(absl::StrCat("bus/", bus, "/drivers/", name, "/uevent"), "");
}

absl::Status FakeSysfs::AddModule(absl::string_view name) {
  HOTRING_RETURN_IF_ERROR(CheckName("module", name));
  return WriteFile(absl::StrCat("module/", name, "/uevent"), "");
}

absl::Status FakeSysfs::AddDevice(const Device& device) {
  const absl::string_view devpath = device.devpath;
  if (!absl::StartsWith(devpath, "/devices/") || absl::EndsWith(devpath, "/") ||
      absl::StrContains(devpath, "//") || absl::StrContains(devpath, "/../") ||
      absl::StrContains(devpath, "/./")) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake device path must be a canonical /devices/... path: '", devpath, "'"));
  }
  const absl::string_view sysname = devpath.substr(devpath.rfind('/') + 1);
  HOTRING_RETURN_IF_ERROR(MakeDirs(devpath));
  HOTRING_RETURN_IF_ERROR(WriteFile(absl::StrCat(devpath, "/uevent"),
                                    FormatUeventFile(device.uevent)));
  for (const auto& [name, content] : device.attributes) {
    HOTRING_RETURN_IF_ERROR(CheckName("attribute", name));
    HOTRING_RETURN_IF_ERROR(WriteFile(absl::StrCat(devpath, "/", name), content));
  }
  if (device.subsystem.empty()) return absl::OkStatus();
  HOTRING_RETURN_IF_ERROR(CheckName("subsystem", device.subsystem));
  // Relative links, as the kernel makes them, so the tree can be moved or bind-mounted.
  const std::string to_root_from_device = UpTo(Depth(devpath));
  std::string subsystem_dir;
  std::string link;
  std::string link_target;
  switch (device.kind) {
    case Kind::kBus:
      HOTRING_RETURN_IF_ERROR(AddBus(device.subsystem));
      subsystem_dir = absl::StrCat("bus/", device.subsystem);
      link = absl::StrCat(subsystem_dir, "/devices/", sysname);
      link_target = absl::StrCat(UpTo(3), devpath.substr(1));
      break;
    case Kind::kClass:
      subsystem_dir = absl::StrCat("class/", device.subsystem);
      HOTRING_RETURN_IF_ERROR(MakeDirs(subsystem_dir));
      link = absl::StrCat(subsystem_dir, "/", sysname);
      link_target = absl::StrCat(UpTo(2), devpath.substr(1));
      break;
  }
  HOTRING_RETURN_IF_ERROR(Symlink(link_target, link));
  return Symlink(absl::StrCat(to_root_from_device, subsystem_dir),
                 absl::StrCat(devpath, "/subsystem"));
}

absl::Status FakeSysfs::RemoveDevice(absl::string_view devpath) {
  const std::string device_dir = Path(devpath);
  const std::optional<std::string> device_real = Resolve(device_dir);
  if (!device_real.has_value()) return absl::NotFoundError(absl::StrCat("no fake device ", devpath));
  // Links in bus/*/devices and class/* that point at the device (or below it) go too, as the
  // kernel removes them; a dangling one would look like a device vanishing mid-walk instead.
  std::vector<std::string> link_dirs;
  for (const std::string& bus : ListNames(Path("bus"))) {
    link_dirs.push_back(absl::StrCat(Path("bus"), "/", bus, "/devices"));
  }
  for (const std::string& klass : ListNames(Path("class"))) {
    link_dirs.push_back(absl::StrCat(Path("class"), "/", klass));
  }
  for (const std::string& dir : link_dirs) {
    for (const std::string& name : ListNames(dir)) {
      const std::string link = absl::StrCat(dir, "/", name);
      const std::optional<std::string> target = Resolve(link);
      if (target.has_value() &&
          (*target == *device_real || absl::StartsWith(*target, *device_real + "/"))) {
        ::unlink(link.c_str());
      }
    }
  }
  return RemoveTree(device_dir);
}

absl::Status FakeSysfs::BreakUevent(absl::string_view devpath, UeventFault fault) {
  const std::string path = UeventPath(devpath);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("unlink(", path, ")"));
  }
  switch (fault) {
    case UeventFault::kUnreadableAndUnwritable:
      if (::mkdir(path.c_str(), 0755) != 0) return ErrnoStatus(absl::StrCat("mkdir(", path, ")"));
      return absl::OkStatus();
    case UeventFault::kWriteFails:
      if (::symlink("/dev/full", path.c_str()) != 0) {
        return ErrnoStatus(absl::StrCat("symlink(/dev/full, ", path, ")"));
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown uevent fault");
}

absl::StatusOr<std::string> FakeSysfs::ReadFile(absl::string_view relative) const {
  const std::string path = Path(relative);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("read(", path, ")"));
    }
    content.append(buffer, static_cast<size_t>(n));
  }
  return content;
}

absl::StatusOr<std::string> FakeSysfs::ReadUevent(absl::string_view devpath) const {
  return ReadFile(absl::StrCat(devpath, "/uevent"));
}

std::string KernelBitmap(absl::string_view words64) {
  if (sizeof(unsigned long) == 8) return std::string(words64);
  std::vector<std::string> out;
  bool leading = true;
  for (absl::string_view token : absl::StrSplit(words64, ' ', absl::SkipEmpty())) {
    uint64_t word = 0;
    if (!absl::SimpleHexAtoi(token, &word)) {
      out.emplace_back(token);
    } else if (leading && (word >> 32) == 0) {
      out.push_back(absl::StrCat(absl::Hex(word & 0xffffffffu)));
    } else {
      out.push_back(absl::StrCat(absl::Hex(word >> 32)));
      out.push_back(absl::StrCat(absl::Hex(word & 0xffffffffu)));
    }
    leading = false;
  }
  return absl::StrJoin(out, " ");
}

}  // namespace hotring::testing

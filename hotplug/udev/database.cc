#include "hotplug/udev/database.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::hotplug::udev {
namespace {

// Directory `name` beneath `parent`, made first when `create` and it is not there; never
// through a symlink. Opened before any mkdir: the directory is there for every write but the
// first, and a mkdir that fails with EEXIST costs as much as the open. `shown`: its path, for
// errors.
absl::StatusOr<UniqueFd> OpenDirBeneath(int parent, const std::string& name, bool create,
                                        const std::string& shown) {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  UniqueFd dir(::openat(parent, name.c_str(), kFlags));
  if (!dir.valid() && errno == ENOENT && create) {
    if (::mkdirat(parent, name.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("mkdir(", shown, ")"));
    }
    dir.Reset(::openat(parent, name.c_str(), kFlags));
  }
  if (!dir.valid()) return ErrnoStatus(absl::StrCat("open(", shown, ")"));
  return dir;
}

bool ValidFileName(absl::string_view name) {
  return !name.empty() && name.size() < 256 && name != "." && name != ".." &&
         name.find('/') == absl::string_view::npos && name.find('\0') == absl::string_view::npos &&
         name.find('\n') == absl::string_view::npos;
}

}  // namespace

bool ValidTagName(absl::string_view tag) {
  if (tag.empty() || tag.size() > 200) return false;
  for (char c : tag) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

absl::StatusOr<std::string> DeviceId(const Event& event) {
  std::string id;
  uint32_t major = 0;
  if (!event.major.empty() && absl::SimpleAtoi(event.major, &major) && major > 0) {
    uint32_t minor = 0;
    if (!absl::SimpleAtoi(event.minor, &minor)) {
      return absl::InvalidArgumentError(absl::StrCat("MINOR '", event.minor, "'"));
    }
    id = absl::StrCat(event.subsystem == "block" ? "b" : "c", major, ":", minor);
  } else if (std::optional<absl::string_view> ifindex = event.Get("IFINDEX");
             ifindex.has_value() && *ifindex != "0") {
    const std::optional<int> n = ParseIfindex(*ifindex);
    if (!n.has_value()) return absl::InvalidArgumentError(absl::StrCat("IFINDEX '", *ifindex, "'"));
    id = absl::StrCat("n", *n);
  } else if (event.subsystem == "drivers") {
    // /bus/<bus>/drivers/<driver>
    std::vector<absl::string_view> parts = absl::StrSplit(event.devpath, '/');
    if (parts.size() < 3) return absl::InvalidArgumentError("driver DEVPATH too short");
    id = absl::StrCat("+drivers:", parts[parts.size() - 3], ":", parts.back());
  } else {
    if (event.subsystem.empty()) return absl::InvalidArgumentError("no SUBSYSTEM");
    // The kernel's name: a '!' stays (it would be '/' in the sysname, not a file name).
    const size_t slash = event.devpath.rfind('/');
    id = absl::StrCat("+", event.subsystem, ":", absl::string_view(event.devpath).substr(slash + 1));
  }
  if (!ValidFileName(id) || absl::StrContains(absl::string_view(id).substr(1), "/")) {
    return absl::InvalidArgumentError(absl::StrCat("device id '", id, "' is not a file name"));
  }
  return id;
}

std::string FormatDatabaseEntry(const DatabaseEntry& entry) {
  std::string out;
  for (const std::string& link : entry.links) absl::StrAppend(&out, "S:", link, "\n");
  if (entry.link_priority != 0) absl::StrAppend(&out, "L:", entry.link_priority, "\n");
  if (entry.usec_initialized > 0) absl::StrAppend(&out, "I:", entry.usec_initialized, "\n");
  for (const auto& [key, value] : entry.properties) {
    if (absl::StrContains(key, "\n") || absl::StrContains(value, "\n") || absl::StrContains(key, "=")) {
      continue;
    }
    absl::StrAppend(&out, "E:", key, "=", value, "\n");
  }
  for (const std::string& tag : entry.tags) {
    if (ValidTagName(tag)) absl::StrAppend(&out, "G:", tag, "\n");
  }
  for (const std::string& tag : entry.current_tags) {
    if (ValidTagName(tag)) absl::StrAppend(&out, "Q:", tag, "\n");
  }
  absl::StrAppend(&out, "V:1\n");
  return out;
}

DatabaseEntry ParseDatabaseEntry(absl::string_view text) {
  DatabaseEntry entry;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() < 2 || line[1] != ':') continue;
    const absl::string_view value = line.substr(2);
    switch (line[0]) {
      case 'S':
        entry.links.emplace_back(value);
        break;
      case 'L':
        if (!absl::SimpleAtoi(value, &entry.link_priority)) entry.link_priority = 0;
        break;
      case 'I':
        if (!absl::SimpleAtoi(value, &entry.usec_initialized)) entry.usec_initialized = 0;
        break;
      case 'E': {
        const size_t eq = value.find('=');
        if (eq != absl::string_view::npos) {
          entry.properties.emplace_back(std::string(value.substr(0, eq)), std::string(value.substr(eq + 1)));
        }
        break;
      }
      case 'G':
        entry.tags.emplace_back(value);
        break;
      case 'Q':
        entry.current_tags.emplace_back(value);
        break;
      default:
        break;
    }
  }
  return entry;
}

absl::StatusOr<DatabaseDir> DatabaseDir::Open(const std::string& run_dir) {
  if (::mkdir(run_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("mkdir(", run_dir, ")"));
  }
  UniqueFd fd(::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", run_dir, ")"));
  return DatabaseDir(std::move(fd), run_dir);
}

absl::StatusOr<int> DatabaseDir::DataDir(bool create, int stale) const {
  if (const int fd = data_->fd.load(std::memory_order_acquire); fd >= 0 && fd != stale) return fd;
  std::lock_guard<std::mutex> lock(data_->mutex);
  if (data_->current.valid() && data_->current.get() != stale) return data_->current.get();
  HOTRING_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirBeneath(fd_.get(), "data", create, absl::StrCat(path_, "/data")));
  // Another thread may have just taken the old fd: it stays open.
  if (data_->current.valid()) data_->replaced.push_back(std::move(data_->current));
  data_->current = std::move(dir);
  data_->fd.store(data_->current.get(), std::memory_order_release);
  return data_->current.get();
}

std::unique_lock<std::mutex> DatabaseDir::LockName(absl::string_view id) const {
  if (!entries_->tracking.load(std::memory_order_acquire)) return std::unique_lock<std::mutex>();
  return std::unique_lock<std::mutex>(entries_->names[absl::HashOf(id) % entries_->names.size()]);
}

bool DatabaseDir::MayHold(absl::string_view id) const {
  if (!entries_->tracking.load(std::memory_order_acquire)) return true;
  const uint64_t hash = absl::HashOf(id);
  std::lock_guard<std::mutex> lock(entries_->mutex);
  return entries_->hashes.contains(hash);
}

void DatabaseDir::Remember(absl::string_view id, bool present) const {
  if (!entries_->tracking.load(std::memory_order_acquire)) return;
  const uint64_t hash = absl::HashOf(id);
  std::lock_guard<std::mutex> lock(entries_->mutex);
  if (present) {
    entries_->hashes.insert(hash);
  } else {
    entries_->hashes.erase(hash);
  }
}

absl::Status DatabaseDir::TrackEntries() {
  std::lock_guard<std::mutex> lock(entries_->mutex);
  entries_->hashes.clear();
  absl::StatusOr<int> dir = DataDir(/*create=*/false);
  if (dir.ok()) {
    const int copy = ::fcntl(*dir, F_DUPFD_CLOEXEC, 0);
    DIR* d = copy >= 0 ? ::fdopendir(copy) : nullptr;
    if (d == nullptr) {
      if (copy >= 0) ::close(copy);
      return ErrnoStatus(absl::StrCat("opendir(", path_, "/data)"));
    }
    ::rewinddir(d);
    while (const dirent* e = ::readdir(d)) {
      const absl::string_view name = e->d_name;
      // Temporary files of an interrupted write (".#ID.TID") are not entries.
      if (name == "." || name == ".." || absl::StartsWith(name, ".#")) continue;
      entries_->hashes.insert(absl::HashOf(name));
    }
    ::closedir(d);
  } else if (!absl::IsNotFound(dir.status())) {
    return dir.status();
  }
  entries_->tracking.store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status DatabaseDir::Write(absl::string_view id, absl::string_view content, bool persist) const {
  if (!ValidFileName(id)) return absl::InvalidArgumentError(absl::StrCat("database id '", id, "'"));
  // Unique per thread; events of one device never run at once, so per id too.
  thread_local const pid_t tid = ::gettid();  // a system call each time otherwise
  const std::string temp = absl::StrCat(".#", id, ".", tid);
  const std::string name(id);
  int stale = -1;
  for (int attempt = 0;; ++attempt) {
    HOTRING_ASSIGN_OR_RETURN(const int dir, DataDir(/*create=*/true, stale));
    // The kept data/ may have been removed: nothing can be made in it, nor renamed into it
    // (ENOENT). Then once more in a data/ made again.
    const bool may_retry = attempt == 0;
    UniqueFd file(::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!file.valid() && errno == ENOENT && may_retry) {
      stale = dir;
      continue;
    }
    if (!file.valid()) return ErrnoStatus(absl::StrCat("create(", path_, "/data/", temp, ")"));
    // Whatever the umask: libudev readers are not root.
    (void)::fchmod(file.get(), persist ? 01644 : 0644);
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = ::write(file.get(), content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const absl::Status failed = ErrnoStatus(absl::StrCat("write(", path_, "/data/", temp, ")"));
        (void)::unlinkat(dir, temp.c_str(), 0);
        return failed;
      }
      done += static_cast<size_t>(n);
    }
    std::unique_lock<std::mutex> named = LockName(id);
    if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
      const int err = errno;
      named = std::unique_lock<std::mutex>();
      (void)::unlinkat(dir, temp.c_str(), 0);
      if (err == ENOENT && may_retry) {
        stale = dir;
        continue;
      }
      return ErrnoStatus(absl::StrCat("rename(", path_, "/data/", name, ")"), err);
    }
    Remember(id, /*present=*/true);
    return absl::OkStatus();
  }
}

absl::StatusOr<std::string> DatabaseDir::Read(absl::string_view id) const {
  if (!ValidFileName(id)) return absl::InvalidArgumentError(absl::StrCat("database id '", id, "'"));
  const std::string name(id);
  if (!MayHold(id)) {
    entries_->skipped.fetch_add(1, std::memory_order_relaxed);
    return absl::NotFoundError(absl::StrCat("open(", path_, "/data/", name, "): not there"));
  }
  HOTRING_ASSIGN_OR_RETURN(const int dir, DataDir(/*create=*/false));
  UniqueFd file(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!file.valid()) return ErrnoStatus(absl::StrCat("open(", path_, "/data/", name, ")"));
  std::string out;
  char buf[4096];
  while (out.size() < (1 << 20)) {
    const ssize_t n = ::read(file.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read(", path_, "/data/", name, ")"));
    out.append(buf, static_cast<size_t>(n));
    // A regular file read short is read to its end (entries are replaced by a rename, never
    // appended to): no second read to be told so.
    if (static_cast<size_t>(n) < sizeof(buf)) break;
  }
  return out;
}

absl::Status DatabaseDir::Remove(absl::string_view id) const {
  if (!ValidFileName(id)) return absl::InvalidArgumentError(absl::StrCat("database id '", id, "'"));
  absl::StatusOr<int> dir = DataDir(/*create=*/false);
  if (!dir.ok()) return absl::IsNotFound(dir.status()) ? absl::OkStatus() : dir.status();
  const std::string name(id);
  const std::unique_lock<std::mutex> named = LockName(id);
  if (::unlinkat(*dir, name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("unlink(", path_, "/data/", name, ")"));
  }
  Remember(id, /*present=*/false);
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> DatabaseDir::TagDir(absl::string_view tag, bool create) const {
  if (!ValidTagName(tag)) return absl::InvalidArgumentError(absl::StrCat("tag '", tag, "'"));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd tags,
                           OpenDirBeneath(fd_.get(), "tags", create, absl::StrCat(path_, "/tags")));
  const std::string name(tag);
  return OpenDirBeneath(tags.get(), name, create, absl::StrCat(path_, "/tags/", name));
}

absl::Status DatabaseDir::AddTag(absl::string_view tag, absl::string_view id) const {
  if (!ValidFileName(id)) return absl::InvalidArgumentError(absl::StrCat("database id '", id, "'"));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd dir, TagDir(tag, /*create=*/true));
  const std::string name(id);
  // As udevd touches it: an existing file is kept; the mode is 0444 whatever the umask.
  UniqueFd file(
      ::openat(dir.get(), name.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!file.valid()) {
    return ErrnoStatus(absl::StrCat("create(", path_, "/tags/", tag, "/", name, ")"));
  }
  (void)::fchmod(file.get(), 0444);
  return absl::OkStatus();
}

absl::Status DatabaseDir::RemoveTag(absl::string_view tag, absl::string_view id) const {
  if (!ValidFileName(id)) return absl::InvalidArgumentError(absl::StrCat("database id '", id, "'"));
  absl::StatusOr<UniqueFd> dir = TagDir(tag, /*create=*/false);
  if (!dir.ok()) return absl::IsNotFound(dir.status()) ? absl::OkStatus() : dir.status();
  const std::string name(id);
  if (::unlinkat(dir->get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("unlink(", path_, "/tags/", tag, "/", name, ")"));
  }
  return absl::OkStatus();
}

}  // namespace hotring::hotplug::udev

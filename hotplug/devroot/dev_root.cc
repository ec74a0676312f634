#include "hotplug/devroot/dev_root.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "hotplug/devroot/node_placeholder.h"

namespace hotring::hotplug::devroot {
namespace {

// "disk/scsiA" seen from a link at "a/b/sda": "../../disk/scsiA".
std::string RelativeTarget(absl::string_view link, absl::string_view target) {
  std::string out;
  for (char c : link) {
    if (c == '/') out += "../";
  }
  absl::StrAppend(&out, target);
  return out;
}

bool IsDeviceNode(const struct stat& st) { return S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode); }

// The directory a path's last component lives in: the dev root itself, borrowed (a node
// directly under /dev costs no dup and no close), or a subdirectory opened beneath it, owned.
class ParentDir {
 public:
  static ParentDir Root(int root_fd) { return ParentDir(root_fd, UniqueFd()); }
  static ParentDir Owned(UniqueFd fd) {
    const int raw = fd.get();
    return ParentDir(raw, std::move(fd));
  }
  [[nodiscard]] int get() const { return fd_; }
  // The dev root itself (what DevRoot::Open inspected: setgid bit, default ACL).
  [[nodiscard]] bool is_root() const { return !owned_; }

 private:
  ParentDir(int fd, UniqueFd owned) : fd_(fd), owned_(std::move(owned)) {}
  int fd_;
  UniqueFd owned_;
};

// Walks the directory part of `path` beneath `root_fd`, one component at a time with
// O_NOFOLLOW: a symlink or a non-directory on the way fails with ELOOP/ENOTDIR. Missing
// directories are made (0755) when `create`. Returns the directory (borrowing `root_fd` when
// `path` has no '/'); `leaf` gets the last component. `path` must already be
// IsSafeRelativePath.
absl::StatusOr<ParentDir> OpenParent(int root_fd, absl::string_view path, bool create,
                                     std::string* leaf) {
  const size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) {
    *leaf = std::string(path);
    return ParentDir::Root(root_fd);
  }
  *leaf = std::string(path.substr(slash + 1));
  UniqueFd current;
  for (absl::string_view part : absl::StrSplit(path.substr(0, slash), '/')) {
    const int at = current ? current.get() : root_fd;
    const std::string name(part);
    int fd = openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      if (mkdirat(at, name.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus(absl::StrCat("mkdir(", name, ")"));
      }
      fd = openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      // The process umask must not narrow the directory (busybox makes them 0755).
      if (fd >= 0) (void)fchmod(fd, 0755);
    }
    if (fd < 0) return ErrnoStatus(absl::StrCat("open(", name, ")"));
    current = UniqueFd(fd);
  }
  return ParentDir::Owned(std::move(current));
}

// ELOOP/ENOTDIR from OpenParent: something on the way is a symlink or not a directory.
bool IsRefusal(const absl::Status& status) {
  const int err = StatusErrno(status);
  return err == ELOOP || err == ENOTDIR;
}

// Makes a symlink `link` -> `target` (relative), replacing an old symlink there but nothing
// else. Returns true when a link was made.
bool MakeLink(const DevRoot& root, absl::string_view link, absl::string_view target,
              NodeReport& report) {
  std::string leaf;
  absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), link, /*create=*/true, &leaf);
  if (!dir.ok()) {
    if (IsRefusal(dir.status())) ++report.refused;
    report.errors.push_back(absl::StrCat("link ", link, ": ", dir.status().message()));
    return false;
  }
  const std::string relative = RelativeTarget(link, target);
  if (symlinkat(relative.c_str(), dir->get(), leaf.c_str()) == 0) return true;
  if (errno == EEXIST) {
    struct stat st;
    if (fstatat(dir->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      char old[PATH_MAX];
      const ssize_t n = readlinkat(dir->get(), leaf.c_str(), old, sizeof(old));
      if (n >= 0 && absl::string_view(old, static_cast<size_t>(n)) == relative) return false;
      if (unlinkat(dir->get(), leaf.c_str(), 0) == 0 &&
          symlinkat(relative.c_str(), dir->get(), leaf.c_str()) == 0) {
        return true;
      }
    } else {
      // A node or file of that name (devtmpfs's own node when it was not moved): keep it.
      report.errors.push_back(absl::StrCat("link ", link, ": exists and is not a symlink"));
      return false;
    }
  }
  report.errors.push_back(
      absl::StrCat("link ", link, " -> ", relative, ": ", ErrnoStatus("symlink").message()));
  return false;
}

// lstat of `leaf` in `dir`; in a placeholder dev root a placeholder reads as its node, so the
// checks below (a device node? which number? which owner and mode?) hold for both kinds.
bool StatEntry(const DevRoot& root, int dir, const std::string& leaf, struct stat& st) {
  if (fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (root.placeholders()) (void)StatAsNode(dir, leaf.c_str(), st);
  return true;
}

PlaceholderNode PlaceholderOf(const NodeStep& step) {
  return {.block = step.block,
          .major = step.number->major,
          .minor = step.number->minor,
          .uid = step.owner.uid,
          .gid = step.owner.gid,
          .mode = static_cast<uint32_t>(step.mode & 07777)};
}

// mknod, or a placeholder already carrying the step's owner and mode. -1 with errno on failure.
int MakeNodeAt(const DevRoot& root, int dir, const std::string& leaf, const NodeStep& step) {
  if (!root.placeholders()) {
    const mode_t type = step.block ? S_IFBLK : S_IFCHR;
    return mknodat(dir, leaf.c_str(), step.mode | type,
                   makedev(step.number->major, step.number->minor));
  }
  const absl::Status made = WriteNodePlaceholderAt(dir, leaf.c_str(), PlaceholderOf(step),
                                                   /*exclusive=*/true);
  if (made.ok()) return 0;
  errno = StatusErrno(made);
  return -1;
}

void Create(const DevRoot& root, const NodeStep& step, NodeReport& report) {
  const mode_t type = step.block ? S_IFBLK : S_IFCHR;
  const dev_t rdev = makedev(step.number->major, step.number->minor);
  std::string leaf;
  absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), step.path, /*create=*/true, &leaf);
  if (!dir.ok()) {
    if (IsRefusal(dir.status())) ++report.refused;
    report.errors.push_back(absl::StrCat("node ", step.path, ": ", dir.status().message()));
    return;
  }
  struct stat st;
  bool have = false;
  // On devtmpfs the kernel's node is normally there already, and a moved node may be waiting
  // under its kernel name: look first. Elsewhere the node is normally missing: mknod first and
  // stat only when something already has the name (EEXIST).
  if (root.devtmpfs() || step.path != step.name) {
    have = StatEntry(root, dir->get(), leaf, st);
    if (!have && step.path != step.name) {
      // devtmpfs (or an earlier run) made the node under its kernel name: move it.
      std::string name_leaf;
      absl::StatusOr<ParentDir> name_dir = OpenParent(root.fd(), step.name, false, &name_leaf);
      struct stat old;
      if (name_dir.ok() && StatEntry(root, name_dir->get(), name_leaf, old) &&
          (old.st_mode & S_IFMT) == type && old.st_rdev == rdev &&
          renameat(name_dir->get(), name_leaf.c_str(), dir->get(), leaf.c_str()) == 0) {
        ++report.renamed;
        have = StatEntry(root, dir->get(), leaf, st);
      }
    }
  }
  bool fresh = false;  // made by the mknod below: ours, a device node, no stat needed
  if (!have) {
    if (MakeNodeAt(root, dir->get(), leaf, step) == 0) {
      ++report.nodes_made;
      fresh = true;
    } else if (errno != EEXIST) {
      report.errors.push_back(
          absl::StrCat("node ", step.path, ": ", ErrnoStatus("mknod").message()));
      return;
    } else if (!StatEntry(root, dir->get(), leaf, st)) {
      report.errors.push_back(
          absl::StrCat("node ", step.path, ": ", ErrnoStatus("stat").message()));
      return;
    }
  }
  if (!fresh && !IsDeviceNode(st)) {
    // Never chmod/chown through a symlink, nor a file or directory that took the name.
    if (S_ISLNK(st.st_mode)) ++report.refused;
    report.errors.push_back(absl::StrCat("node ", step.path, ": exists and is not a device node"));
    return;
  }
  bool mode_right;
  bool owner_right;
  if (fresh && root.placeholders()) {
    mode_right = owner_right = true;  // written with them
  } else if (fresh) {
    // A fresh node has mode & ~umask and our effective ids, unless its directory decides
    // otherwise (a setgid directory's group, a default ACL instead of the umask): trusted only
    // directly in the dev root, which DevRoot::Open inspected.
    const bool plain_dir = dir->is_root() && root.fresh_nodes_predictable();
    mode_right = plain_dir && (step.mode & ~mode_t{0777}) == 0 && (step.mode & root.umask()) == 0;
    owner_right = plain_dir && step.owner == root.creator();
  } else {
    mode_right = (st.st_mode & 07777) == step.mode;
    owner_right = st.st_uid == step.owner.uid && st.st_gid == step.owner.gid;
  }
  if (root.placeholders()) {
    if (!mode_right || !owner_right) {
      const absl::Status rewritten = WriteNodePlaceholderAt(dir->get(), leaf.c_str(),
                                                            PlaceholderOf(step), false);
      if (!rewritten.ok()) {
        report.errors.push_back(absl::StrCat("node ", step.path, ": ", rewritten.message()));
        return;
      }
    }
  } else if ((!mode_right && fchmodat(dir->get(), leaf.c_str(), step.mode, 0) != 0) ||
      (!owner_right && fchownat(dir->get(), leaf.c_str(), step.owner.uid, step.owner.gid,
                                AT_SYMLINK_NOFOLLOW) != 0)) {
    report.errors.push_back(
        absl::StrCat("node ", step.path, ": ", ErrnoStatus("chmod/chown").message()));
    return;
  }
  ++report.chowned;
  if (!step.link.empty() && MakeLink(root, step.link, step.path, report)) ++report.linked;
  if (step.root_link && MakeLink(root, "root", step.path, report)) ++report.linked;
}

void Remove(const DevRoot& root, const NodeStep& step, NodeReport& report) {
  if (!step.link.empty()) {
    std::string leaf;
    absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), step.link, false, &leaf);
    struct stat st;
    if (dir.ok() && fstatat(dir->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode) && unlinkat(dir->get(), leaf.c_str(), 0) == 0) {
      ++report.removed;
    } else if (!dir.ok() && IsRefusal(dir.status())) {
      ++report.refused;
    }
  }
  std::string leaf;
  absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), step.path, false, &leaf);
  if (!dir.ok()) {
    if (IsRefusal(dir.status())) ++report.refused;
    return;  // ENOENT: nothing to remove (devtmpfs removed it already)
  }
  struct stat st;
  if (!StatEntry(root, dir->get(), leaf, st)) return;
  if (!IsDeviceNode(st)) {
    report.errors.push_back(absl::StrCat("remove ", step.path, ": not a device node, kept"));
    return;
  }
  // A node that now has another number belongs to a newer device of the same name.
  if (step.number.has_value() && st.st_rdev != makedev(step.number->major, step.number->minor)) {
    report.errors.push_back(absl::StrCat("remove ", step.path, ": another device's node, kept"));
    return;
  }
  if (unlinkat(dir->get(), leaf.c_str(), 0) == 0) {
    ++report.removed;
  } else {
    report.errors.push_back(
        absl::StrCat("remove ", step.path, ": ", ErrnoStatus("unlink").message()));
  }
}

// The mount of `fd` is devtmpfs according to /proc/self/mountinfo (false when unreadable).
bool MountIsDevtmpfs(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return false;
  const std::string device = absl::StrCat(major(st.st_dev), ":", minor(st.st_dev));
  std::string line;
  while (std::getline(in, line)) {
    // id parent MAJ:MIN root mountpoint options [optional...] - fstype source superoptions
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    if (f.size() < 3 || f[2] != device) continue;
    for (size_t i = 3; i + 1 < f.size(); ++i) {
      if (f[i] == "-") return f[i + 1] == "devtmpfs";
    }
  }
  return false;
}

}  // namespace

bool IsSafeRelativePath(absl::string_view path) {
  if (path.empty() || path.size() >= PATH_MAX || path[0] == '/') return false;
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == ".." || part.size() > NAME_MAX) return false;
  }
  return true;
}

absl::StatusOr<bool> MakeLinkBeneath(const DevRoot& root, absl::string_view link,
                                     absl::string_view target) {
  if (!IsSafeRelativePath(link) || !IsSafeRelativePath(target)) {
    return absl::FailedPreconditionError(absl::StrCat("link ", link, " -> ", target, ": unsafe path"));
  }
  std::string leaf;
  absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), link, /*create=*/true, &leaf);
  if (!dir.ok()) {
    if (IsRefusal(dir.status())) {
      return absl::FailedPreconditionError(absl::StrCat("link ", link, ": refused (", dir.status().message(), ")"));
    }
    return dir.status();
  }
  const std::string relative = RelativeTarget(link, target);
  if (symlinkat(relative.c_str(), dir->get(), leaf.c_str()) == 0) return true;
  if (errno != EEXIST) return ErrnoStatus(absl::StrCat("symlink(", link, ")"));
  struct stat st;
  if (fstatat(dir->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("link ", link, ": exists and is not a symlink"));
  }
  char old[PATH_MAX];
  const ssize_t n = readlinkat(dir->get(), leaf.c_str(), old, sizeof(old));
  if (n >= 0 && absl::string_view(old, static_cast<size_t>(n)) == relative) return false;
  // Replace atomically: a reader sees the old link or the new one, never none.
  // Per thread: two devices may claim the same name at once (the udev compatibility pool).
  const std::string temp = absl::StrCat(".#", leaf, ".", gettid());
  (void)unlinkat(dir->get(), temp.c_str(), 0);
  if (symlinkat(relative.c_str(), dir->get(), temp.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("symlink(", link, ")"));
  }
  if (renameat(dir->get(), temp.c_str(), dir->get(), leaf.c_str()) != 0) {
    const absl::Status failed = ErrnoStatus(absl::StrCat("rename(", link, ")"));
    (void)unlinkat(dir->get(), temp.c_str(), 0);
    return failed;
  }
  return true;
}

absl::StatusOr<bool> RemoveLinkBeneath(const DevRoot& root, absl::string_view link,
                                       absl::string_view target) {
  if (!IsSafeRelativePath(link) || !IsSafeRelativePath(target)) {
    return absl::FailedPreconditionError(absl::StrCat("link ", link, ": unsafe path"));
  }
  std::string leaf;
  absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), link, /*create=*/false, &leaf);
  if (!dir.ok()) {
    if (StatusErrno(dir.status()) == ENOENT) return false;
    if (IsRefusal(dir.status())) {
      return absl::FailedPreconditionError(absl::StrCat("link ", link, ": refused"));
    }
    return dir.status();
  }
  char old[PATH_MAX];
  const ssize_t n = readlinkat(dir->get(), leaf.c_str(), old, sizeof(old));
  if (n < 0) return false;  // gone, or not a symlink: not ours to remove
  if (absl::string_view(old, static_cast<size_t>(n)) != RelativeTarget(link, target)) return false;
  if (unlinkat(dir->get(), leaf.c_str(), 0) != 0) return ErrnoStatus(absl::StrCat("unlink(", link, ")"));
  return true;
}

bool StatBeneath(const DevRoot& root, absl::string_view path, struct stat* st) {
  if (!IsSafeRelativePath(path)) return false;
  std::string leaf;
  absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), path, /*create=*/false, &leaf);
  return dir.ok() && StatEntry(root, dir->get(), leaf, *st);
}

absl::StatusOr<bool> RemoveSymlinkBeneath(const DevRoot& root, absl::string_view link) {
  if (!IsSafeRelativePath(link)) {
    return absl::FailedPreconditionError(absl::StrCat("link ", link, ": unsafe path"));
  }
  std::string leaf;
  {
    absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), link, /*create=*/false, &leaf);
    if (!dir.ok()) {
      if (StatusErrno(dir.status()) == ENOENT) return false;
      if (IsRefusal(dir.status())) return absl::FailedPreconditionError(absl::StrCat("link ", link, ": refused"));
      return dir.status();
    }
    struct stat st;
    if (fstatat(dir->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) return false;
    if (unlinkat(dir->get(), leaf.c_str(), 0) != 0) return ErrnoStatus(absl::StrCat("unlink(", link, ")"));
  }
  // The parents, deepest first, while empty (rmdir fails on anything else: that ends it).
  absl::string_view rest = link;
  for (size_t slash = rest.rfind('/'); slash != absl::string_view::npos; slash = rest.rfind('/')) {
    rest = rest.substr(0, slash);
    std::string parent_leaf;
    absl::StatusOr<ParentDir> dir = OpenParent(root.fd(), rest, /*create=*/false, &parent_leaf);
    if (!dir.ok() || unlinkat(dir->get(), parent_leaf.c_str(), AT_REMOVEDIR) != 0) break;
  }
  return true;
}

absl::StatusOr<DevRoot> DevRoot::Open(const std::string& path, DevNodes nodes) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  struct statfs fs;
  if (fstatfs(fd.get(), &fs) != 0) return ErrnoStatus(absl::StrCat("statfs(", path, ")"));
  // devtmpfs is a tmpfs (or ramfs) inside; only mountinfo names it. Magic numbers are 32 bits;
  // f_type is a signed word (an int on 32-bit ARM, where RAMFS_MAGIC is negative in it).
  const uint32_t type = static_cast<uint32_t>(fs.f_type);
  const bool tmpfs_like = type == TMPFS_MAGIC || type == RAMFS_MAGIC;
  const bool devtmpfs = tmpfs_like && MountIsDevtmpfs(fd.get());
  // What a node mknod makes directly in the root gets, so that Create can skip a chmod or
  // chown that would change nothing: the umask (read by setting it back), our effective ids,
  // and whether the root's setgid bit or a default ACL overrides them.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat(", path, ")"));
  const ssize_t acl = fgetxattr(fd.get(), "system.posix_acl_default", nullptr, 0);
  const bool no_acl = acl < 0 && (errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP);
  const bool predictable = (st.st_mode & S_ISGID) == 0 && no_acl;
  return DevRoot(std::move(fd), path, devtmpfs, nodes == DevNodes::kPlaceholders, mask,
                 Owner{geteuid(), getegid()}, predictable);
}

NodeReport ApplyNodes(const DevRoot& root, absl::Span<const NodeStep> steps) {
  NodeReport report;
  for (const NodeStep& step : steps) {
    switch (step.kind) {
      case NodeStep::Kind::kCreate:
        Create(root, step, report);
        break;
      case NodeStep::Kind::kRemove:
        Remove(root, step, report);
        break;
    }
  }
  return report;
}

}  // namespace hotring::hotplug::devroot

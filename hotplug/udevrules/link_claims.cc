#include "hotplug/udevrules/link_claims.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udevrules {
namespace {

// Opens (making it) directory `name` in `at`, never through a symlink.
absl::StatusOr<UniqueFd> OpenDirAt(int at, const std::string& name) {
  if (::mkdirat(at, name.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("mkdir(", name, ")"));
  }
  UniqueFd fd(::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", name, ")"));
  return fd;
}

std::optional<std::string> ReadLinkAt(int dir, const std::string& name) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlinkat(dir, name.c_str(), buf, sizeof(buf));
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

// Writes or withdraws this device's claim.
absl::Status UpdateOwnClaim(int dir, const LinkClaim& claim, bool add) {
  if (!add) {
    if (::unlinkat(dir, claim.device_id.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("unlink(claim ", claim.device_id, ")"));
    }
    return absl::OkStatus();
  }
  const std::string data = absl::StrCat(claim.priority, ":/dev/", claim.node);
  if (ReadLinkAt(dir, claim.device_id) == data) return absl::OkStatus();
  (void)::unlinkat(dir, claim.device_id.c_str(), 0);
  if (::symlinkat(data.c_str(), dir, claim.device_id.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("symlink(claim ", claim.device_id, ")"));
  }
  return absl::OkStatus();
}

// The node of the claim with the highest priority (see the header for ties); "" when none.
std::string Winner(int dir, const devroot::DevRoot& dev_root, const LinkClaim& claim, bool add) {
  std::string best;
  int best_priority = 0;
  if (add) {
    best = claim.node;
    best_priority = claim.priority;
  }
  std::vector<std::string> names;
  UniqueFd listing(::dup(dir));
  DIR* d = listing.valid() ? ::fdopendir(listing.get()) : nullptr;
  if (d == nullptr) return best;
  (void)listing.Release();  // the DIR owns it now
  ::rewinddir(d);
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' || claim.device_id == e->d_name) continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::optional<std::string> data = ReadLinkAt(dir, name);
    if (!data.has_value()) continue;
    const size_t colon = data->find(':');
    if (colon == std::string::npos || colon == 0) continue;
    int priority = 0;
    if (!absl::SimpleAtoi(absl::string_view(*data).substr(0, colon), &priority)) continue;
    absl::string_view node = absl::string_view(*data).substr(colon + 1);
    if (!absl::ConsumePrefix(&node, "/dev/") || !devroot::IsSafeRelativePath(node)) continue;
    if (!best.empty() && priority <= best_priority) continue;
    // A claim whose node is gone (its remove is still to come) does not win.
    struct stat st;
    if (!devroot::StatBeneath(dev_root, node, &st)) continue;
    best = std::string(node);
    best_priority = priority;
  }
  return best;
}

}  // namespace

std::string EscapeLinkName(absl::string_view link) {
  std::string out;
  for (char c : link) {
    if (c == '/') {
      out += "\\x2f";
    } else if (c == '\\') {
      out += "\\x5c";
    } else {
      out += c;
    }
  }
  // udevd's buffer is NAME_MAX + 1 with 12 bytes kept for the hash.
  if (out.size() + 12 > NAME_MAX + 1) return "";
  return out;
}

absl::StatusOr<LinkUpdate> UpdateLinkClaim(int run_fd, const devroot::DevRoot& dev_root,
                                           const LinkClaim& claim, bool add) {
  if (!devroot::IsSafeRelativePath(claim.link) || !devroot::IsSafeRelativePath(claim.node)) {
    return absl::FailedPreconditionError(absl::StrCat("link ", claim.link, ": unsafe path"));
  }
  const std::string escaped = EscapeLinkName(claim.link);
  if (escaped.empty()) return absl::InvalidArgumentError(absl::StrCat("link ", claim.link, ": name too long"));
  if (claim.device_id.empty() || claim.device_id[0] == '.' || absl::StrContains(claim.device_id, "/")) {
    return absl::InvalidArgumentError(absl::StrCat("device id '", claim.device_id, "'"));
  }
  HOTRING_ASSIGN_OR_RETURN(UniqueFd links, OpenDirAt(run_fd, "links"));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(links.get(), escaped));
  UniqueFd lock(::openat(dir.get(), ".lock", O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock.valid()) return ErrnoStatus(absl::StrCat("open(links/", escaped, "/.lock)"));
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return ErrnoStatus(absl::StrCat("flock(links/", escaped, "/.lock)"));
  }
  HOTRING_RETURN_IF_ERROR(UpdateOwnClaim(dir.get(), claim, add));
  LinkUpdate update;
  update.owner = Winner(dir.get(), dev_root, claim, add);
  if (!update.owner.empty()) {
    HOTRING_ASSIGN_OR_RETURN(const bool made, devroot::MakeLinkBeneath(dev_root, claim.link, update.owner));
    update.change = made ? LinkChange::kMade : LinkChange::kUnchanged;
  } else {
    HOTRING_ASSIGN_OR_RETURN(const bool removed, devroot::RemoveSymlinkBeneath(dev_root, claim.link));
    update.change = removed ? LinkChange::kRemoved : LinkChange::kUnchanged;
  }
  return update;  // the lock goes with `lock`
}

bool IsOwnDiskseqLink(absl::string_view link, absl::string_view subsystem, absl::string_view devtype,
                      std::optional<absl::string_view> diskseq) {
  if (subsystem != "block" || devtype == "partition" || !diskseq.has_value() || diskseq->empty()) return false;
  return absl::ConsumePrefix(&link, "disk/by-diskseq/") && link == *diskseq;
}

absl::StatusOr<size_t> CleanUpLinkClaims(int run_fd) {
  UniqueFd links(::openat(run_fd, "links", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!links.valid()) {
    if (errno == ENOENT) return 0;
    return ErrnoStatus("open(links)");
  }
  std::vector<std::string> dirs;
  {
    UniqueFd listing(::dup(links.get()));
    DIR* d = listing.valid() ? ::fdopendir(listing.get()) : nullptr;
    if (d == nullptr) return ErrnoStatus("opendir(links)");
    (void)listing.Release();  // the DIR owns it now
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.' && e->d_type == DT_DIR) dirs.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  size_t removed = 0;
  for (const std::string& dir : dirs) {
    const std::string lock = absl::StrCat(dir, "/.lock");
    if (::unlinkat(links.get(), lock.c_str(), 0) != 0 && errno != ENOENT) continue;
    if (::unlinkat(links.get(), dir.c_str(), AT_REMOVEDIR) == 0) ++removed;
  }
  return removed;
}

}  // namespace hotring::hotplug::udevrules

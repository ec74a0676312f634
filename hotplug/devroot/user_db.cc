#include "hotplug/devroot/user_db.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"

namespace hotring::hotplug::devroot {
namespace {

// Reads a whole file; NotFound when it does not exist.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return absl::NotFoundError(path);
    return ErrnoStatus(absl::StrCat("open(", path, ")"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A decimal id as busybox's bb_strtou accepts it: digits only, fits in 32 bits.
bool ParseId(absl::string_view text, uint32_t* id) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(text, id);
}

}  // namespace

absl::StatusOr<UserDb> UserDb::Load(absl::string_view root) {
  std::string base(root);
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string passwd;
  std::string group;
  for (auto [name, out] : {std::pair<const char*, std::string*>{"/etc/passwd", &passwd},
                           std::pair<const char*, std::string*>{"/etc/group", &group}}) {
    absl::StatusOr<std::string> text = ReadWholeFile(base + name);
    if (text.ok()) {
      *out = std::move(*text);
    } else if (!absl::IsNotFound(text.status())) {
      return text.status();
    }
  }
  return FromText(passwd, group);
}

UserDb UserDb::FromText(absl::string_view passwd, absl::string_view group) {
  UserDb db;
  for (absl::string_view line : absl::StrSplit(passwd, '\n')) {
    // name:password:uid:gid:gecos:home:shell
    std::vector<absl::string_view> f = absl::StrSplit(line, ':');
    uint32_t uid = 0;
    uint32_t gid = 0;
    if (f.size() < 4 || f[0].empty() || !ParseId(f[2], &uid) || !ParseId(f[3], &gid)) continue;
    // The first entry wins, as getpwnam/getpwuid scan from the top.
    db.users_by_name_.try_emplace(std::string(f[0]), User{uid, gid});
    db.primary_gid_by_uid_.try_emplace(uid, gid);
  }
  for (absl::string_view line : absl::StrSplit(group, '\n')) {
    // name:password:gid:members
    std::vector<absl::string_view> f = absl::StrSplit(line, ':');
    uint32_t gid = 0;
    if (f.size() < 3 || f[0].empty() || !ParseId(f[2], &gid)) continue;
    db.groups_by_name_.try_emplace(std::string(f[0]), gid);
  }
  return db;
}

absl::StatusOr<Owner> UserDb::ResolveOwner(absl::string_view spec) const {
  absl::string_view user = spec;
  std::optional<absl::string_view> group;
  if (const size_t colon = spec.find(':'); colon != absl::string_view::npos) {
    user = spec.substr(0, colon);
    group = spec.substr(colon + 1);
  }
  Owner owner;
  uint32_t id = 0;
  if (ParseId(user, &id)) {
    owner.uid = id;
    // A number without a passwd entry: gid = the same number (busybox).
    auto it = primary_gid_by_uid_.find(id);
    owner.gid = it != primary_gid_by_uid_.end() ? it->second : id;
  } else {
    auto it = users_by_name_.find(user);
    if (it == users_by_name_.end()) {
      return absl::NotFoundError(absl::StrCat("unknown user '", user, "'"));
    }
    owner.uid = it->second.uid;
    owner.gid = it->second.gid;
  }
  if (group.has_value()) {
    if (ParseId(*group, &id)) {
      owner.gid = id;
    } else {
      auto it = groups_by_name_.find(*group);
      if (it == groups_by_name_.end()) {
        return absl::NotFoundError(absl::StrCat("unknown group '", *group, "'"));
      }
      owner.gid = it->second;
    }
  }
  return owner;
}

}  // namespace hotring::hotplug::devroot

// UserDb: user and group names read from <root>/etc/passwd and <root>/etc/group. A static
// binary has no NSS, so names in mdev.conf and udev rules are resolved from the files themselves. Owns the
// parsed tables.
#ifndef HOTRING_HOTPLUG_DEVROOT_USER_DB_H_
#define HOTRING_HOTPLUG_DEVROOT_USER_DB_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::devroot {

// Owner of a device node.
struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
  friend bool operator==(const Owner&, const Owner&) = default;
};

class UserDb {
 public:
  // Reads ROOT/etc/passwd and ROOT/etc/group ("/" for the real ones). A missing file is an
  // empty table (numbers still work); an unreadable one is an error.
  static absl::StatusOr<UserDb> Load(absl::string_view root = "/");
  // From the files' text (tests). Malformed lines are skipped, as getpwent does.
  static UserDb FromText(absl::string_view passwd, absl::string_view group);

  // Resolves mdev.conf's "user:group" field exactly as busybox's get_uidgid does:
  //   "uid" / "name"        -> that user; gid = the user's primary group (a number with no
  //                            passwd entry: gid = the same number)
  //   "user:group"          -> each part by number or by name
  // An unknown name (user or group) is an error naming it: "unknown user 'bob'".
  absl::StatusOr<Owner> ResolveOwner(absl::string_view spec) const;

 private:
  struct User {
    uid_t uid;
    gid_t gid;
  };
  absl::flat_hash_map<std::string, User> users_by_name_;
  absl::flat_hash_map<uid_t, gid_t> primary_gid_by_uid_;
  absl::flat_hash_map<std::string, gid_t> groups_by_name_;
};

}  // namespace hotring::hotplug::devroot

#endif  // HOTRING_HOTPLUG_DEVROOT_USER_DB_H_

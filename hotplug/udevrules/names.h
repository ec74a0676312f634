// User and group names for OWNER= and GROUP=: a static binary has no NSS, so names come from the
// passwd and group files of a root directory (the board's, or /). As systemd's get_user_creds
// and get_group_creds: decimal ids are taken as they are, "root" is 0 and "nobody"/"nogroup"
// 65534 even without an entry.
#ifndef HOTRING_HOTPLUG_UDEVRULES_NAMES_H_
#define HOTRING_HOTPLUG_UDEVRULES_NAMES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::udevrules {

// What resolves OWNER and GROUP names. Implementations must be safe to call from several
// threads at once (the executor runs on a worker pool).
class NameLookup {
 public:
  virtual ~NameLookup() = default;
  [[nodiscard]] virtual std::optional<uint32_t> UserId(absl::string_view name) const = 0;
  [[nodiscard]] virtual std::optional<uint32_t> GroupId(absl::string_view name) const = 0;
};

// The tables of ROOT/etc/passwd and ROOT/etc/group, read once. Owns them; immutable.
class PasswdFiles final : public NameLookup {
 public:
  // A missing file is an empty table; an unreadable one is an error.
  static absl::StatusOr<PasswdFiles> Load(absl::string_view root = "/");
  // From the files' text; malformed lines are skipped (as getpwent does), the first entry of a
  // name wins.
  static PasswdFiles FromText(absl::string_view passwd, absl::string_view group);

  [[nodiscard]] std::optional<uint32_t> UserId(absl::string_view name) const override;
  [[nodiscard]] std::optional<uint32_t> GroupId(absl::string_view name) const override;

 private:
  absl::flat_hash_map<std::string, uint32_t> users_;
  absl::flat_hash_map<std::string, uint32_t> groups_;
};

// systemd's parse_uid: a decimal number that is a valid id (not 65535, not 4294967295).
[[nodiscard]] bool ParseId(absl::string_view text, uint32_t* id);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_NAMES_H_

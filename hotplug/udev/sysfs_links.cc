#include "hotplug/udev/sysfs_links.h"

#include <climits>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug::udev {

std::optional<std::string> DirSysfsLinks::Resolve(absl::string_view path, absl::string_view name) const {
  char root[PATH_MAX];
  if (::realpath(root_.c_str(), root) == nullptr) return std::nullopt;
  const std::string full = absl::StrCat(root_, path, "/", name);
  char resolved[PATH_MAX];
  if (::realpath(full.c_str(), resolved) == nullptr) return std::nullopt;
  absl::string_view r(resolved);
  const absl::string_view base(root);
  if (base == "/") return std::string(r);
  if (!absl::StartsWith(r, base) || (r.size() > base.size() && r[base.size()] != '/')) {
    return std::nullopt;
  }
  r.remove_prefix(base.size());
  return std::string(r);
}

}  // namespace hotring::hotplug::udev

#include "hotplug/udevrules/names.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"

namespace hotring::hotplug::udevrules {
namespace {

constexpr uint32_t kNobody = 65534;

absl::Status ReadTable(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno == ENOENT ? absl::OkStatus() : ErrnoStatus(absl::StrCat("open(", path, ")"));
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return absl::OkStatus();
}

// name:x:ID:... lines: the name and the id in field `id_field`.
void ReadIds(absl::string_view text, size_t id_field, absl::flat_hash_map<std::string, uint32_t>* table) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ':');
    uint32_t id = 0;
    if (fields.size() <= id_field || fields[0].empty() || !ParseId(fields[id_field], &id)) continue;
    table->try_emplace(std::string(fields[0]), id);
  }
}

}  // namespace

bool ParseId(absl::string_view text, uint32_t* id) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  uint32_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value == 65535 || value == 4294967295u) return false;
  *id = value;
  return true;
}

absl::StatusOr<PasswdFiles> PasswdFiles::Load(absl::string_view root) {
  std::string base(root);
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string passwd;
  std::string group;
  HOTRING_RETURN_IF_ERROR(ReadTable(base + "/etc/passwd", &passwd));
  HOTRING_RETURN_IF_ERROR(ReadTable(base + "/etc/group", &group));
  return FromText(passwd, group);
}

PasswdFiles PasswdFiles::FromText(absl::string_view passwd, absl::string_view group) {
  PasswdFiles files;
  ReadIds(passwd, 2, &files.users_);
  ReadIds(group, 2, &files.groups_);
  return files;
}

std::optional<uint32_t> PasswdFiles::UserId(absl::string_view name) const {
  uint32_t id = 0;
  if (ParseId(name, &id)) return id;
  if (name == "root") return 0;
  if (auto it = users_.find(name); it != users_.end()) return it->second;
  if (name == "nobody") return kNobody;
  return std::nullopt;
}

std::optional<uint32_t> PasswdFiles::GroupId(absl::string_view name) const {
  uint32_t id = 0;
  if (ParseId(name, &id)) return id;
  if (name == "root") return 0;
  if (auto it = groups_.find(name); it != groups_.end()) return it->second;
  if (name == "nogroup") return kNobody;
  return std::nullopt;
}

}  // namespace hotring::hotplug::udevrules

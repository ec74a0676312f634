#include "hotplug/cli/udevadm/monitor_device.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr absl::string_view kLibudevPrefix("libudev\0", 8);
constexpr uint32_t kLibudevMagic = 0xfeedcafe;
constexpr size_t kMagicAt = 8;
constexpr size_t kPropertiesOffAt = 16;
// sd-device's monitor drops shorter datagrams of either format.
constexpr size_t kMinDatagram = 32;
// systemd's WHITESPACE: what its number parsers skip and DEVLINKS is split on.
constexpr char kWhitespace[] = " \t\n\r";
constexpr uint32_t kMajorLimit = 1u << 12;
constexpr uint32_t kMinorLimit = 1u << 20;

absl::Status Drop(absl::string_view why) { return absl::InvalidArgumentError(why); }

// How systemd reads a number (parse-util's safe_ato*): base 0 unless given, "0b" and "0o"
// prefixes besides strtoull's own "0x" and octal "0"; nothing may follow the digits.
struct NumberSyntax {
  int base = 0;
  bool strict = false;  // parse_uid's: no leading blank, sign or zero
};

std::optional<uint64_t> ParseUnsigned(absl::string_view text, uint64_t max, NumberSyntax syntax = {}) {
  const std::string copy(text);
  const char* s = copy.c_str();
  if (syntax.strict && (std::strchr(kWhitespace, s[0]) != nullptr || s[0] == '+' || s[0] == '-' ||
                        (s[0] == '0' && s[1] != '\0'))) {
    return std::nullopt;
  }
  s += std::strspn(s, kWhitespace);
  int base = syntax.base;
  if (base == 0 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s += 2;
  } else if (base == 0 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8;
    s += 2;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(s, &end, base);
  if (errno != 0 || end == s || *end != '\0') return std::nullopt;
  if (value != 0 && s[0] == '-') return std::nullopt;  // strtoull wraps negatives
  if (value > max) return std::nullopt;
  return value;
}

// safe_atoi: the same prefixes, signed, within int.
std::optional<int64_t> ParseInt(absl::string_view text) {
  const std::string copy(text);
  const char* s = copy.c_str() + std::strspn(copy.c_str(), kWhitespace);
  int base = 0;
  if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s += 2;
  } else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8;
    s += 2;
  }
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(s, &end, base);
  if (errno != 0 || end == s || *end != '\0') return std::nullopt;
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) return std::nullopt;
  return value;
}

// parse_uid/parse_gid: decimal, strict, and neither (uid_t)-1 nor the 16-bit -1.
bool ValidId(absl::string_view text) {
  const std::optional<uint64_t> id =
      ParseUnsigned(text, std::numeric_limits<uint32_t>::max(), {.base = 10, .strict = true});
  return id.has_value() && *id != std::numeric_limits<uint32_t>::max() && *id != 0xffff;
}

bool ValidAction(absl::string_view action) {
  for (absl::string_view known : {"add", "remove", "change", "move", "online", "offline", "bind", "unbind"}) {
    if (action == known) return true;
  }
  return false;
}

// "/sys" + DEVPATH with empty and "." components dropped: the devpath when it lies beneath
// /sys (".." is kept, as sd-device keeps it), else nullopt.
std::optional<std::string> SimplifiedDevpath(absl::string_view value) {
  const std::string syspath = absl::StrCat("/sys", value);
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(syspath, '/')) {
    if (!part.empty() && part != ".") parts.push_back(part);
  }
  if (parts.size() < 2 || parts[0] != "sys") return std::nullopt;
  return absl::StrCat("/", absl::StrJoin(parts.begin() + 1, parts.end(), "/"));
}

// A "drivers" event must name its bus: a component before "/drivers/" (or a final "/drivers").
bool HasDriverSubsystem(absl::string_view devpath) {
  size_t at = devpath.find("/drivers/");
  if (at == absl::string_view::npos) {
    if (!absl::EndsWith(devpath, "/drivers")) return false;
    at = devpath.size() - std::strlen("/drivers");
  }
  const absl::string_view before = devpath.substr(0, at);
  const absl::string_view component = before.substr(before.rfind('/') + 1);
  return !component.empty() && component != "..";
}

// TAGS words: split at every ':' (so "" comes first in ":a:"), a backslash taking the next
// character literally; a tag may hold neither ':' nor ' '.
absl::StatusOr<std::vector<std::string>> SplitTags(absl::string_view value) {
  std::vector<std::string> words(1);
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '\\') {
      if (++i == value.size()) return Drop("TAGS ends in a backslash");
      words.back().push_back(value[i]);
    } else if (value[i] == ':') {
      words.emplace_back();
    } else {
      words.back().push_back(value[i]);
    }
  }
  for (const std::string& word : words) {
    if (absl::StrContains(word, ':') || absl::StrContains(word, ' ')) return Drop("invalid tag");
  }
  return words;
}

void AddUnique(std::vector<std::string>& set, absl::string_view value) {
  if (std::find(set.begin(), set.end(), value) == set.end()) set.emplace_back(value);
}

// The device being built from one message's strings.
class Builder {
 public:
  absl::Status Add(absl::string_view key, absl::string_view value);
  absl::StatusOr<MonitorDevice> Finish() &&;

 private:
  void Set(absl::string_view key, absl::string_view value);
  absl::Status Amend(absl::string_view key, absl::string_view value);

  MonitorDevice device_;
  std::optional<std::string> major_, minor_;
  std::vector<std::string> devlinks_, current_tags_;
  bool has_devpath_ = false, has_subsystem_ = false, has_seqnum_ = false;
};

void Builder::Set(absl::string_view key, absl::string_view value) {
  udev::SetProperty(device_.properties, key, value);
}

absl::Status Builder::Add(absl::string_view key, absl::string_view value) {
  if (key == "MAJOR") {
    major_ = std::string(value);
  } else if (key == "MINOR") {
    minor_ = std::string(value);
  } else {
    return Amend(key, value);
  }
  return absl::OkStatus();
}

absl::Status Builder::Amend(absl::string_view key, absl::string_view value) {
  constexpr uint64_t kU64 = std::numeric_limits<uint64_t>::max();
  if (key == "DEVPATH") {
    std::optional<std::string> devpath = SimplifiedDevpath(value);
    if (!devpath) return Drop("DEVPATH is not beneath /sys");
    device_.devpath = *devpath;
    has_devpath_ = true;
    Set(key, *devpath);
  } else if (key == "DEVNAME") {
    Set(key, absl::StartsWith(value, "/") ? std::string(value) : absl::StrCat("/dev/", value));
  } else if (key == "USEC_INITIALIZED") {
    const std::optional<uint64_t> usec = ParseUnsigned(value, kU64);
    if (!usec) return Drop("bad USEC_INITIALIZED");
    Set(key, absl::StrCat(*usec));
  } else if (key == "DEVLINKS") {
    for (absl::string_view link : absl::StrSplit(value, absl::ByAnyChar(kWhitespace), absl::SkipEmpty())) {
      AddUnique(devlinks_, link);
    }
  } else if (key == "TAGS" || key == "CURRENT_TAGS") {
    absl::StatusOr<std::vector<std::string>> tags = SplitTags(value);
    if (!tags.ok()) return tags.status();
    for (const std::string& tag : *tags) {
      AddUnique(device_.tags, tag);
      if (key == "CURRENT_TAGS") AddUnique(current_tags_, tag);
    }
  } else if (key == "UDEV_DATABASE_VERSION") {
    // The database format's version: sd-device keeps it out of the properties.
  } else {
    bool valid = true;
    if (key == "ACTION") {
      valid = ValidAction(value);
      device_.action = std::string(value);
    } else if (key == "SEQNUM") {
      valid = ParseUnsigned(value, kU64).value_or(0) != 0;
      has_seqnum_ = true;
    } else if (key == "DISKSEQ") {
      valid = ParseUnsigned(value, kU64).value_or(0) != 0;
    } else if (key == "SUBSYSTEM") {
      device_.subsystem = std::string(value);
      has_subsystem_ = true;
    } else if (key == "DEVTYPE") {
      device_.devtype = std::string(value);
    } else if (key == "IFINDEX") {
      valid = ParseInt(value).value_or(0) > 0;
    } else if (key == "DEVMODE") {
      valid = ParseUnsigned(value, 07777).has_value();
    } else if (key == "DEVUID" || key == "DEVGID") {
      valid = ValidId(value);
    }
    if (!valid) return Drop(absl::StrCat("bad ", key));
    Set(key, value);
  }
  return absl::OkStatus();
}

absl::StatusOr<MonitorDevice> Builder::Finish() && {
  constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
  // MAJOR 0 means no device node: neither number is kept (nor MINOR checked).
  if (major_) {
    const std::optional<uint64_t> major = ParseUnsigned(*major_, kU32);
    if (!major || *major >= kMajorLimit) return Drop("bad MAJOR");
    if (*major != 0) {
      if (minor_ && ParseUnsigned(*minor_, kU32).value_or(kMinorLimit) >= kMinorLimit) {
        return Drop("bad MINOR");
      }
      Set("MAJOR", *major_);
      if (minor_) Set("MINOR", *minor_);
    }
  }
  if (!has_devpath_ || !has_subsystem_ || device_.action.empty() || !has_seqnum_) {
    return Drop("lacks DEVPATH, SUBSYSTEM, ACTION or SEQNUM");
  }
  if (device_.subsystem == "drivers" && !HasDriverSubsystem(device_.devpath)) {
    return Drop("a drivers event without its bus");
  }
  if (!devlinks_.empty()) Set("DEVLINKS", absl::StrJoin(devlinks_, " "));
  // Empty tags are kept for matching and never printed.
  const auto set_tags = [this](absl::string_view key, const std::vector<std::string>& tags) {
    std::vector<absl::string_view> printed;
    for (const std::string& tag : tags) {
      if (!tag.empty()) printed.push_back(tag);
    }
    if (!printed.empty()) Set(key, absl::StrCat(":", absl::StrJoin(printed, ":"), ":"));
  };
  set_tags("TAGS", device_.tags);
  set_tags("CURRENT_TAGS", current_tags_);
  return std::move(device_);
}

uint32_t GetBe32(absl::string_view in, size_t at) {
  uint32_t be;
  std::memcpy(&be, in.data() + at, 4);
  return ntohl(be);
}

// The KEY=VALUE\0 strings of a datagram, by its format.
absl::StatusOr<absl::string_view> PropertyStrings(absl::string_view datagram) {
  if (datagram.size() < kMinDatagram) return Drop("shorter than 32 bytes");
  if (datagram.substr(0, kLibudevPrefix.size()) == kLibudevPrefix) {
    if (GetBe32(datagram, kMagicAt) != kLibudevMagic) return Drop("bad libudev magic");
    // properties_off is in the sender's byte order; the length field is not read.
    uint32_t off;
    std::memcpy(&off, datagram.data() + kPropertiesOffAt, 4);
    if (uint64_t{off} + kMinDatagram > datagram.size()) return Drop("properties outside the message");
    return datagram.substr(off);
  }
  const size_t nul = datagram.find('\0');
  if (nul == absl::string_view::npos || nul + 1 >= datagram.size()) return Drop("no properties");
  if (!absl::StrContains(datagram.substr(0, nul), "@/")) return Drop("not a kernel uevent header");
  return datagram.substr(nul + 1);
}

}  // namespace

absl::StatusOr<MonitorDevice> ParseMonitorDatagram(absl::string_view datagram) {
  absl::StatusOr<absl::string_view> strings = PropertyStrings(datagram);
  if (!strings.ok()) return strings.status();
  Builder builder;
  absl::string_view rest = *strings;
  while (!rest.empty()) {
    const size_t nul = rest.find('\0');
    if (nul == absl::string_view::npos) return Drop("unterminated property");
    absl::string_view entry = rest.substr(0, nul);
    rest.remove_prefix(nul + 1);
    // Some drivers end a value in a newline: the value stops at the first one.
    entry = entry.substr(0, entry.find_first_of("\n\r"));
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) return Drop("property without '='");
    if (absl::Status s = builder.Add(entry.substr(0, eq), entry.substr(eq + 1)); !s.ok()) return s;
  }
  return std::move(builder).Finish();
}

}  // namespace hotring::hotplug::udevadm

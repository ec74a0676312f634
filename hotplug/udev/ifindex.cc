#include "hotplug/udev/ifindex.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

namespace hotring::hotplug::udev {

std::optional<int> ParseIfindex(absl::string_view text) {
  std::string s(text);
  size_t at = s.find_first_not_of(" \t\n\r");
  if (at == std::string::npos) return std::nullopt;
  int base = 0;
  if (s.size() - at >= 2 && s[at] == '0' && (s[at + 1] == 'b' || s[at + 1] == 'B')) {
    base = 2;
    at += 2;
  } else if (s.size() - at >= 2 && s[at] == '0' && (s[at + 1] == 'o' || s[at + 1] == 'O')) {
    base = 8;
    at += 2;
  }
  const char* start = s.c_str() + at;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(start, &end, base);
  if (errno != 0 || end == start || *end != '\0' || value <= 0 || value > INT_MAX) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace hotring::hotplug::udev

#include "hotplug/udev/net_naming.h"

#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_split.h"

namespace hotring::hotplug::udev {
namespace {

constexpr uint32_t kV238 = 0;
constexpr uint32_t kV239 = kV238 | kNamingSrIovV | kNamingNparAri;
constexpr uint32_t kV240 = kV239 | kNamingInfiniband | kNamingZeroAcpiIndex | kNamingAllowRerenames;
constexpr uint32_t kV241 = kV240 | kNamingStableVirtualMacs;
constexpr uint32_t kV243 = kV241 | kNamingNetdevsim | kNamingLabelNoPrefix;
constexpr uint32_t kV245 = kV243 | kNamingNspawnLongHash;
constexpr uint32_t kV247 = kV245 | kNamingBridgeNoSlot;
constexpr uint32_t kV249 = kV247 | kNamingSlotFunctionId | kNaming16BitIndex | kNamingReplaceStrictly;
constexpr uint32_t kV250 = kV249 | kNamingXenVif;
constexpr uint32_t kV251 = kV250 | kNamingBridgeMultifunctionSlot;
constexpr uint32_t kV252 = kV251 | kNamingDevicetreeAliases;

constexpr NamingScheme kSchemes[] = {
    {"v238", kV238}, {"v239", kV239}, {"v240", kV240}, {"v241", kV241},
    {"v243", kV243}, {"v245", kV245}, {"v247", kV247}, {"v249", kV249},
    {"v250", kV250}, {"v251", kV251}, {"v252", kV252},
};

}  // namespace

std::optional<uint64_t> ParseUnsigned(absl::string_view text, int base, uint64_t max) {
  const std::string s(text);
  const char* p = s.c_str();
  while (absl::ascii_isspace(static_cast<unsigned char>(*p))) ++p;
  if (*p == '-') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(p, &end, base);
  if (errno != 0 || end == p || *end != '\0' || v > max) return std::nullopt;
  return v;
}

std::optional<NamingScheme> NamingSchemeFromName(absl::string_view name) {
  for (const NamingScheme& s : kSchemes) {
    if (s.name == name) return s;
  }
  if (name == "latest") return kSchemes[std::size(kSchemes) - 1];
  return std::nullopt;
}

NamingScheme NamingSchemeFor(absl::string_view kernel_cmdline, std::optional<absl::string_view> env) {
  std::optional<std::string> from_cmdline;
  for (absl::string_view word : absl::StrSplit(kernel_cmdline, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&word, "net.naming-scheme=")) from_cmdline = std::string(word);
  }
  std::optional<std::string> chosen;
  if (env.has_value()) {
    if (absl::StartsWith(*env, ":")) {
      chosen = from_cmdline.has_value() ? *from_cmdline : std::string(env->substr(1));
    } else {
      chosen = std::string(*env);
    }
  } else {
    chosen = from_cmdline;
  }
  if (chosen.has_value()) {
    if (const std::optional<NamingScheme> s = NamingSchemeFromName(*chosen); s.has_value()) return *s;
  }
  return *NamingSchemeFromName("v252");
}

}  // namespace hotring::hotplug::udev

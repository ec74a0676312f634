// The interface naming schemes systemd-udevd 252 knows (v238 ... v252, "latest"), chosen by
// `net.naming-scheme=` on the kernel command line or NET_NAMING_SCHEME, as net_id and
// net_setup_link use them; and systemd's parse of unsigned numbers the two share. Pure.
#ifndef HOTRING_HOTPLUG_UDEV_NET_NAMING_H_
#define HOTRING_HOTPLUG_UDEV_NET_NAMING_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace hotring::hotplug::udev {

// What a naming scheme turns on (systemd's NAMING_* flags).
enum NamingFlag : uint32_t {
  kNamingSrIovV = 1 << 0,
  kNamingNparAri = 1 << 1,
  kNamingInfiniband = 1 << 2,
  kNamingZeroAcpiIndex = 1 << 3,
  kNamingAllowRerenames = 1 << 4,
  kNamingStableVirtualMacs = 1 << 5,
  kNamingNetdevsim = 1 << 6,
  kNamingLabelNoPrefix = 1 << 7,
  kNamingNspawnLongHash = 1 << 8,
  kNamingBridgeNoSlot = 1 << 9,
  kNamingSlotFunctionId = 1 << 10,
  kNaming16BitIndex = 1 << 11,
  kNamingReplaceStrictly = 1 << 12,
  kNamingXenVif = 1 << 13,
  kNamingBridgeMultifunctionSlot = 1 << 14,
  kNamingDevicetreeAliases = 1 << 15,
};

// A naming scheme: its name ("v252") and flags. Plain data.
struct NamingScheme {
  absl::string_view name;
  uint32_t flags;
  [[nodiscard]] bool Has(uint32_t flag) const { return (flags & flag) != 0; }
};

// The scheme called `name` ("v238" ... "v252", "latest" = v252); nullopt when 252 knows none.
[[nodiscard]] std::optional<NamingScheme> NamingSchemeFromName(absl::string_view name);
// The scheme udevd 252 uses: `net.naming-scheme=` of `kernel_cmdline` (the last one), or the
// NET_NAMING_SCHEME environment value `env` (when given: it wins, unless it starts with ':',
// then the command line wins), else v252. An unknown name is ignored.
[[nodiscard]] NamingScheme NamingSchemeFor(absl::string_view kernel_cmdline,
                                           std::optional<absl::string_view> env = std::nullopt);

// strtoull(text, base) as systemd's safe_ato*u* use it: leading whitespace allowed, no minus
// sign, every other character a digit, at most `max`.
[[nodiscard]] std::optional<uint64_t> ParseUnsigned(absl::string_view text, int base,
                                                    uint64_t max = UINT64_MAX);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_NET_NAMING_H_

#include "hotplug/udev/net_setup_link.h"

#include <fnmatch.h>
#include <net/if.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"

namespace hotring::hotplug::udev {
namespace {

constexpr int kArphrdEther = 1;
constexpr int kArphrdInfiniband = 32;
// name_assign_type and addr_assign_type values (linux/netdevice.h).
constexpr unsigned kNetNamePredictable = 2;
constexpr unsigned kNetNameUser = 3;
constexpr unsigned kNetNameRenamed = 4;
constexpr unsigned kNetAddrPerm = 0;
constexpr unsigned kNetAddrRandom = 1;

// systemd's key for the persistent MAC hash (netif-util's HASH_KEY).
constexpr uint8_t kHashKey[16] = {0xd3, 0x1e, 0x48, 0xfa, 0x90, 0xfe, 0x4b, 0x4c,
                                  0x9d, 0xaf, 0xd5, 0xd7, 0xa1, 0xb1, 0x2e, 0x8a};

uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

uint64_t Le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// SipHash-2-4 (Aumasson and Bernstein), as systemd's siphash24.
uint64_t SipHash24(const uint8_t* in, size_t len, const uint8_t key[16]) {
  const uint64_t k0 = Le64(key), k1 = Le64(key + 8);
  uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
  auto round = [&] {
    v0 += v1; v1 = Rotl(v1, 13); v1 ^= v0; v0 = Rotl(v0, 32);
    v2 += v3; v3 = Rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = Rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = Rotl(v1, 17); v1 ^= v2; v2 = Rotl(v2, 32);
  };
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const uint64_t m = Le64(in + i);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t b = static_cast<uint64_t>(len) << 56;
  for (size_t j = 0; i + j < len; ++j) b |= static_cast<uint64_t>(in[i + j]) << (8 * j);
  v3 ^= b;
  round();
  round();
  v0 ^= b;
  v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

std::optional<std::vector<uint8_t>> MachineIdBytes(absl::string_view id) {
  id = absl::StripAsciiWhitespace(id);
  if (id.size() != 32) return std::nullopt;
  std::vector<uint8_t> out;
  for (size_t i = 0; i < 32; i += 2) {
    uint32_t v = 0;
    if (!absl::SimpleHexAtoi(id.substr(i, 2), &v)) return std::nullopt;
    out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

bool Glob(absl::string_view pattern, absl::string_view text) {
  return ::fnmatch(std::string(pattern).c_str(), std::string(text).c_str(), 0) == 0;
}

// net_condition_test_strv: a '!' pattern that matches refuses; else some positive one must
// match (when there is any).
bool TestStrv(const std::vector<std::string>& patterns, const std::optional<std::string>& text) {
  if (patterns.empty()) return true;
  bool match = false, positive = false;
  for (absl::string_view p : patterns) {
    const bool invert = absl::ConsumePrefix(&p, "!");
    positive = positive || !invert;
    if (text.has_value() && Glob(p, *text)) {
      if (invert) return false;
      match = true;
    }
  }
  return positive ? match : true;
}

bool ValidName(absl::string_view name) {
  if (name.empty() || name.size() >= IFNAMSIZ || name == "." || name == "..") return false;
  bool numeric = true;
  for (unsigned char c : name) {
    if (c >= 127 || c <= 32 || c == ':' || c == '/') return false;
    numeric = numeric && absl::ascii_isdigit(c);
  }
  return !numeric;
}

// The ARPHRD name net_get_type_string falls back on (lower case) for the types links have.
std::string TypeName(int iftype) {
  switch (iftype) {
    case 1: return "ether";
    case 32: return "infiniband";
    case 256: return "slip";
    case 512: return "ppp";
    case 768: return "tunnel";
    case 769: return "tunnel6";
    case 772: return "loopback";
    case 776: return "sit";
    case 778: return "ipgre";
    case 801: return "ieee80211";
    case 803: return "ieee80211_radiotap";
    case 823: return "ip6gre";
    case 824: return "netlink";
    case 65534: return "none";
    default: return "";
  }
}

std::optional<std::string> PolicyName(const BuiltinDevice& device, NamePolicy policy) {
  absl::string_view key;
  switch (policy) {
    case NamePolicy::kDatabase: key = "ID_NET_NAME_FROM_DATABASE"; break;
    case NamePolicy::kOnboard: key = "ID_NET_NAME_ONBOARD"; break;
    case NamePolicy::kSlot: key = "ID_NET_NAME_SLOT"; break;
    case NamePolicy::kPath: key = "ID_NET_NAME_PATH"; break;
    case NamePolicy::kMac: key = "ID_NET_NAME_MAC"; break;
    case NamePolicy::kKernel:
    case NamePolicy::kKeep: return std::nullopt;
  }
  const std::optional<absl::string_view> v = device.Property(key);
  if (!v.has_value()) return std::nullopt;
  return std::string(*v);
}

std::optional<unsigned> UnsignedAttribute(const BuiltinDevice& device, absl::string_view name) {
  const std::optional<std::string> text = device.sysfs.Attribute(device.devpath, name);
  if (!text.has_value()) return std::nullopt;
  const std::optional<uint64_t> v = ParseUnsigned(*text, 0, UINT32_MAX);
  if (!v.has_value()) return std::nullopt;
  return static_cast<unsigned>(*v);
}

bool Matches(const LinkConfig& c, const BuiltinDevice& device, const LinkFacts& link, absl::string_view ifname) {
  if (!c.mac.empty() && std::find(c.mac.begin(), c.mac.end(), link.hw_addr) == c.mac.end()) return false;
  if (!c.permanent_mac.empty() && (link.permanent_hw_addr.empty() ||
                                   std::find(c.permanent_mac.begin(), c.permanent_mac.end(),
                                             link.permanent_hw_addr) == c.permanent_mac.end())) {
    return false;
  }
  std::optional<std::string> path;
  if (const auto p = device.Property("ID_PATH")) path = std::string(*p);
  if (!TestStrv(c.path, path)) return false;
  if (!TestStrv(c.driver, link.driver.empty() ? std::nullopt : std::optional<std::string>(link.driver))) return false;
  std::string type = device.DevType();
  if (type.empty()) type = TypeName(link.iftype);
  if (!TestStrv(c.type, type.empty() ? std::nullopt : std::optional<std::string>(type))) return false;
  if (!TestStrv(c.kind, link.kind.empty() ? std::nullopt : std::optional<std::string>(link.kind))) return false;
  if (!TestStrv(c.original_name, std::string(ifname))) return false;
  for (absl::string_view p : c.property) {
    const bool invert = absl::ConsumePrefix(&p, "!");
    const size_t eq = p.find('=');
    const std::optional<absl::string_view> value = device.Property(p.substr(0, eq));
    const bool v = value.has_value() && Glob(p.substr(eq + 1), *value);
    if (invert ? v : !v) return false;
  }
  return true;
}

// link_generate_new_hw_addr + net_verify_hardware_address: the address to set, if any.
std::optional<HwAddr> NewMac(const LinkConfig& c, const BuiltinDevice& device, const LinkFacts& link,
                             std::optional<unsigned> addr_assign_type, const NetSetupLinkContext& ctx,
                             absl::string_view ifname) {
  if (link.hw_addr.empty()) return std::nullopt;
  HwAddr mac;
  bool is_static = false;
  if (c.mac_policy == MacPolicy::kNone) {
    mac = c.mac_address;
    is_static = true;
  } else if ((link.iftype == kArphrdEther || link.iftype == kArphrdInfiniband) && addr_assign_type.has_value() &&
             (*addr_assign_type == kNetAddrPerm || *addr_assign_type == kNetAddrRandom) &&
             (c.mac_policy == MacPolicy::kRandom) != (*addr_assign_type == kNetAddrRandom)) {
    const size_t len = link.iftype == kArphrdEther ? 6 : 20;
    mac.assign(len, 0);
    uint8_t* p = link.iftype == kArphrdEther ? mac.data() : mac.data() + 12;
    const size_t n = link.iftype == kArphrdEther ? 6 : 8;
    if (c.mac_policy == MacPolicy::kRandom) {
      for (;;) {
        if (::getrandom(p, n, 0) != static_cast<ssize_t>(n)) return std::nullopt;
        if (std::any_of(p, p + n, [](uint8_t b) { return b != 0; }) &&
            !(n == 6 && std::all_of(p, p + n, [](uint8_t b) { return b == 0xff; }))) {
          break;
        }
      }
    } else {
      std::optional<std::string> name;
      for (absl::string_view key : {"ID_NET_NAME_ONBOARD", "ID_NET_NAME_SLOT", "ID_NET_NAME_PATH", "ID_NET_NAME_MAC"}) {
        if (const auto v = device.Property(key)) {
          name = std::string(*v);
          break;
        }
      }
      if (!name.has_value() && ctx.scheme.Has(kNamingStableVirtualMacs)) name = std::string(ifname);
      if (!name.has_value()) return std::nullopt;
      const std::optional<HwAddr> persistent = PersistentMac(ctx.configs->facts().machine_id, *name);
      if (!persistent.has_value()) return std::nullopt;
      std::copy(persistent->begin(), persistent->begin() + static_cast<long>(n), p);
    }
  }
  if (mac.empty()) return std::nullopt;
  if (mac.size() != (link.iftype == kArphrdEther ? 6u : link.iftype == kArphrdInfiniband ? 20u : 0u)) {
    return std::nullopt;
  }
  if (link.iftype == kArphrdEther) {
    if (std::all_of(mac.begin(), mac.end(), [](uint8_t b) { return b == 0; })) return std::nullopt;
    if (std::all_of(mac.begin(), mac.end(), [](uint8_t b) { return b == 0xff; })) return std::nullopt;
    mac[0] &= 0xfe;
    if (!is_static) mac[0] |= 0x02;
  } else {
    if (std::all_of(mac.begin() + 12, mac.end(), [](uint8_t b) { return b == 0; })) return std::nullopt;
    if (link.hw_addr.size() != 20) return std::nullopt;
    std::copy(link.hw_addr.begin(), link.hw_addr.begin() + 12, mac.begin());
  }
  if (mac == link.hw_addr) return std::nullopt;
  return mac;
}

// net.ifnames= on the kernel command line (the last one): false turns NamePolicy= off.
bool NamePolicyEnabled(absl::string_view cmdline) {
  bool enabled = true;
  for (absl::string_view word : absl::StrSplit(cmdline, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&word, "net.ifnames")) continue;
    if (word.empty()) {
      enabled = true;
      continue;
    }
    if (!absl::ConsumePrefix(&word, "=")) continue;
    const std::string v = absl::AsciiStrToLower(word);
    if (v == "0" || v == "no" || v == "n" || v == "false" || v == "f" || v == "off") enabled = false;
    if (v == "1" || v == "yes" || v == "y" || v == "true" || v == "t" || v == "on") enabled = true;
  }
  return enabled;
}

}  // namespace

std::optional<HwAddr> PersistentMac(absl::string_view machine_id, absl::string_view name) {
  std::optional<std::vector<uint8_t>> data = MachineIdBytes(machine_id);
  if (!data.has_value()) return std::nullopt;
  data->insert(data->end(), name.begin(), name.end());
  const uint64_t hash = SipHash24(data->data(), data->size(), kHashKey);
  HwAddr mac(6);
  for (int i = 0; i < 6; ++i) mac[static_cast<size_t>(i)] = static_cast<uint8_t>(hash >> (8 * i));
  return mac;
}

absl::StatusOr<NetSetupLinkResult> NetSetupLink(const BuiltinDevice& device, absl::Span<const std::string> argv,
                                                const NetSetupLinkContext& ctx) {
  if (argv.size() > 1) return absl::InvalidArgumentError("net_setup_link: takes no arguments");
  if (ctx.configs == nullptr || ctx.system == nullptr) {
    return absl::FailedPreconditionError("net_setup_link: no link configuration loaded");
  }
  NetSetupLinkResult result;
  const std::string ifname = SysnameOf(device.devpath);
  std::optional<absl::string_view> index_text = device.Property("IFINDEX");
  std::optional<std::string> from_file;
  if (!index_text.has_value() && (from_file = UeventValue(device.sysfs, device.devpath, "IFINDEX"))) {
    index_text = *from_file;
  }
  int ifindex = 0;
  if (!index_text.has_value() || !absl::SimpleAtoi(*index_text, &ifindex) || ifindex <= 0) {
    return absl::NotFoundError("net_setup_link: no IFINDEX");
  }
  const std::string action(device.Property("ACTION").value_or("add"));
  const std::optional<unsigned> name_assign_type = UnsignedAttribute(device, "name_assign_type");
  // Unreadable, they stay 0 as in udevd's zeroed Link: unknown name, permanent address.
  const std::optional<unsigned> addr_assign_type = UnsignedAttribute(device, "addr_assign_type").value_or(0);
  absl::StatusOr<LinkFacts> facts = ctx.system->Facts(ifindex, ifname);
  // The interface went away: nothing to do (udevd returns success).
  if (absl::IsNotFound(facts.status())) return result;
  if (!facts.ok()) return facts.status();
  if (!facts->driver.empty()) result.properties.emplace_back("ID_NET_DRIVER", facts->driver);
  // Loopback interfaces are never configured.
  if ((facts->flags & IFF_LOOPBACK) != 0) return result;
  const LinkConfig* config = nullptr;
  for (const LinkConfig& c : ctx.configs->configs()) {
    if (Matches(c, device, *facts, ifname)) {
      config = &c;
      break;
    }
  }
  if (config == nullptr) return result;
  LinkSetup setup{.config_file = config->filename, .new_name = ifname};
  if (action == "add" || action == "bind" || action == "move") {
    setup.new_mac = NewMac(*config, device, *facts, addr_assign_type, ctx, ifname);
    // link_generate_new_name.
    const unsigned assign = name_assign_type.value_or(0);
    const bool user_named = assign == kNetNameUser || assign == kNetNameRenamed;
    bool decided = action == "move" || (user_named && !ctx.scheme.Has(kNamingAllowRerenames));
    const bool name_policy_on = NamePolicyEnabled(ctx.configs->facts().kernel_cmdline);
    if (!decided && name_policy_on) {
      for (NamePolicy p : config->name_policy) {
        if (p == NamePolicy::kKernel) {
          if (assign != kNetNamePredictable) continue;
          decided = true;
          break;
        }
        if (p == NamePolicy::kKeep) {
          if (!user_named) continue;
          decided = true;
          break;
        }
        if (const std::optional<std::string> name = PolicyName(device, p); name.has_value() && ValidName(*name)) {
          setup.new_name = *name;
          decided = true;
          break;
        }
      }
    }
    if (!decided && !config->name.empty()) setup.new_name = config->name;
    // link_apply_alternative_names.
    std::vector<std::string> alt = config->alternative_names;
    for (NamePolicy p : config->alternative_names_policy) {
      if (std::optional<std::string> name = PolicyName(device, p); name.has_value() && !name->empty()) {
        alt.push_back(std::move(*name));
      }
    }
    alt.erase(std::remove(alt.begin(), alt.end(), ifname), alt.end());
    for (const std::string& have : facts->alternative_names) alt.erase(std::remove(alt.begin(), alt.end(), have), alt.end());
    std::sort(alt.begin(), alt.end());
    alt.erase(std::unique(alt.begin(), alt.end()), alt.end());
    setup.new_alternative_names = std::move(alt);
  }
  result.properties.emplace_back("ID_NET_LINK_FILE", config->filename);
  result.properties.emplace_back("ID_NET_NAME", setup.new_name);
  result.setup = std::move(setup);
  return result;
}

}  // namespace hotring::hotplug::udev

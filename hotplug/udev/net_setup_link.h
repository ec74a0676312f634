// udevd 252's `net_setup_link` builtin: systemd.link files (/etc, /run, /usr/local/lib,
// /usr/lib and /lib "systemd/network/*.link", an earlier directory hiding the same name, with
// "NAME.link.d/*.conf" drop-ins; files in name order, the first whose [Match] matches applies)
// and what the applying one asks for: the interface's new name (NamePolicy=, Name=), its MAC
// address (MACAddressPolicy=persistent|random|none, MACAddress=) and alternative names
// (AlternativeNamesPolicy=, AlternativeName=). The builtin sets ID_NET_DRIVER, ID_NET_LINK_FILE
// and ID_NET_NAME; the rename, the MAC and the alternative names come back as a LinkSetup for
// the caller to apply over rtnetlink. The other [Link] settings (ethtool: speed, offloads, WoL,
// queues, MTU, SR-IOV) are not applied.
#ifndef HOTRING_HOTPLUG_UDEV_NET_SETUP_LINK_H_
#define HOTRING_HOTPLUG_UDEV_NET_SETUP_LINK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/udev/builtin_device.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/net_naming.h"

namespace hotring::hotplug::udev {

using HwAddr = std::vector<uint8_t>;

// Where udevd 252 reads .link files, first hiding later.
inline constexpr absl::string_view kNetworkDirs[] = {
    "/etc/systemd/network", "/run/systemd/network", "/usr/local/lib/systemd/network",
    "/usr/lib/systemd/network", "/lib/systemd/network"};

enum class NamePolicy { kKernel, kKeep, kDatabase, kOnboard, kSlot, kPath, kMac };
enum class MacPolicy { kNone, kPersistent, kRandom };

// One .link file (with its drop-ins) as parsed. Plain data.
struct LinkConfig {
  std::string filename;
  // [Match]
  std::vector<HwAddr> mac, permanent_mac;
  std::vector<std::string> original_name, path, driver, type, kind, property;
  // [Link]
  std::vector<NamePolicy> name_policy;
  std::string name;
  MacPolicy mac_policy = MacPolicy::kNone;
  HwAddr mac_address;
  std::vector<NamePolicy> alternative_names_policy;
  std::vector<std::string> alternative_names;
};

// The system facts [Match]'s conditions test (Host=, Virtualization=, KernelCommandLine=,
// KernelVersion=, Architecture=), given by the caller.
struct LinkSystemFacts {
  std::string hostname;
  std::string machine_id;       // 32 hex digits (/etc/machine-id); also the persistent MAC's seed
  std::string virtualization;   // "none", "kvm", "qemu", "docker", ... (systemd-detect-virt's names)
  bool virtualization_is_container = false;
  std::string kernel_cmdline;
  std::string kernel_release;   // uname -r
  std::string architecture;     // systemd's names: "x86-64", "arm64", "arm", ...
};

// The .link files, loaded once (udevd's builtin init). Owns them.
class LinkConfigs {
 public:
  // Reads `dirs` (kNetworkDirs by default). Files whose conditions do not hold for `facts`, or
  // with an empty [Match], are left out as udevd leaves them out; what udevd warns about goes to
  // `diagnostics` ("FILE:LINE: what"). An unreadable directory is skipped.
  [[nodiscard]] static LinkConfigs Load(const LinkSystemFacts& facts,
                                        absl::Span<const absl::string_view> dirs = kNetworkDirs,
                                        std::vector<std::string>* diagnostics = nullptr);
  // Files given as (path, content) in match order, each with its drop-ins' contents after it.
  [[nodiscard]] static LinkConfigs Parse(
      const LinkSystemFacts& facts,
      absl::Span<const std::pair<std::string, std::vector<std::string>>> files,
      std::vector<std::string>* diagnostics = nullptr);

  [[nodiscard]] const std::vector<LinkConfig>& configs() const { return configs_; }
  [[nodiscard]] const LinkSystemFacts& facts() const { return facts_; }

 private:
  std::vector<LinkConfig> configs_;
  LinkSystemFacts facts_;
};

// What udevd asks rtnetlink and ethtool about the interface.
struct LinkFacts {
  int iftype = 0;              // ARPHRD_*
  unsigned flags = 0;          // IFF_*
  std::string kind;            // IFLA_INFO_KIND ("veth", "bridge"; "" for hardware)
  HwAddr hw_addr;
  HwAddr permanent_hw_addr;    // IFLA_PERM_ADDRESS, else ethtool's
  std::string driver;          // ethtool's driver name
  std::vector<std::string> alternative_names;  // the names it already has
};

// Asks the kernel about an interface.
class LinkSystem {
 public:
  virtual ~LinkSystem() = default;
  // NotFound when the interface is gone (udevd then does nothing, successfully).
  [[nodiscard]] virtual absl::StatusOr<LinkFacts> Facts(int ifindex, absl::string_view ifname) = 0;
};

// The kernel's answers: RTM_GETLINK over a route netlink socket, ethtool ioctls for the driver
// and a permanent address the link message lacks. Holds no descriptor between calls.
class RealLinkSystem final : public LinkSystem {
 public:
  [[nodiscard]] absl::StatusOr<LinkFacts> Facts(int ifindex, absl::string_view ifname) override;
};

// What the caller is to do to the interface. Owns its data.
struct LinkSetup {
  std::string config_file;
  std::string new_name;                       // the current name when not renamed
  std::optional<HwAddr> new_mac;              // set when the address is to change
  std::vector<std::string> new_alternative_names;  // to add: sorted, unique, none it has
};

// What the builtin reads beyond the device.
struct NetSetupLinkContext {
  const LinkConfigs* configs = nullptr;
  LinkSystem* system = nullptr;
  NamingScheme scheme = *NamingSchemeFromName("v252");
};

// The builtin's result: its properties, and the setup when a file applied.
struct NetSetupLinkResult {
  Properties properties;
  std::optional<LinkSetup> setup;
};

[[nodiscard]] absl::StatusOr<NetSetupLinkResult> NetSetupLink(const BuiltinDevice& device,
                                                              absl::Span<const std::string> argv,
                                                              const NetSetupLinkContext& context);

// The MAC address MACAddressPolicy=persistent gives an interface whose persistent name (or,
// under naming schemes with stable virtual MACs, its name) is `name`, on machine `machine_id`:
// SipHash-2-4 of the machine id and the name, as systemd computes it.
[[nodiscard]] std::optional<HwAddr> PersistentMac(absl::string_view machine_id, absl::string_view name);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_NET_SETUP_LINK_H_

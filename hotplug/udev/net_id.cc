#include "hotplug/udev/net_id.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/utf8.h"
#include "hotplug/udev/hwdb_builtin.h"

namespace hotring::hotplug::udev {
namespace {

// Names are at most ALTIFNAMSIZ - 1 bytes: a longer one is dropped, as udevd's fixed buffers do.
constexpr size_t kAltIfNameSize = 128;
constexpr int kArphrdEther = 1;
constexpr int kArphrdSlip = 256;
constexpr int kArphrdInfiniband = 32;
constexpr int kNetAddrPerm = 0;

std::optional<int64_t> ParseInt(absl::string_view text) {
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0' || v < INT32_MIN || v > INT32_MAX) return std::nullopt;
  return v;
}

// One "%x" of sscanf: optional whitespace, sign and "0x", hex digits.
bool ScanHex(absl::string_view& in, unsigned* out) {
  size_t i = 0;
  while (i < in.size() && absl::ascii_isspace(static_cast<unsigned char>(in[i]))) ++i;
  if (i + 1 < in.size() && in[i] == '0' && (in[i + 1] == 'x' || in[i + 1] == 'X') && i + 2 < in.size() &&
      absl::ascii_isxdigit(static_cast<unsigned char>(in[i + 2]))) {
    i += 2;
  }
  const size_t start = i;
  uint64_t v = 0;
  while (i < in.size() && absl::ascii_isxdigit(static_cast<unsigned char>(in[i]))) {
    const char c = absl::ascii_tolower(in[i]);
    v = v * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    ++i;
  }
  if (i == start) return false;
  *out = static_cast<unsigned>(v);
  in.remove_prefix(i);
  return true;
}

// One "%u" of sscanf.
bool ScanDecimal(absl::string_view& in, unsigned* out) {
  size_t i = 0;
  while (i < in.size() && absl::ascii_isspace(static_cast<unsigned char>(in[i]))) ++i;
  const size_t start = i;
  uint64_t v = 0;
  while (i < in.size() && absl::ascii_isdigit(static_cast<unsigned char>(in[i]))) v = v * 10 + (in[i++] - '0');
  if (i == start) return false;
  *out = static_cast<unsigned>(v);
  in.remove_prefix(i);
  return true;
}

bool ScanLiteral(absl::string_view& in, absl::string_view literal) {
  if (!absl::StartsWith(in, literal)) return false;
  in.remove_prefix(literal.size());
  return true;
}

// Appends to a name buffer of ALTIFNAMSIZ as strpcpyf does: false (and the name emptied by the
// caller) once it no longer fits.
bool Append(std::string& name, absl::string_view part) {
  name.append(part.data(), part.size());
  return name.size() < kAltIfNameSize;
}

// What udevd reads of the interface (LinkInfo).
struct LinkInfo {
  int ifindex = 0;
  int iflink = 0;
  int iftype = 0;
  std::string devtype;
  std::string phys_port_name;
  std::vector<uint8_t> hw_addr;
};

// The names found (NetNames).
enum class NameType { kUndef, kPci, kUsb, kBcma, kVirtio, kCcw, kVio, kXenvif, kPlatform, kNetdevsim, kDevicetree };
struct Names {
  NameType type = NameType::kUndef;
  std::string pcidev;
  std::string pci_slot, pci_path, pci_onboard;
  std::optional<std::string> pci_onboard_label;
  std::string usb_ports, bcma_core, ccw_busid, vio_slot, xen_slot, platform_path, netdevsim_path,
      devicetree_onboard;
};

// True when `s` is valid UTF-8 (utf8_is_valid).
bool IsValidUtf8(absl::string_view s) {
  while (!s.empty()) {
    const size_t n = Utf8SequenceLength(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

// Parses "aa:bb:..." (or "aa-bb-..." / "aabb.ccdd..." as parse_hw_addr does for the common
// cases): colon-separated hex bytes; nullopt otherwise.
std::optional<std::vector<uint8_t>> ParseHwAddr(absl::string_view text) {
  std::vector<uint8_t> out;
  for (absl::string_view part : absl::StrSplit(text, ':')) {
    if (part.empty() || part.size() > 2) return std::nullopt;
    uint32_t v = 0;
    if (!absl::SimpleHexAtoi(part, &v)) return std::nullopt;
    out.push_back(static_cast<uint8_t>(v));
  }
  if (out.empty() || out.size() > 32) return std::nullopt;
  return out;
}

class NetIdRun {
 public:
  NetIdRun(const BuiltinDevice& device, const NetIdContext& context)
      : dev_(device), sysfs_(device.sysfs), ctx_(context) {}

  absl::StatusOr<Properties> Run() {
    HOTRING_RETURN_IF_ERROR(GetLinkInfo());
    Properties out;
    // Stacked devices (VLANs, ...) are left alone.
    if (info_.ifindex != info_.iflink) return out;
    std::string prefix;
    switch (info_.iftype) {
      case kArphrdEther:
        prefix = "en";
        break;
      case kArphrdInfiniband:
        if (!ctx_.scheme.Has(kNamingInfiniband)) return out;
        prefix = "ib";
        break;
      case kArphrdSlip:
        prefix = "sl";
        break;
      default:
        return out;
    }
    if (info_.devtype == "wlan") prefix = "wl";
    if (info_.devtype == "wwan") prefix = "ww";
    out.emplace_back("ID_NET_NAMING_SCHEME", std::string(ctx_.scheme.name));

    if (NamesMac()) {
      std::string hex;
      for (uint8_t b : info_.hw_addr) absl::StrAppendFormat(&hex, "%02x", b);
      out.emplace_back("ID_NET_NAME_MAC", absl::StrCat(prefix, "x", hex));
      IeeeOui(out);
    }
    auto add = [&](absl::string_view key, absl::string_view value) {
      if (value.size() < kAltIfNameSize) out.emplace_back(std::string(key), std::string(value));
    };
    Names names;
    if (prefix == "en" && DevicetreeOnboard(names) && names.type == NameType::kDevicetree) {
      add("ID_NET_NAME_ONBOARD", absl::StrCat(prefix, names.devicetree_onboard));
    }
    if (NamesCcw(names) && names.type == NameType::kCcw) {
      add("ID_NET_NAME_PATH", absl::StrCat(prefix, names.ccw_busid));
      return out;
    }
    if (NamesVio(names) && names.type == NameType::kVio) {
      add("ID_NET_NAME_SLOT", absl::StrCat(prefix, names.vio_slot));
      return out;
    }
    if (NamesPlatform(names) && names.type == NameType::kPlatform) {
      add("ID_NET_NAME_PATH", absl::StrCat(prefix, names.platform_path));
      return out;
    }
    if (NamesNetdevsim(names) && names.type == NameType::kNetdevsim) {
      add("ID_NET_NAME_PATH", absl::StrCat(prefix, names.netdevsim_path));
      return out;
    }
    if (NamesXen(names) && names.type == NameType::kXenvif) {
      add("ID_NET_NAME_SLOT", absl::StrCat(prefix, names.xen_slot));
      return out;
    }
    if (!NamesPci(names)) return out;
    if (names.type == NameType::kPci) {
      if (!names.pci_onboard.empty()) add("ID_NET_NAME_ONBOARD", absl::StrCat(prefix, names.pci_onboard));
      if (names.pci_onboard_label.has_value()) {
        add("ID_NET_LABEL_ONBOARD",
            absl::StrCat(ctx_.scheme.Has(kNamingLabelNoPrefix) ? "" : prefix, *names.pci_onboard_label));
      }
      if (!names.pci_path.empty()) add("ID_NET_NAME_PATH", absl::StrCat(prefix, names.pci_path));
      if (!names.pci_slot.empty()) add("ID_NET_NAME_SLOT", absl::StrCat(prefix, names.pci_slot));
      return out;
    }
    if (NamesUsb(names) && names.type == NameType::kUsb) {
      if (!names.pci_path.empty()) add("ID_NET_NAME_PATH", absl::StrCat(prefix, names.pci_path, names.usb_ports));
      if (!names.pci_slot.empty()) add("ID_NET_NAME_SLOT", absl::StrCat(prefix, names.pci_slot, names.usb_ports));
      return out;
    }
    if (NamesBcma(names) && names.type == NameType::kBcma) {
      if (!names.pci_path.empty()) add("ID_NET_NAME_PATH", absl::StrCat(prefix, names.pci_path, names.bcma_core));
      if (!names.pci_slot.empty()) add("ID_NET_NAME_SLOT", absl::StrCat(prefix, names.pci_slot, names.bcma_core));
    }
    return out;
  }

 private:
  std::optional<std::string> Attr(absl::string_view devpath, absl::string_view name) const {
    return sysfs_.Attribute(devpath, name);
  }
  std::string SubsystemAt(absl::string_view devpath) const {
    return devpath == dev_.devpath ? dev_.Subsystem() : SubsystemOf(sysfs_, devpath);
  }
  std::string Syspath() const { return absl::StrCat("/sys", dev_.devpath); }

  absl::Status GetLinkInfo() {
    const std::optional<absl::string_view> ifindex = dev_.Property("IFINDEX");
    std::optional<std::string> from_file;
    if (!ifindex.has_value()) from_file = UeventValue(sysfs_, dev_.devpath, "IFINDEX");
    const std::optional<int64_t> index =
        ifindex.has_value() ? ParseInt(*ifindex) : (from_file.has_value() ? ParseInt(*from_file) : std::nullopt);
    if (!index.has_value() || *index <= 0) return absl::NotFoundError("net_id: no IFINDEX");
    info_.ifindex = static_cast<int>(*index);
    const std::optional<std::string> iflink = Attr(dev_.devpath, "iflink");
    const std::optional<int64_t> iflink_value = iflink.has_value() ? ParseInt(*iflink) : std::nullopt;
    if (!iflink_value.has_value()) return absl::NotFoundError("net_id: no iflink attribute");
    info_.iflink = static_cast<int>(*iflink_value);
    const std::optional<std::string> type = Attr(dev_.devpath, "type");
    const std::optional<int64_t> type_value = type.has_value() ? ParseInt(*type) : std::nullopt;
    if (!type_value.has_value()) return absl::NotFoundError("net_id: no type attribute");
    info_.iftype = static_cast<int>(*type_value);
    info_.devtype = dev_.DevType();
    if (std::optional<std::string> port = Attr(dev_.devpath, "phys_port_name"); port.has_value()) {
      // Debian's fix for CVE-2026-40225: a name with control characters or invalid UTF-8 is
      // not used.
      bool control = false;
      for (unsigned char c : *port) control = control || c < 0x20 || c == 0x7f;
      if (!control && IsValidUtf8(*port)) info_.phys_port_name = std::move(*port);
    }
    if (const std::optional<std::string> address = Attr(dev_.devpath, "address"); address.has_value()) {
      if (std::optional<std::vector<uint8_t>> hw = ParseHwAddr(*address); hw.has_value()) {
        info_.hw_addr = std::move(*hw);
      }
    }
    return absl::OkStatus();
  }

  bool NamesMac() const {
    if (info_.iftype == kArphrdInfiniband || info_.hw_addr.size() != 6) return false;
    const std::optional<std::string> assign = Attr(dev_.devpath, "addr_assign_type");
    if (!assign.has_value()) return false;
    const std::optional<uint64_t> v = ParseUnsigned(*assign, 0, UINT32_MAX);
    return v.has_value() && *v == kNetAddrPerm;
  }

  void IeeeOui(Properties& out) const {
    if (ctx_.hwdb == nullptr || info_.hw_addr.size() != 6) return;
    if (info_.hw_addr[0] == 0 && info_.hw_addr[1] == 0 && info_.hw_addr[2] == 0) return;
    std::string key = "OUI:";
    for (uint8_t b : info_.hw_addr) absl::StrAppendFormat(&key, "%02X", b);
    absl::StatusOr<Properties> found = HwdbLookupProperties(*ctx_.hwdb, "", key, "");
    if (!found.ok()) return;
    for (auto& p : *found) out.push_back(std::move(p));
  }

  // The device's parent, skipping virtio buses; nullopt at the top.
  std::optional<std::string> SkipVirtio(std::optional<std::string> at) const {
    while (at.has_value()) {
      const std::string subsystem = SubsystemOf(sysfs_, *at);
      if (subsystem != "virtio") break;
      at = ParentOf(sysfs_, *at);
    }
    return at;
  }

  bool DevicetreeOnboard(Names& names) const {
    if (!ctx_.scheme.Has(kNamingDevicetreeAliases) || ctx_.links == nullptr) return false;
    const std::optional<std::string> parent = ParentOf(sysfs_, dev_.devpath);
    if (!parent.has_value()) return false;
    const std::optional<std::string> node = ctx_.links->Resolve(*parent, "of_node");
    if (!node.has_value()) return false;
    constexpr absl::string_view kBase = "/firmware/devicetree/base";
    if (!absl::StartsWith(*node, kBase) || node->size() <= kBase.size() || (*node)[kBase.size()] != '/') {
      return false;
    }
    const std::string ofnode_path = node->substr(kBase.size());
    const std::string aliases = std::string(kBase) + "/aliases";
    std::vector<std::string> entries = sysfs_.List(aliases);
    for (const std::string& alias : entries) {
      if (!absl::StartsWith(alias, "ethernet")) continue;
      std::optional<std::string> value = sysfs_.Attribute(aliases, alias);
      if (!value.has_value()) continue;
      // Device-tree strings end in a NUL.
      if (const size_t nul = value->find('\0'); nul != std::string::npos) value->resize(nul);
      if (NormalizePath(*value) != NormalizePath(ofnode_path)) continue;
      const absl::string_view index = absl::string_view(alias).substr(8);
      unsigned i = 0;
      absl::string_view conflict;
      if (index.empty()) {
        conflict = "ethernet0";
      } else {
        const std::optional<uint64_t> n = ParseUnsigned(index, 0, UINT32_MAX);
        if (!n.has_value()) return false;
        i = static_cast<unsigned>(*n);
        conflict = "ethernet";
      }
      if (i == 0 && sysfs_.Attribute(aliases, conflict).has_value()) return false;
      names.devicetree_onboard = absl::StrCat("d", i);
      names.type = NameType::kDevicetree;
      return true;
    }
    return false;
  }

  static std::string NormalizePath(absl::string_view path) {
    std::string out;
    for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
      if (part == ".") continue;
      absl::StrAppend(&out, "/", part);
    }
    return out.empty() ? "/" : out;
  }

  bool NamesCcw(Names& names) const {
    std::optional<std::string> cdev = SkipVirtio(ParentOf(sysfs_, dev_.devpath));
    if (!cdev.has_value()) return false;
    const std::string subsystem = SubsystemOf(sysfs_, *cdev);
    if (subsystem != "ccwgroup" && subsystem != "ccw") return false;
    std::string bus_id = SysnameOf(*cdev);
    if (bus_id.size() != 8 && bus_id.size() != 9) return false;
    size_t start = bus_id.find_first_not_of(".0");
    if (start == std::string::npos) start = bus_id.size() - 1;
    const std::string name = absl::StrCat("c", bus_id.substr(start));
    if (name.size() >= kAltIfNameSize) return false;
    names.ccw_busid = name;
    names.type = NameType::kCcw;
    return true;
  }

  bool NamesVio(Names& names) const {
    const std::optional<std::string> parent = ParentOf(sysfs_, dev_.devpath);
    if (!parent.has_value() || SubsystemOf(sysfs_, *parent) != "vio") return false;
    // "/sys/devices/vio/%4x%4x/net/eth%u"
    absl::string_view in = Syspath();
    unsigned busid = 0, slotid = 0, ethid = 0;
    if (!ScanLiteral(in, "/sys/devices/vio/")) return false;
    if (in.size() < 8) return false;
    absl::string_view bus = in.substr(0, 4), slot = in.substr(4, 4);
    if (!ScanHex(bus, &busid) || !ScanHex(slot, &slotid)) return false;
    in.remove_prefix(8);
    if (!ScanLiteral(in, "/net/eth") || !ScanDecimal(in, &ethid)) return false;
    names.vio_slot = absl::StrCat("v", slotid);
    names.type = NameType::kVio;
    return true;
  }

  bool NamesPlatform(Names& names) const {
    const std::optional<std::string> parent = ParentOf(sysfs_, dev_.devpath);
    if (!parent.has_value() || SubsystemOf(sysfs_, *parent) != "platform") return false;
    const std::string syspath = Syspath();
    constexpr absl::string_view kTest = "/sys/devices/platform/vvvvPPPP";
    if (syspath.size() < kTest.size() + 1) return false;
    const bool four = syspath[kTest.size()] == ':';
    absl::string_view in = syspath;
    if (!ScanLiteral(in, "/sys/devices/platform/")) return false;
    // %4s / %3s: that many non-blank characters.
    const size_t vendor_len = four ? 4 : 3;
    size_t n = 0;
    while (n < vendor_len && n < in.size() && !absl::ascii_isspace(static_cast<unsigned char>(in[n]))) ++n;
    if (n == 0) return false;
    std::string vendor(in.substr(0, n));
    in.remove_prefix(n);
    // %4x:%2x (at most that many digits each).
    unsigned model = 0, instance = 0, ethid = 0;
    absl::string_view model_text = in.substr(0, std::min<size_t>(4, in.size()));
    const size_t model_before = model_text.size();
    if (!ScanHex(model_text, &model)) return false;
    in.remove_prefix(model_before - model_text.size());
    if (!ScanLiteral(in, ":")) return false;
    absl::string_view instance_text = in.substr(0, std::min<size_t>(2, in.size()));
    const size_t instance_before = instance_text.size();
    if (!ScanHex(instance_text, &instance)) return false;
    in.remove_prefix(instance_before - instance_text.size());
    if (!ScanLiteral(in, "/net/eth") || !ScanDecimal(in, &ethid)) return false;
    for (char c : vendor) {
      const bool ok = absl::ascii_isupper(static_cast<unsigned char>(c)) ||
                      (four && absl::ascii_isdigit(static_cast<unsigned char>(c)));
      if (!ok) return false;
    }
    names.platform_path = absl::StrFormat("a%s%xi%u", absl::AsciiStrToLower(vendor), model, instance);
    names.type = NameType::kPlatform;
    return true;
  }

  bool NamesNetdevsim(Names& names) const {
    if (!ctx_.scheme.Has(kNamingNetdevsim) || info_.phys_port_name.empty()) return false;
    const std::optional<std::string> sim = ParentWith(sysfs_, dev_.devpath, "netdevsim");
    if (!sim.has_value()) return false;
    absl::string_view in = SysnameOf(*sim);
    unsigned addr = 0;
    std::string sysname(in);
    absl::string_view s = sysname;
    if (!ScanLiteral(s, "netdevsim") || !ScanDecimal(s, &addr)) return false;
    const std::string name = absl::StrCat("i", addr, "n", info_.phys_port_name);
    if (name.size() >= kAltIfNameSize) return false;
    names.netdevsim_path = name;
    names.type = NameType::kNetdevsim;
    return true;
  }

  bool NamesXen(Names& names) const {
    if (!ctx_.scheme.Has(kNamingXenVif)) return false;
    const std::optional<std::string> parent = ParentOf(sysfs_, dev_.devpath);
    if (!parent.has_value() || SubsystemOf(sysfs_, *parent) != "xen") return false;
    absl::string_view p = dev_.devpath;
    if (!ScanLiteral(p, "/devices/") || !ScanLiteral(p, "vif-")) return false;
    const size_t slash = p.find('/');
    if (slash == absl::string_view::npos) return false;
    const absl::string_view id_text = p.substr(0, slash);
    // Decimal, no sign, no leading zero, no whitespace.
    if (id_text.empty() || (id_text.size() > 1 && id_text[0] == '0')) return false;
    for (char c : id_text) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    const std::optional<uint64_t> id = ParseUnsigned(id_text, 10, UINT32_MAX);
    if (!id.has_value()) return false;
    names.xen_slot = absl::StrCat("X", *id);
    names.type = NameType::kXenvif;
    return true;
  }

  bool NamesPci(Names& names) const {
    const std::optional<std::string> parent = SkipVirtio(ParentOf(sysfs_, dev_.devpath));
    if (!parent.has_value()) return false;
    if (SubsystemOf(sysfs_, *parent) == "pci") {
      names.type = NameType::kPci;
      names.pcidev = *parent;
    } else {
      const std::optional<std::string> pci = ParentWith(sysfs_, dev_.devpath, "pci");
      if (!pci.has_value()) return false;
      names.pcidev = *pci;
    }
    std::string physfn, suffix;
    if (ctx_.scheme.Has(kNamingSrIovV) && VirtfnInfo(names.pcidev, &physfn, &suffix)) {
      Names vf;
      vf.pcidev = physfn;
      PciOnboard(vf);
      PciSlot(vf);
      if (!vf.pci_onboard.empty() && vf.pci_onboard.size() + suffix.size() < kAltIfNameSize) {
        names.pci_onboard = vf.pci_onboard + suffix;
      }
      if (!vf.pci_slot.empty() && vf.pci_slot.size() + suffix.size() < kAltIfNameSize) {
        names.pci_slot = vf.pci_slot + suffix;
      }
      if (!vf.pci_path.empty() && vf.pci_path.size() + suffix.size() < kAltIfNameSize) {
        names.pci_path = vf.pci_path + suffix;
      }
    } else {
      PciOnboard(names);
      PciSlot(names);
    }
    return true;
  }

  // An SR-IOV virtual function: its physical function and "v<N>".
  bool VirtfnInfo(const std::string& pcidev, std::string* physfn, std::string* suffix) const {
    if (ctx_.links == nullptr) return false;
    const std::optional<std::string> pf = ctx_.links->Resolve(pcidev, "physfn");
    if (!pf.has_value() || !sysfs_.IsDevice(*pf)) return false;
    for (const std::string& name : sysfs_.List(*pf)) {
      if (!absl::StartsWith(name, "virtfn")) continue;
      const absl::string_view n = absl::string_view(name).substr(6);
      if (n.empty() || n.find_first_not_of("0123456789") != absl::string_view::npos) continue;
      const std::optional<std::string> vf = ctx_.links->Resolve(*pf, name);
      if (!vf.has_value() || *vf != pcidev) continue;
      *physfn = *pf;
      *suffix = absl::StrCat("v", n);
      return true;
    }
    return false;
  }

  bool IsValidOnboardIndex(uint64_t idx) const {
    return idx <= (ctx_.scheme.Has(kNaming16BitIndex) ? 0xffffu : 0x3fffu);
  }

  uint64_t DevPort() const {
    const std::optional<std::string> attr = Attr(dev_.devpath, "dev_port");
    if (!attr.has_value()) return 0;
    return ParseUnsigned(*attr, 10).value_or(0);
  }

  void PciOnboard(Names& names) const {
    std::optional<std::string> attr = Attr(names.pcidev, "acpi_index");
    if (!attr.has_value()) attr = Attr(names.pcidev, "index");
    if (!attr.has_value()) return;
    const std::optional<uint64_t> idx = ParseUnsigned(*attr, 0);
    if (!idx.has_value()) return;
    if (*idx == 0 && !ctx_.scheme.Has(kNamingZeroAcpiIndex)) return;
    if (!IsValidOnboardIndex(*idx)) return;
    const uint64_t dev_port = DevPort();
    std::string name = absl::StrCat("o", *idx);
    bool fits = name.size() < kAltIfNameSize;
    if (!info_.phys_port_name.empty()) {
      fits = fits && Append(name, absl::StrCat("n", info_.phys_port_name));
    } else if (dev_port > 0) {
      fits = fits && Append(name, absl::StrCat("d", dev_port));
    }
    names.pci_onboard = fits ? name : "";
    if (std::optional<std::string> label = Attr(names.pcidev, "label"); label.has_value()) {
      bool control = false;
      for (unsigned char c : *label) control = control || c < 0x20 || c == 0x7f;
      // Debian's fix for CVE-2026-40225 drops a label with control characters or invalid UTF-8.
      if (!control && IsValidUtf8(*label)) names.pci_onboard_label = std::move(*label);
    }
  }

  // The PCI header type's multi-function bit, from the config space.
  bool IsMultifunction(const std::string& pcidev) const {
    const std::optional<std::string> config = Attr(pcidev, "config");
    constexpr size_t kHeaderType = 0x0e;
    if (!config.has_value() || config->size() < kHeaderType + 1) return false;
    return (static_cast<unsigned char>((*config)[kHeaderType]) & 0x80) != 0;
  }

  bool IsBridge(const std::string& pcidev) const {
    const std::optional<std::string> modalias = Attr(pcidev, "modalias");
    if (!modalias.has_value() || !absl::StartsWith(*modalias, "pci:")) return false;
    const size_t s = modalias->rfind('s');
    if (s == std::string::npos || s + 1 >= modalias->size() || (*modalias)[s + 1] != 'c') return false;
    return modalias->compare(s + 2, 2, "04") == 0;
  }

  // s390's function_id: 1 found, 0 not used, -1 an error that ends the slot search.
  int SlotFromFunctionId(const std::string& pcidev, uint32_t* slot) const {
    if (!ctx_.scheme.Has(kNamingSlotFunctionId)) return 0;
    const std::optional<std::string> attr = Attr(pcidev, "function_id");
    if (!attr.has_value()) return 0;
    const std::optional<uint64_t> id = ParseUnsigned(*attr, 0);
    if (!id.has_value() || *id == 0 || *id > UINT32_MAX) return -1;
    const std::string dir = absl::StrFormat("/bus/pci/slots/%08x", *id);
    if (!sysfs_.IsDevice(dir) && sysfs_.List(dir).empty()) return -1;
    *slot = static_cast<uint32_t>(*id);
    return 1;
  }

  void PciSlot(Names& names) const {
    const std::string sysname = SysnameOf(names.pcidev);
    absl::string_view in = sysname;
    unsigned domain = 0, bus = 0, slot = 0, func = 0;
    if (!ScanHex(in, &domain) || !ScanLiteral(in, ":") || !ScanHex(in, &bus) || !ScanLiteral(in, ":") ||
        !ScanHex(in, &slot) || !ScanLiteral(in, ".") || !ScanDecimal(in, &func)) {
      return;
    }
    if (ctx_.scheme.Has(kNamingNparAri) && Attr(names.pcidev, "ari_enabled") == "1") func += slot * 8;
    uint64_t dev_port = DevPort();
    // Older kernels put an IPoIB port in dev_id and leave dev_port 0; an interface without a
    // dev_port attribute keeps no port at all (as udevd 252).
    const bool has_dev_port = Attr(dev_.devpath, "dev_port").has_value();
    if (has_dev_port && dev_port == 0 && info_.iftype == kArphrdInfiniband) {
      if (const std::optional<std::string> id = Attr(dev_.devpath, "dev_id"); id.has_value()) {
        dev_port = ParseUnsigned(*id, 10).value_or(0);
      }
    }
    const bool multifunction = func > 0 || IsMultifunction(names.pcidev);
    auto tail = [&](std::string& name) {
      bool fits = name.size() < kAltIfNameSize;
      if (multifunction) fits = fits && Append(name, absl::StrCat("f", func));
      if (!info_.phys_port_name.empty()) {
        fits = fits && Append(name, absl::StrCat("n", info_.phys_port_name));
      } else if (dev_port > 0) {
        fits = fits && Append(name, absl::StrCat("d", dev_port));
      }
      if (!fits) name.clear();
    };
    std::string path = domain > 0 ? absl::StrCat("P", domain) : "";
    absl::StrAppend(&path, "p", bus, "s", slot);
    tail(path);
    names.pci_path = path;

    // ACPI _SUN: the hotplug slot whose address the function (or a PCI parent) starts with.
    // No slots directory (or an empty one): no slot names.
    const std::vector<std::string> slots = sysfs_.List("/bus/pci/slots");
    if (slots.empty()) return;
    uint32_t hotplug_slot = 0;
    std::optional<std::string> at = names.pcidev;
    while (at.has_value()) {
      const int by_id = SlotFromFunctionId(*at, &hotplug_slot);
      if (by_id < 0) return;
      if (by_id > 0) {
        domain = 0;
        break;
      }
      const std::string at_name = SysnameOf(*at);
      for (const std::string& entry : slots) {
        const std::optional<uint64_t> i = ParseUnsigned(entry, 0, UINT32_MAX);
        if (!i.has_value() || *i == 0) continue;
        const std::optional<std::string> address = Attr("/bus/pci/slots/" + entry, "address");
        if (!address.has_value() || !absl::StartsWith(at_name, *address)) continue;
        hotplug_slot = static_cast<uint32_t>(*i);
        if (ctx_.scheme.Has(kNamingBridgeNoSlot) && IsBridge(*at)) {
          if (ctx_.scheme.Has(kNamingBridgeMultifunctionSlot) && !IsMultifunction(names.pcidev)) return;
          if (!ctx_.scheme.Has(kNamingBridgeMultifunctionSlot)) return;
        }
        break;
      }
      if (hotplug_slot > 0) break;
      at = ParentWith(sysfs_, *at, "pci");
    }
    if (hotplug_slot == 0) return;
    std::string slot_name = domain > 0 ? absl::StrCat("P", domain) : "";
    absl::StrAppend(&slot_name, "s", hotplug_slot);
    tail(slot_name);
    names.pci_slot = slot_name;
  }

  bool NamesUsb(Names& names) const {
    const std::optional<std::string> usb = ParentWith(sysfs_, dev_.devpath, "usb", "usb_interface");
    if (!usb.has_value()) return false;
    std::string name = SysnameOf(*usb);
    const size_t dash = name.find('-');
    if (dash == std::string::npos) return false;
    std::string ports = name.substr(dash + 1);
    const size_t colon = ports.find(':');
    if (colon == std::string::npos) return false;
    std::string config = ports.substr(colon + 1);
    ports.resize(colon);
    const size_t dot = config.find('.');
    if (dot == std::string::npos) return false;
    const std::string interface = config.substr(dot + 1);
    config.resize(dot);
    for (char& c : ports) {
      if (c == '.') c = 'u';
    }
    std::string out = absl::StrCat("u", ports);
    bool fits = out.size() < kAltIfNameSize;
    if (config != "1") fits = fits && Append(out, absl::StrCat("c", config));
    if (interface != "0") fits = fits && Append(out, absl::StrCat("i", interface));
    if (!fits) return false;
    names.usb_ports = out;
    names.type = NameType::kUsb;
    return true;
  }

  bool NamesBcma(Names& names) const {
    const std::optional<std::string> bcma = ParentWith(sysfs_, dev_.devpath, "bcma");
    if (!bcma.has_value()) return false;
    const std::string sysname = SysnameOf(*bcma);
    absl::string_view in = sysname;
    unsigned bus = 0, core = 0;
    if (!ScanLiteral(in, "bcma") || !ScanDecimal(in, &bus) || !ScanLiteral(in, ":") || !ScanDecimal(in, &core)) {
      return false;
    }
    if (core > 0) names.bcma_core = absl::StrCat("b", core);
    names.type = NameType::kBcma;
    return true;
  }

  const BuiltinDevice& dev_;
  const SysfsView& sysfs_;
  const NetIdContext& ctx_;
  LinkInfo info_;
};

}  // namespace

absl::StatusOr<Properties> NetId(const BuiltinDevice& device, const NetIdContext& context) {
  return NetIdRun(device, context).Run();
}

}  // namespace hotring::hotplug::udev

#include "testing/udevbuiltins/builtin_devices.h"

#include <unistd.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace hotring::testing {
namespace {

using Attrs = DeviceAttrs;

// A symlink `relative_link` (under the root) to `target` (relative to the link's directory).
absl::Status Link(FakeSysfs& sys, const std::string& relative_link, const std::string& target) {
  const std::string path = sys.Path(relative_link);
  if (::symlink(target.c_str(), path.c_str()) != 0) return ErrnoStatus(absl::StrCat("symlink ", path));
  return absl::OkStatus();
}

// 64 bytes of PCI config space whose header type byte (0x0e) is `header_type`.
std::string Config(unsigned char header_type) {
  std::string c(64, '\x11');
  c[0x0e] = static_cast<char>(header_type);
  return c;
}

// A PCI function with an Ethernet interface `ifname` below it.
absl::Status AddNic(FakeSysfs& sys, const std::string& pci, const std::string& ifname, int ifindex,
                    const std::string& mac, Attrs pci_attrs, Attrs net_attrs = {}, Attrs net_uevent = {}) {
  pci_attrs.insert(pci_attrs.begin(), {{"vendor", "0x8086\n"}, {"device", "0x1521\n"}, {"class", "0x020000\n"}});
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, pci, "pci", {{"PCI_CLASS", "20000"}, {"PCI_ID", "8086:1521"}}, pci_attrs));
  Attrs attrs = {{"address", mac + "\n"}, {"type", "1\n"}, {"ifindex", absl::StrCat(ifindex, "\n")},
                 {"iflink", absl::StrCat(ifindex, "\n")}, {"addr_assign_type", "0\n"},
                 {"name_assign_type", "1\n"}};
  for (auto& a : net_attrs) {
    bool replaced = false;
    for (auto& b : attrs) {
      if (b.first == a.first) {
        b.second = a.second;
        replaced = true;
      }
    }
    if (!replaced) attrs.push_back(a);
  }
  Attrs uevent = {{"INTERFACE", ifname}, {"IFINDEX", absl::StrCat(ifindex)}};
  for (auto& u : net_uevent) uevent.push_back(u);
  return AddTreeDevice(sys, absl::StrCat(pci, "/net/", ifname), "net", uevent, attrs, FakeSysfs::Kind::kClass);
}

absl::Status AddNetworkInterfaces(FakeSysfs& sys, std::vector<CatalogDevice>& out) {
  // A dual-port card behind a root port in hotplug slot 5: function 0 with an onboard index and
  // label, function 1 with dev_port 1; an SR-IOV virtual function of port 0.
  const std::string bridge = "/devices/pci0000:00/0000:00:1c.0";
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, bridge, "pci", {{"PCI_CLASS", "60400"}},
                                        {{"modalias", "pci:v00008086d0000A110sv00000000sd00000000bc06sc04i00\n"},
                                         {"config", Config(0x81)}}));
  HOTRING_RETURN_IF_ERROR(sys.WriteFile("/bus/pci/slots/5/address", "0000:03:00\n"));
  HOTRING_RETURN_IF_ERROR(sys.WriteFile("/bus/pci/slots/9/address", "0000:07:00\n"));
  const std::string f0 = bridge + "/0000:03:00.0", f1 = bridge + "/0000:03:00.1";
  HOTRING_RETURN_IF_ERROR(AddNic(sys, f0, "eth10", 10, "a0:36:9f:00:00:10",
                                 {{"config", Config(0x80)}, {"acpi_index", "3\n"}, {"label", "Onboard LAN 1\n"}}));
  HOTRING_RETURN_IF_ERROR(AddNic(sys, f1, "eth11", 11, "a0:36:9f:00:00:11", {{"config", Config(0x80)}},
                                 {{"dev_port", "1\n"}}));
  const std::string vf = bridge + "/0000:03:10.0";
  HOTRING_RETURN_IF_ERROR(AddNic(sys, vf, "eth12", 12, "02:00:00:00:00:12", {{"config", Config(0x00)}},
                                 {{"addr_assign_type", "1\n"}}));
  HOTRING_RETURN_IF_ERROR(Link(sys, vf.substr(1) + "/physfn", "../0000:03:00.0"));
  HOTRING_RETURN_IF_ERROR(Link(sys, f0.substr(1) + "/virtfn0", "../0000:03:10.0"));
  // A PCI function of domain 1 with a front-panel port name, one with ARI, and an index too
  // large to be trusted.
  HOTRING_RETURN_IF_ERROR(AddNic(sys, "/devices/pci0001:00/0001:00:02.0", "eth13", 13, "a0:36:9f:00:00:13",
                                 {{"config", Config(0x00)}, {"index", "16777215\n"}},
                                 {{"phys_port_name", "p0\n"}}));
  HOTRING_RETURN_IF_ERROR(AddNic(sys, "/devices/pci0000:00/0000:00:1d.0/0000:07:02.1", "eth14", 14,
                                 "a0:36:9f:00:00:14", {{"config", Config(0x80)}, {"ari_enabled", "1\n"}}));
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, "/devices/pci0000:00/0000:00:1d.0", "pci", {},
                                        {{"modalias", "pci:v00008086d0000A111sv00000000sd00000000bc06sc04i00\n"}}));
  // Wireless on PCI, with the kernel's wlan DEVTYPE.
  HOTRING_RETURN_IF_ERROR(AddNic(sys, "/devices/pci0000:00/0000:00:14.3", "wlan0", 15, "8c:f8:c5:00:00:15",
                                 {{"config", Config(0x80)}}, {}, {{"DEVTYPE", "wlan"}}));
  // An InfiniBand port, its port number in dev_id.
  HOTRING_RETURN_IF_ERROR(AddNic(sys, "/devices/pci0000:00/0000:00:08.0", "ib0", 16,
                                 "80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:00:16",
                                 {{"config", Config(0x00)}}, {{"type", "32\n"}, {"dev_id", "1\n"}}));
  // An InfiniBand port of an older kernel: dev_port 0, the port number in dev_id.
  HOTRING_RETURN_IF_ERROR(AddNic(sys, "/devices/pci0000:00/0000:00:09.0", "ib1", 21,
                                 "80:00:00:49:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:00:21",
                                 {{"config", Config(0x00)}},
                                 {{"type", "32\n"}, {"dev_port", "0\n"}, {"dev_id", "2\n"}}));
  // A USB Ethernet adapter on the guest's xHCI, second configuration.
  const std::string usb = std::string(kGuestXhci) + "/usb1/1-6";
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, usb, "usb", {{"DEVTYPE", "usb_device"}, {"PRODUCT", "bda/8153/3000"}},
                                        {{"idVendor", "0bda\n"},
                                         {"idProduct", "8153\n"},
                                         {"product", "USB 10/100/1000 LAN\n"}}));
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, usb + "/1-6:2.0", "usb", {{"DEVTYPE", "usb_interface"}}, {}));
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, usb + "/1-6:2.0/net/eth17", "net",
                                        {{"INTERFACE", "eth17"}, {"IFINDEX", "17"}},
                                        {{"address", "00:e0:4c:68:00:17\n"}, {"type", "1\n"}, {"ifindex", "17\n"},
                                         {"iflink", "17\n"}, {"addr_assign_type", "0\n"}},
                                        FakeSysfs::Kind::kClass));
  // An ACPI platform device (arm64 server NIC), a VLAN on eth10, a bridge with a random MAC.
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, "/devices/platform/HISI00C2:00", "platform", {}, {}));
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, "/devices/platform/HISI00C2:00/net/eth18", "net",
                                        {{"INTERFACE", "eth18"}, {"IFINDEX", "18"}},
                                        {{"address", "00:18:2d:00:00:18\n"}, {"type", "1\n"}, {"iflink", "18\n"},
                                         {"addr_assign_type", "0\n"}},
                                        FakeSysfs::Kind::kClass));
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, "/devices/virtual/net/eth10.100", "net",
                                        {{"DEVTYPE", "vlan"}, {"INTERFACE", "eth10.100"}, {"IFINDEX", "19"}},
                                        {{"address", "a0:36:9f:00:00:10\n"}, {"type", "1\n"}, {"iflink", "10\n"},
                                         {"addr_assign_type", "2\n"}},
                                        FakeSysfs::Kind::kClass));
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, "/devices/virtual/net/br0", "net",
                                        {{"DEVTYPE", "bridge"}, {"INTERFACE", "br0"}, {"IFINDEX", "20"}},
                                        {{"address", "6a:1f:00:00:00:20\n"}, {"type", "1\n"}, {"iflink", "20\n"},
                                         {"addr_assign_type", "1\n"}},
                                        FakeSysfs::Kind::kClass));
  for (const auto& [name, path] : std::vector<std::pair<std::string, std::string>>{
           {"mf-eth10", f0 + "/net/eth10"},
           {"mf-eth11", f1 + "/net/eth11"},
           {"vf-eth12", vf + "/net/eth12"},
           {"domain-eth13", "/devices/pci0001:00/0001:00:02.0/net/eth13"},
           {"ari-eth14", "/devices/pci0000:00/0000:00:1d.0/0000:07:02.1/net/eth14"},
           {"wlan0", "/devices/pci0000:00/0000:00:14.3/net/wlan0"},
           {"ib0", "/devices/pci0000:00/0000:00:08.0/net/ib0"},
           {"ib1", "/devices/pci0000:00/0000:00:09.0/net/ib1"},
           {"usb-eth17", usb + "/1-6:2.0/net/eth17"},
           {"acpi-eth18", "/devices/platform/HISI00C2:00/net/eth18"},
           {"vlan", "/devices/virtual/net/eth10.100"},
           {"br0", "/devices/virtual/net/br0"}}) {
    out.push_back({name, path});
  }
  return absl::OkStatus();
}

// i8042 keyboards with the hwdb's key properties in their uevent files (for `udevadm
// test-builtin keyboard`, which reads a device's properties from there), and a pointing stick.
absl::Status AddKeyboards(FakeSysfs& sys, std::vector<CatalogDevice>& out) {
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, "/devices/platform/i8042/serio2", "serio", {},
                                        {{"force_release", "369-370\n"}, {"sensitivity", "128\n"}}));
  const std::string input = "/devices/platform/i8042/serio2/input/input9";
  HOTRING_RETURN_IF_ERROR(
      AddTreeDevice(sys, input, "input", {{"PRODUCT", "11/1/1/ab41"}}, {}, FakeSysfs::Kind::kClass));
  HOTRING_RETURN_IF_ERROR(AddTreeDevice(sys, input + "/event9", "input",
                                        {{"MAJOR", "13"}, {"MINOR", "73"}, {"DEVNAME", "input/event9"},
                                         {"KEYBOARD_KEY_a0", "mute"},
                                         {"KEYBOARD_KEY_ae", "!volumedown"},
                                         {"KEYBOARD_KEY_b0", "!"},
                                         {"KEYBOARD_KEY_81", "key_f14"},
                                         {"KEYBOARD_KEY_85", "0x1d4"},
                                         {"KEYBOARD_KEY_86", "no_such_key"},
                                         {"KEYBOARD_KEY_zz", "a"},
                                         {"KEYBOARD_KEY_90005", "btn_left"},
                                         {"POINTINGSTICK_SENSITIVITY", "200"}},
                                        {}, FakeSysfs::Kind::kClass));
  out.push_back({"kbd-event9", input + "/event9"});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<CatalogDevice>> BuildBuiltinCatalog(FakeSysfs& sys) {
  HOTRING_ASSIGN_OR_RETURN(std::vector<CatalogDevice> out, BuildUdevCatalog(sys));
  HOTRING_RETURN_IF_ERROR(AddNetworkInterfaces(sys, out));
  HOTRING_RETURN_IF_ERROR(AddKeyboards(sys, out));
  return out;
}

}  // namespace hotring::testing

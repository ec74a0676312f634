#include "testing/udev_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace hotring::testing {

// The guest's capability bitmaps (`=== sysfs`).
const DeviceAttrs kGuestUsbKeyboard = {{"name", "QEMU QEMU USB Keyboard"},
                            {"id/bustype", "0003"},
                            {"id/vendor", "0627"},
                            {"id/product", "0001"},
                            {"id/version", "0111"},
                            {"capabilities/ev", "120013"},
                            {"capabilities/key", "1000000000007 ff9f207ac14057ff febeffdfffefffff fffffffffffffffe"},
                            {"capabilities/rel", "0"},
                            {"capabilities/abs", "0"},
                            {"capabilities/msc", "10"},
                            {"capabilities/led", "1f"},
                            {"capabilities/sw", "0"},
                            {"properties", "0"}};
const DeviceAttrs kGuestUsbMouse = {{"name", "QEMU QEMU USB Mouse"},
                         {"id/bustype", "0003"},
                         {"id/vendor", "0627"},
                         {"id/product", "0001"},
                         {"id/version", "0001"},
                         {"capabilities/ev", "17"},
                         {"capabilities/key", "1f0000 0 0 0 0"},
                         {"capabilities/rel", "903"},
                         {"capabilities/abs", "0"},
                         {"capabilities/msc", "10"},
                         {"capabilities/sw", "0"},
                         {"properties", "0"}};
const DeviceAttrs kGuestUsbTablet = {{"name", "QEMU QEMU USB Tablet"},
                          {"id/bustype", "0003"},
                          {"id/vendor", "0627"},
                          {"id/product", "0001"},
                          {"id/version", "0001"},
                          {"capabilities/ev", "1f"},
                          {"capabilities/key", "70000 0 0 0 0"},
                          {"capabilities/rel", "900"},
                          {"capabilities/abs", "3"},
                          {"capabilities/msc", "10"},
                          {"capabilities/sw", "0"},
                          {"properties", "0"}};
const DeviceAttrs kGuestAtKeyboard = {{"name", "AT Translated Set 2 keyboard"},
                           {"id/bustype", "0011"},
                           {"id/vendor", "0001"},
                           {"id/product", "0001"},
                           {"id/version", "ab41"},
                           {"capabilities/ev", "120013"},
                           {"capabilities/key", "402000002 3803078f800d001 feffffdfffefffff fffffffffffffffe"},
                           {"capabilities/rel", "0"},
                           {"capabilities/abs", "0"},
                           {"capabilities/msc", "10"},
                           {"capabilities/led", "7"},
                           {"capabilities/sw", "0"},
                           {"properties", "0"}};
const DeviceAttrs kGuestPs2Mouse = {{"name", "ImExPS/2 Generic Explorer Mouse"},
                         {"id/bustype", "0011"},
                         {"id/vendor", "0002"},
                         {"id/product", "0006"},
                         {"id/version", "0000"},
                         {"capabilities/ev", "7"},
                         {"capabilities/key", "1f0000 0 0 0 0"},
                         {"capabilities/rel", "143"},
                         {"capabilities/abs", "0"},
                         {"capabilities/sw", "0"},
                         {"properties", "1"}};

// The guest's USB descriptors (device, configuration, interface, HID, endpoint), hex.
const char kGuestKeyboardDescriptors[] =
    "120100020000004027060100000001040b0109022200010108a032090400000103010100092111010001223f0007058103080007";
const char kGuestMouseDescriptors[] =
    "12010002000000402706010000000102090109022200010106a03209040000010301020009210100000122340007058103040007";
const char kGuestTabletDescriptors[] =
    "120100020000004027060100000001030a0109022200010107a032090400000103000000092101000001224a0007058103080004";


absl::Status LinkDriver(FakeSysfs& sys, absl::string_view devpath, absl::string_view bus,
                        absl::string_view name) {
  HOTRING_RETURN_IF_ERROR(sys.AddDriver(bus, name));
  int depth = 0;
  for (char c : devpath) depth += c == '/' ? 1 : 0;
  std::string up;
  for (int i = 0; i < depth; ++i) up += "../";
  const std::string link = sys.Path(absl::StrCat(devpath, "/driver"));
  ::unlink(link.c_str());
  if (::symlink(absl::StrCat(up, "bus/", bus, "/drivers/", name).c_str(), link.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("symlink(", link, ")"));
  }
  return absl::OkStatus();
}

absl::Status AddTreeDevice(FakeSysfs& sys, const std::string& devpath, const std::string& subsystem,
                           DeviceAttrs uevent, DeviceAttrs attributes, FakeSysfs::Kind kind) {
  absl::Status s = sys.AddDevice({.devpath = devpath,
                                  .subsystem = subsystem,
                                  .kind = kind,
                                  .uevent = std::move(uevent),
                                  .attributes = std::move(attributes)});
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(devpath, ": ", s.message()));
  return s;
}

namespace {

absl::Status Add(FakeSysfs& sys, const std::string& devpath, const std::string& subsystem,
                 DeviceAttrs uevent = {}, DeviceAttrs attributes = {},
                 FakeSysfs::Kind kind = FakeSysfs::Kind::kBus) {
  return AddTreeDevice(sys, devpath, subsystem, std::move(uevent), std::move(attributes), kind);
}

constexpr FakeSysfs::Kind kClass = FakeSysfs::Kind::kClass;

}  // namespace

absl::StatusOr<std::string> AddGuestUsbHid(FakeSysfs& sys, int port, const std::string& product,
                                           const std::string& serial, const std::string& descriptors_hex,
                                           const std::string& hid_id, const std::string& subclass,
                                           const std::string& protocol) {
  HOTRING_RETURN_IF_ERROR(Add(sys, kGuestXhci, "pci", {{"PCI_ID", "1B36:000D"}},
                              {{"vendor", "0x1b36"}, {"device", "0x000d"}}));
  // bDeviceClass: a root hub's is 09; the devices' is their descriptors' fifth byte (00).
  HOTRING_RETURN_IF_ERROR(Add(sys, absl::StrCat(kGuestXhci, "/usb1"), "usb", {{"DEVTYPE", "usb_device"}},
                              {{"idVendor", "1d6b"}, {"idProduct", "0002"}, {"bDeviceClass", "09"}}));
  const std::string dev = absl::StrCat(kGuestXhci, "/usb1/1-", port);
  HOTRING_RETURN_IF_ERROR(Add(sys, dev, "usb", {{"DEVTYPE", "usb_device"}, {"PRODUCT", "627/1/0"}},
                              {{"idVendor", "0627"},
                               {"idProduct", "0001"},
                               {"manufacturer", "QEMU"},
                               {"product", product},
                               {"serial", serial},
                               {"bcdDevice", "0000"},
                               {"bDeviceClass", "00"},
                               {"descriptors", absl::HexStringToBytes(descriptors_hex)}}));
  const std::string intf = absl::StrCat(dev, "/1-", port, ":1.0");
  HOTRING_RETURN_IF_ERROR(Add(sys, intf, "usb", {{"DEVTYPE", "usb_interface"}},
                              {{"bInterfaceNumber", "00"},
                               {"bInterfaceClass", "03"},
                               {"bInterfaceSubClass", subclass},
                               {"bInterfaceProtocol", protocol}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, intf, "usb", "usbhid"));
  const std::string hid = absl::StrCat(intf, "/", hid_id);
  HOTRING_RETURN_IF_ERROR(Add(sys, hid, "hid"));
  return hid;
}

absl::Status AddGuestI8042(FakeSysfs& sys) {
  HOTRING_RETURN_IF_ERROR(Add(sys, "/devices/platform/i8042", "platform"));
  HOTRING_RETURN_IF_ERROR(Add(sys, "/devices/platform/i8042/serio0", "serio"));
  return Add(sys, "/devices/platform/i8042/serio1", "serio");
}

absl::Status AddGuestInput(FakeSysfs& sys, const GuestInput& in) {
  const std::string input = absl::StrCat(in.parent, "/input/input", in.input);
  HOTRING_RETURN_IF_ERROR(Add(sys, input, "input", {{"PRODUCT", "3/627/1/111"}}, {}, kClass));
  for (const auto& [name, value] : in.attrs) {
    // Bitmaps as a kernel of this build's word size prints them (recorded on x86-64).
    const bool bitmap = absl::StartsWith(name, "capabilities/") || name == "properties";
    const std::string text = bitmap ? KernelBitmap(value) : value;
    HOTRING_RETURN_IF_ERROR(sys.WriteFile(absl::StrCat(input, "/", name), text + "\n"));
  }
  HOTRING_RETURN_IF_ERROR(Add(sys, absl::StrCat(input, "/event", in.event), "input",
                              {{"MAJOR", "13"},
                               {"MINOR", absl::StrCat(64 + in.event)},
                               {"DEVNAME", absl::StrCat("input/event", in.event)}},
                              {}, kClass));
  if (in.mouse >= 0) {
    HOTRING_RETURN_IF_ERROR(Add(sys, absl::StrCat(input, "/mouse", in.mouse), "input",
                                {{"MAJOR", "13"},
                                 {"MINOR", absl::StrCat(32 + in.mouse)},
                                 {"DEVNAME", absl::StrCat("input/mouse", in.mouse)}},
                                {}, kClass));
  }
  return absl::OkStatus();
}

namespace {

// An FTDI FT232R adapter: device, configuration, one vendor-class interface, two bulk endpoints.
constexpr char kFtdiDescriptors[] =
    "120100020000000803040160000601020301"  // device
    "09022000010100a02d"                    // configuration
    "0904000002ffffff02" "07058102400000" "07050202400000";  // interface, bulk endpoints
// A u-blox GNSS receiver (CDC ACM): a communication and a data interface.
constexpr char kUbloxDescriptors[] =
    "12011001020000404615a801000101020001"  // device
    "09023000020100c032"                    // configuration
    "090400000102020100" "070581034000ff"   // communication interface, interrupt endpoint
    "09040100020a000000" "07058202400000" "07050102400000";  // data interface, bulk endpoints

// The guest's other devices: serial port, NICs, disk, GPU, floppy.
absl::Status AddGuestOthers(FakeSysfs& sys) {
  HOTRING_RETURN_IF_ERROR(Add(sys, "/devices/platform/serial8250", "platform", {{"DRIVER", "serial8250"}},
                              {{"driver_override", "(null)\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, "/devices/platform/serial8250", "platform", "serial8250"));
  HOTRING_RETURN_IF_ERROR(Add(sys, "/devices/platform/serial8250/tty/ttyS0", "tty",
                              {{"MAJOR", "4"}, {"MINOR", "64"}, {"DEVNAME", "ttyS0"}},
                              {{"type", "4\n"}, {"port", "0x3F8\n"}, {"irq", "4\n"}, {"line", "0\n"},
                               {"flags", "0x10000040\n"}, {"iomem_base", "0x0\n"}, {"close_delay", "50\n"}},
                              kClass));
  const std::string e1000 = "/devices/pci0000:00/0000:00:03.0";
  HOTRING_RETURN_IF_ERROR(Add(sys, e1000, "pci",
                              {{"DRIVER", "e1000"}, {"PCI_CLASS", "20000"}, {"PCI_ID", "8086:100E"},
                               {"PCI_SUBSYS_ID", "1AF4:1100"}, {"PCI_SLOT_NAME", "0000:00:03.0"},
                               {"MODALIAS", "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00"}},
                              {{"vendor", "0x8086\n"}, {"device", "0x100e\n"}, {"class", "0x020000\n"},
                               {"subsystem_vendor", "0x1af4\n"}, {"subsystem_device", "0x1100\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, e1000, "pci", "e1000"));
  HOTRING_RETURN_IF_ERROR(Add(sys, e1000 + "/net/eth0", "net", {{"INTERFACE", "eth0"}, {"IFINDEX", "2"}},
                              {{"address", "52:54:00:12:34:56\n"}, {"type", "1\n"}, {"ifindex", "2\n"},
                               {"iflink", "2\n"}, {"addr_assign_type", "0\n"}, {"dev_port", "0\n"},
                               {"mtu", "1500\n"}, {"name_assign_type", "1\n"}},
                              kClass));
  const std::string vnet = "/devices/pci0000:00/0000:00:04.0";
  HOTRING_RETURN_IF_ERROR(Add(sys, vnet, "pci",
                              {{"DRIVER", "virtio-pci"}, {"PCI_CLASS", "20000"}, {"PCI_ID", "1AF4:1000"}},
                              {{"vendor", "0x1af4\n"}, {"device", "0x1000\n"}, {"class", "0x020000\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, vnet, "pci", "virtio-pci"));
  HOTRING_RETURN_IF_ERROR(Add(sys, vnet + "/virtio0", "virtio", {{"DRIVER", "virtio_net"}},
                              {{"vendor", "0x1af4\n"}, {"device", "0x0001\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, vnet + "/virtio0", "virtio", "virtio_net"));
  HOTRING_RETURN_IF_ERROR(Add(sys, vnet + "/virtio0/net/eth1", "net", {{"INTERFACE", "eth1"}, {"IFINDEX", "3"}},
                              {{"address", "52:54:00:12:34:57\n"}, {"type", "1\n"}, {"ifindex", "3\n"},
                               {"iflink", "3\n"}, {"addr_assign_type", "0\n"}},
                              kClass));
  const std::string vblk = "/devices/pci0000:00/0000:00:07.0";
  HOTRING_RETURN_IF_ERROR(Add(sys, vblk, "pci", {{"DRIVER", "virtio-pci"}, {"PCI_ID", "1AF4:1001"}},
                              {{"vendor", "0x1af4\n"}, {"device", "0x1001\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, vblk, "pci", "virtio-pci"));
  HOTRING_RETURN_IF_ERROR(Add(sys, vblk + "/virtio1", "virtio", {{"DRIVER", "virtio_blk"}},
                              {{"vendor", "0x1af4\n"}, {"device", "0x0002\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, vblk + "/virtio1", "virtio", "virtio_blk"));
  HOTRING_RETURN_IF_ERROR(Add(sys, vblk + "/virtio1/block/vda", "block",
                              {{"MAJOR", "254"}, {"MINOR", "0"}, {"DEVNAME", "vda"}, {"DEVTYPE", "disk"},
                               {"DISKSEQ", "1"}},
                              {{"size", "2097152\n"}, {"ro", "0\n"}, {"removable", "0\n"},
                               {"serial", "hotring-disk\n"}},
                              kClass));
  HOTRING_RETURN_IF_ERROR(Add(sys, vblk + "/virtio1/block/vda/vda1", "block",
                              {{"MAJOR", "254"}, {"MINOR", "1"}, {"DEVNAME", "vda1"},
                               {"DEVTYPE", "partition"}, {"DISKSEQ", "1"}, {"PARTN", "1"}},
                              {{"partition", "1\n"}, {"start", "2048\n"}, {"size", "2095104\n"}, {"ro", "0\n"}},
                              kClass));
  const std::string gpu = "/devices/pci0000:00/0000:00:06.0";
  HOTRING_RETURN_IF_ERROR(Add(sys, gpu, "pci", {{"DRIVER", "virtio-pci"}, {"PCI_CLASS", "38000"}, {"PCI_ID", "1AF4:1050"}},
                              {{"class", "0x038000"}, {"vendor", "0x1af4"}, {"device", "0x1050"}}));
  HOTRING_RETURN_IF_ERROR(Add(sys, gpu + "/drm/card0", "drm",
                              {{"DEVTYPE", "drm_minor"}, {"MAJOR", "226"}, {"MINOR", "0"}, {"DEVNAME", "dri/card0"}},
                              {}, kClass));
  HOTRING_RETURN_IF_ERROR(Add(sys, gpu + "/drm/renderD128", "drm",
                              {{"DEVTYPE", "drm_minor"}, {"MAJOR", "226"}, {"MINOR", "128"},
                               {"DEVNAME", "dri/renderD128"}},
                              {}, kClass));
  HOTRING_RETURN_IF_ERROR(Add(sys, gpu + "/graphics/fb0", "graphics",
                              {{"MAJOR", "29"}, {"MINOR", "0"}, {"DEVNAME", "fb0"}}, {}, kClass));
  HOTRING_RETURN_IF_ERROR(Add(sys, "/devices/platform/floppy.0", "platform"));
  return Add(sys, "/devices/platform/floppy.0/block/fd0", "block",
             {{"MAJOR", "2"}, {"MINOR", "0"}, {"DEVNAME", "fd0"}, {"DEVTYPE", "disk"}}, {}, kClass);
}

// A board: a USB serial adapter and a GPS receiver on the guest's xHCI, and SoC devices.
absl::Status AddBoard(FakeSysfs& sys) {
  const std::string ftdi = absl::StrCat(kGuestXhci, "/usb1/1-4");
  HOTRING_RETURN_IF_ERROR(Add(sys, ftdi, "usb", {{"DEVTYPE", "usb_device"}, {"PRODUCT", "403/6001/600"},
                                                 {"MAJOR", "189"}, {"MINOR", "3"}, {"DEVNAME", "bus/usb/001/004"}},
                              {{"idVendor", "0403\n"}, {"idProduct", "6001\n"}, {"manufacturer", "FTDI\n"},
                               {"product", "FT232R USB UART\n"}, {"serial", "A10K1ABC\n"},
                               {"bcdDevice", "0600\n"}, {"bDeviceClass", "00\n"}, {"busnum", "1\n"},
                               {"devnum", "4\n"}, {"descriptors", absl::HexStringToBytes(kFtdiDescriptors)}}));
  const std::string ftdi_intf = ftdi + "/1-4:1.0";
  HOTRING_RETURN_IF_ERROR(Add(sys, ftdi_intf, "usb", {{"DEVTYPE", "usb_interface"}, {"DRIVER", "ftdi_sio"}},
                              {{"bInterfaceNumber", "00\n"}, {"bInterfaceClass", "ff\n"},
                               {"bInterfaceSubClass", "ff\n"}, {"bInterfaceProtocol", "ff\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, ftdi_intf, "usb", "ftdi_sio"));
  HOTRING_RETURN_IF_ERROR(Add(sys, ftdi_intf + "/ttyUSB0", "usb-serial", {{"DRIVER", "ftdi_sio"}},
                              {{"port_number", "0\n"}, {"latency_timer", "16\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, ftdi_intf + "/ttyUSB0", "usb-serial", "ftdi_sio"));
  HOTRING_RETURN_IF_ERROR(Add(sys, ftdi_intf + "/ttyUSB0/tty/ttyUSB0", "tty",
                              {{"MAJOR", "188"}, {"MINOR", "0"}, {"DEVNAME", "ttyUSB0"}}, {}, kClass));
  const std::string gps = absl::StrCat(kGuestXhci, "/usb1/1-5");
  HOTRING_RETURN_IF_ERROR(Add(sys, gps, "usb", {{"DEVTYPE", "usb_device"}, {"PRODUCT", "1546/1a8/100"}},
                              {{"idVendor", "1546\n"}, {"idProduct", "01a8\n"},
                               {"manufacturer", "u-blox AG - www.u-blox.com\n"},
                               {"product", "u-blox GNSS receiver\n"}, {"bcdDevice", "0100\n"},
                               {"bDeviceClass", "02\n"},
                               {"descriptors", absl::HexStringToBytes(kUbloxDescriptors)}}));
  for (const char* n : {"0", "1"}) {
    const std::string intf = absl::StrCat(gps, "/1-5:1.", n);
    const bool comm = n[0] == '0';
    HOTRING_RETURN_IF_ERROR(Add(sys, intf, "usb", {{"DEVTYPE", "usb_interface"}, {"DRIVER", "cdc_acm"}},
                                {{"bInterfaceNumber", absl::StrCat("0", n, "\n")},
                                 {"bInterfaceClass", comm ? "02\n" : "0a\n"},
                                 {"bInterfaceSubClass", comm ? "02\n" : "00\n"},
                                 {"bInterfaceProtocol", comm ? "01\n" : "00\n"}}));
    HOTRING_RETURN_IF_ERROR(LinkDriver(sys, intf, "usb", "cdc_acm"));
  }
  HOTRING_RETURN_IF_ERROR(Add(sys, gps + "/1-5:1.0/tty/ttyACM0", "tty",
                              {{"MAJOR", "166"}, {"MINOR", "0"}, {"DEVNAME", "ttyACM0"}}, {}, kClass));
  const std::string soc = "/devices/platform/soc";
  HOTRING_RETURN_IF_ERROR(Add(sys, soc, "platform"));
  HOTRING_RETURN_IF_ERROR(Add(sys, soc + "/3f200000.gpio", "platform", {{"DRIVER", "pinctrl-bcm2835"},
                                                                        {"OF_NAME", "gpio"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, soc + "/3f200000.gpio", "platform", "pinctrl-bcm2835"));
  HOTRING_RETURN_IF_ERROR(Add(sys, soc + "/3f200000.gpio/gpiochip0", "gpio",
                              {{"MAJOR", "254"}, {"MINOR", "0"}, {"DEVNAME", "gpiochip0"}},
                              {{"dev", "254:0\n"}}));
  HOTRING_RETURN_IF_ERROR(Add(sys, soc + "/3f804000.i2c", "platform", {{"DRIVER", "i2c-bcm2835"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, soc + "/3f804000.i2c", "platform", "i2c-bcm2835"));
  const std::string i2c = soc + "/3f804000.i2c/i2c-1";
  HOTRING_RETURN_IF_ERROR(Add(sys, i2c, "i2c", {{"DEVTYPE", "i2c_adapter"}},
                              {{"name", "bcm2835 (i2c@7e804000)\n"}}));
  HOTRING_RETURN_IF_ERROR(Add(sys, i2c + "/i2c-dev/i2c-1", "i2c-dev",
                              {{"MAJOR", "89"}, {"MINOR", "1"}, {"DEVNAME", "i2c-1"}},
                              {{"name", "bcm2835 (i2c@7e804000)\n"}}, kClass));
  const std::string touch = i2c + "/1-0038";
  HOTRING_RETURN_IF_ERROR(Add(sys, touch, "i2c", {{"DRIVER", "edt_ft5x06"}, {"OF_NAME", "touchscreen"},
                                                  {"MODALIAS", "of:NtouchscreenT(null)Cedt,edt-ft5406"}},
                              {{"name", "edt-ft5406\n"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, touch, "i2c", "edt_ft5x06"));
  const DeviceAttrs touch_attrs = {{"name", "generic ft5x06 (79)"},
                                   {"id/bustype", "0018"},
                                   {"id/vendor", "0000"},
                                   {"id/product", "0000"},
                                   {"id/version", "0000"},
                                   {"capabilities/ev", "b"},
                                   {"capabilities/key", "400 0 0 0 0 0"},
                                   {"capabilities/abs", "260800000000003"},
                                   {"capabilities/rel", "0"},
                                   {"capabilities/msc", "0"},
                                   {"capabilities/sw", "0"},
                                   {"properties", "2"}};
  HOTRING_RETURN_IF_ERROR(AddGuestInput(sys, {.parent = touch, .input = 7, .event = 5, .mouse = -1,
                                              .attrs = touch_attrs}));
  const std::string eth = "/devices/platform/scb/fd580000.ethernet";
  HOTRING_RETURN_IF_ERROR(Add(sys, "/devices/platform/scb", "platform"));
  HOTRING_RETURN_IF_ERROR(Add(sys, eth, "platform", {{"DRIVER", "bcmgenet"}, {"OF_NAME", "ethernet"}}));
  HOTRING_RETURN_IF_ERROR(LinkDriver(sys, eth, "platform", "bcmgenet"));
  return Add(sys, eth + "/net/eth2", "net", {{"INTERFACE", "eth2"}, {"IFINDEX", "5"}},
             {{"address", "dc:a6:32:01:02:03\n"}, {"type", "1\n"}, {"ifindex", "5\n"}, {"iflink", "5\n"},
              {"addr_assign_type", "0\n"}},
             kClass);
}

}  // namespace

absl::StatusOr<std::vector<CatalogDevice>> BuildUdevCatalog(FakeSysfs& sys) {
  HOTRING_ASSIGN_OR_RETURN(const std::string kbd_hid,
                           AddGuestUsbHid(sys, 1, "QEMU USB Keyboard", "68284-0000:00:05.0-1",
                                          kGuestKeyboardDescriptors, "0003:0627:0001.0001", "01", "01"));
  HOTRING_ASSIGN_OR_RETURN(const std::string mouse_hid,
                           AddGuestUsbHid(sys, 2, "QEMU USB Mouse", "89126-0000:00:05.0-2",
                                          kGuestMouseDescriptors, "0003:0627:0001.0002", "01", "02"));
  HOTRING_ASSIGN_OR_RETURN(const std::string tablet_hid,
                           AddGuestUsbHid(sys, 3, "QEMU USB Tablet", "28754-0000:00:05.0-3",
                                          kGuestTabletDescriptors, "0003:0627:0001.0003", "00", "00"));
  HOTRING_RETURN_IF_ERROR(AddGuestInput(sys, {.parent = kbd_hid, .input = 4, .event = 2, .mouse = -1,
                                              .attrs = kGuestUsbKeyboard}));
  HOTRING_RETURN_IF_ERROR(AddGuestInput(sys, {.parent = mouse_hid, .input = 5, .event = 3, .mouse = 1,
                                              .attrs = kGuestUsbMouse}));
  HOTRING_RETURN_IF_ERROR(AddGuestInput(sys, {.parent = tablet_hid, .input = 6, .event = 4, .mouse = 2,
                                              .attrs = kGuestUsbTablet}));
  HOTRING_RETURN_IF_ERROR(Add(sys, kbd_hid + "/input/input4/input4::capslock", "leds", {}, {}, kClass));
  HOTRING_RETURN_IF_ERROR(AddGuestI8042(sys));
  HOTRING_RETURN_IF_ERROR(AddGuestInput(sys, {.parent = "/devices/platform/i8042/serio0", .input = 0,
                                              .event = 0, .mouse = -1, .attrs = kGuestAtKeyboard}));
  HOTRING_RETURN_IF_ERROR(AddGuestInput(sys, {.parent = "/devices/platform/i8042/serio1", .input = 3,
                                              .event = 1, .mouse = 0, .attrs = kGuestPs2Mouse}));
  HOTRING_RETURN_IF_ERROR(AddGuestOthers(sys));
  HOTRING_RETURN_IF_ERROR(AddBoard(sys));
  const std::string usb1 = absl::StrCat(kGuestXhci, "/usb1");
  const std::string i2c = "/devices/platform/soc/3f804000.i2c/i2c-1";
  return std::vector<CatalogDevice>{
      {"ttyS0", "/devices/platform/serial8250/tty/ttyS0"},
      {"ttyUSB0", usb1 + "/1-4/1-4:1.0/ttyUSB0/tty/ttyUSB0"},
      {"ttyACM0", usb1 + "/1-5/1-5:1.0/tty/ttyACM0"},
      {"gpiochip0", "/devices/platform/soc/3f200000.gpio/gpiochip0"},
      {"i2c-dev-1", i2c + "/i2c-dev/i2c-1"},
      {"touch-event5", i2c + "/1-0038/input/input7/event5"},
      {"touch-input7", i2c + "/1-0038/input/input7"},
      {"board-eth2", "/devices/platform/scb/fd580000.ethernet/net/eth2"},
      {"e1000-eth0", "/devices/pci0000:00/0000:00:03.0/net/eth0"},
      {"virtio-eth1", "/devices/pci0000:00/0000:00:04.0/virtio0/net/eth1"},
      {"vda", "/devices/pci0000:00/0000:00:07.0/virtio1/block/vda"},
      {"vda1", "/devices/pci0000:00/0000:00:07.0/virtio1/block/vda/vda1"},
      {"usbkbd-event2", kbd_hid + "/input/input4/event2"},
      {"usbkbd-input4", kbd_hid + "/input/input4"},
      {"usbkbd-device", usb1 + "/1-1"},
      {"usbkbd-interface", usb1 + "/1-1/1-1:1.0"},
      {"usbmouse-mouse1", mouse_hid + "/input/input5/mouse1"},
      {"usbtablet-event4", tablet_hid + "/input/input6/event4"},
      {"atkbd-event0", "/devices/platform/i8042/serio0/input/input0/event0"},
      {"ps2mouse-mouse0", "/devices/platform/i8042/serio1/input/input3/mouse0"},
      {"card0", "/devices/pci0000:00/0000:00:06.0/drm/card0"},
      {"renderD128", "/devices/pci0000:00/0000:00:06.0/drm/renderD128"},
      {"fb0", "/devices/pci0000:00/0000:00:06.0/graphics/fb0"},
      {"fd0", "/devices/platform/floppy.0/block/fd0"},
      {"xhci", kGuestXhci},
      {"usb1", usb1},
      {"capslock", kbd_hid + "/input/input4/input4::capslock"},
      {"i8042", "/devices/platform/i8042"},
  };
}

int WriteCatalogTreeMain(int argc, char** argv, const char* tool,
                         absl::FunctionRef<absl::StatusOr<std::vector<CatalogDevice>>(FakeSysfs&)> build) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", tool);
    return 2;
  }
  const std::string out = argv[1];
  const std::string parent = out.substr(0, out.rfind('/'));
  // FakeSysfs makes its tree under TEST_TMPDIR: the same file system as OUT_DIR, for rename.
  setenv("TEST_TMPDIR", parent.empty() ? "/" : parent.c_str(), 1);
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  if (!sys.ok()) {
    fprintf(stderr, "%s: %s\n", tool, std::string(sys.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::vector<CatalogDevice>> devices = build(*sys);
  if (!devices.ok()) {
    fprintf(stderr, "%s: %s\n", tool, std::string(devices.status().message()).c_str());
    return 1;
  }
  if (rename(sys->root().c_str(), out.c_str()) != 0) {
    perror(absl::StrCat(tool, ": rename to ", out).c_str());
    return 1;
  }
  for (const auto& d : *devices) printf("%s %s\n", d.name.c_str(), d.devpath.c_str());
  return 0;
}

}  // namespace hotring::testing

// The devices of the qemu comparison guest (testing/udevcompat/guest_compare.sh: Debian 12's
// kernel 6.1, qemu's i440FX PC with an xHCI at 00:05.0 holding a USB keyboard, mouse and tablet,
// the i8042 keyboard and PS/2 mouse, e1000 and virtio-net NICs, a virtio disk at 00:06.0), with
// the sysfs attributes, capability bitmaps and USB descriptors the guest showed
// (guest_dump.sh's `=== sysfs` section). The expected properties and links are those
// systemd-udevd 252 put in the same guest's database (`udevadm info --export-db`).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/event.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udevcompat/links.h"
#include "hotplug/udevcompat/seat.h"
#include "hotplug/udev/sysfs_view.h"
#include "hotplug/udevcompat/udevcompat_handler.h"
#include "hotplug/udev/sysfs_fixture.h"
#include "testing/fake_sysfs.h"
#include "testing/udev_devices.h"

namespace hotring::hotplug::udevcompat {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;
using testing::FakeSysfs;

constexpr const char* kXhci = testing::kGuestXhci;
using testing::GuestInput;

class GuestRecordedTest : public udev::SysfsFixture {
 protected:
  // A USB HID device on the xHCI's port `port` with the guest's attributes and descriptors.
  std::string AddUsbHid(int port, const std::string& product, const std::string& serial,
                        const std::string& descriptors_hex, const std::string& hid_id,
                        const std::string& subclass, const std::string& protocol) {
    absl::StatusOr<std::string> hid = testing::AddGuestUsbHid(*sys_, port, product, serial, descriptors_hex,
                                                              hid_id, subclass, protocol);
    EXPECT_TRUE(hid.ok()) << hid.status();
    return hid.value_or("");
  }

  void AddI8042() { ASSERT_TRUE(testing::AddGuestI8042(*sys_).ok()); }

  // inputN with its attributes, its eventN and mouseN.
  void AddInput(const GuestInput& in) {
    const absl::Status s = testing::AddGuestInput(*sys_, in);
    ASSERT_TRUE(s.ok()) << s;
  }

  // What the udevcompat link computes for the device at `devpath` (an add event as the kernel
  // sends it) and the links it makes.
  std::pair<udev::Properties, std::vector<std::string>> Compute(const std::string& devpath,
                                                          const std::string& subsystem,
                                                          udev::Attrs env = {}) {
    Event e;
    e.action = "add";
    e.subsystem = subsystem;
    e.devpath = devpath;
    e.env = std::move(env);
    if (std::optional<absl::string_view> n = e.Get("DEVNAME"); n.has_value()) e.devname = std::string(*n);
    const udev::DirSysfsView view(sys_->root());
    std::string probe_error;
    udev::Properties props = ComputeProperties(view, e, "/nonexistent", {}, &probe_error);
    EXPECT_EQ(probe_error, "");
    tags_ = ApplySeatRules(view, e, {}, props);
    std::vector<std::string> links = PersistentLinks(e, props, ReadLinkFacts(view, devpath), nullptr);
    return {std::move(props), std::move(links)};
  }

  std::vector<std::string> tags_;  // the last Compute's tags (udevd's guest: "seat" only)
};

udev::Properties UsbIdentity(const std::string& model, const std::string& serial_short, const std::string& interfaces) {
  return {{"ID_BUS", "usb"},
          {"ID_MODEL", absl::StrCat("QEMU_USB_", model)},
          {"ID_MODEL_ENC", absl::StrCat("QEMU\\x20USB\\x20", model)},
          {"ID_MODEL_ID", "0001"},
          {"ID_SERIAL", absl::StrCat("QEMU_QEMU_USB_", model, "_", serial_short)},
          {"ID_SERIAL_SHORT", serial_short},
          {"ID_VENDOR", "QEMU"},
          {"ID_VENDOR_ENC", "QEMU"},
          {"ID_VENDOR_ID", "0627"},
          {"ID_REVISION", "0000"},
          {"ID_TYPE", "hid"},
          {"ID_USB_MODEL", absl::StrCat("QEMU_USB_", model)},
          {"ID_USB_MODEL_ENC", absl::StrCat("QEMU\\x20USB\\x20", model)},
          {"ID_USB_MODEL_ID", "0001"},
          {"ID_USB_SERIAL", absl::StrCat("QEMU_QEMU_USB_", model, "_", serial_short)},
          {"ID_USB_SERIAL_SHORT", serial_short},
          {"ID_USB_VENDOR", "QEMU"},
          {"ID_USB_VENDOR_ENC", "QEMU"},
          {"ID_USB_VENDOR_ID", "0627"},
          {"ID_USB_REVISION", "0000"},
          {"ID_USB_TYPE", "hid"},
          {"ID_USB_INTERFACES", interfaces},
          {"ID_USB_INTERFACE_NUM", "00"},
          {"ID_USB_DRIVER", "usbhid"}};
}

udev::Properties With(udev::Properties props, const udev::Properties& more) {
  for (const auto& kv : more) props.push_back(kv);
  return props;
}

TEST_F(GuestRecordedTest, UsbKeyboard) {
  const std::string hid = AddUsbHid(1, "QEMU USB Keyboard", "68284-0000:00:05.0-1", testing::kGuestKeyboardDescriptors,
                                    "0003:0627:0001.0001", "01", "01");
  AddInput({.parent = hid, .input = 4, .event = 2, .mouse = -1, .attrs = testing::kGuestUsbKeyboard});
  const std::string input = absl::StrCat(hid, "/input/input4");
  const udev::Properties expected =
      With({{"ID_INPUT", "1"}, {"ID_INPUT_KEY", "1"}, {"ID_INPUT_KEYBOARD", "1"}},
           With(UsbIdentity("Keyboard", "68284-0000:00:05.0-1", ":030101:"),
                {{"ID_PATH", "pci-0000:00:05.0-usb-0:1:1.0"}, {"ID_PATH_TAG", "pci-0000_00_05_0-usb-0_1_1_0"}}));
  // 71-seat.rules tags inputN (not its event node) "seat" with its ID_FOR_SEAT.
  EXPECT_THAT(Compute(input, "input").first,
              UnorderedElementsAreArray(
                  With(expected, {{"ID_FOR_SEAT", "input-pci-0000_00_05_0-usb-0_1_1_0"}})));
  EXPECT_THAT(tags_, ElementsAre("seat"));
  const auto [props, links] = Compute(absl::StrCat(input, "/event2"), "input", {{"DEVNAME", "input/event2"}});
  EXPECT_THAT(props, UnorderedElementsAreArray(expected));
  EXPECT_THAT(tags_, IsEmpty());
  EXPECT_THAT(links, UnorderedElementsAre(
                         "input/by-id/usb-QEMU_QEMU_USB_Keyboard_68284-0000:00:05.0-1-event-kbd",
                         "input/by-path/pci-0000:00:05.0-usb-0:1:1.0-event-kbd"));
}

TEST_F(GuestRecordedTest, UsbMouseAndTablet) {
  const std::string mouse_hid = AddUsbHid(2, "QEMU USB Mouse", "89126-0000:00:05.0-2", testing::kGuestMouseDescriptors,
                                          "0003:0627:0001.0002", "01", "02");
  const std::string tablet_hid = AddUsbHid(3, "QEMU USB Tablet", "28754-0000:00:05.0-3", testing::kGuestTabletDescriptors,
                                           "0003:0627:0001.0003", "00", "00");
  AddInput({.parent = mouse_hid, .input = 5, .event = 3, .mouse = 1, .attrs = testing::kGuestUsbMouse});
  AddInput({.parent = tablet_hid, .input = 6, .event = 4, .mouse = 2, .attrs = testing::kGuestUsbTablet});
  const std::string mouse = absl::StrCat(mouse_hid, "/input/input5");
  const std::string tablet = absl::StrCat(tablet_hid, "/input/input6");
  // The tablet has absolute axes and BTN_LEFT but no pen tool: input_id calls it a mouse.
  const udev::Properties expected_mouse =
      With({{"ID_INPUT", "1"}, {"ID_INPUT_MOUSE", "1"}},
           With(UsbIdentity("Mouse", "89126-0000:00:05.0-2", ":030102:"),
                {{"ID_PATH", "pci-0000:00:05.0-usb-0:2:1.0"}, {"ID_PATH_TAG", "pci-0000_00_05_0-usb-0_2_1_0"}}));
  const udev::Properties expected_tablet =
      With({{"ID_INPUT", "1"}, {"ID_INPUT_MOUSE", "1"}},
           With(UsbIdentity("Tablet", "28754-0000:00:05.0-3", ":030000:"),
                {{"ID_PATH", "pci-0000:00:05.0-usb-0:3:1.0"}, {"ID_PATH_TAG", "pci-0000_00_05_0-usb-0_3_1_0"}}));
  EXPECT_THAT(Compute(mouse, "input").first,
              UnorderedElementsAreArray(
                  With(expected_mouse, {{"ID_FOR_SEAT", "input-pci-0000_00_05_0-usb-0_2_1_0"}})));
  EXPECT_THAT(tags_, ElementsAre("seat"));
  EXPECT_THAT(Compute(tablet, "input").first,
              UnorderedElementsAreArray(
                  With(expected_tablet, {{"ID_FOR_SEAT", "input-pci-0000_00_05_0-usb-0_3_1_0"}})));
  EXPECT_THAT(tags_, ElementsAre("seat"));
  auto [props, links] = Compute(absl::StrCat(mouse, "/mouse1"), "input", {{"DEVNAME", "input/mouse1"}});
  EXPECT_THAT(props, UnorderedElementsAreArray(expected_mouse));
  EXPECT_THAT(tags_, IsEmpty());
  EXPECT_THAT(links, UnorderedElementsAre("input/by-id/usb-QEMU_QEMU_USB_Mouse_89126-0000:00:05.0-2-mouse",
                                          "input/by-path/pci-0000:00:05.0-usb-0:2:1.0-mouse"));
  std::tie(props, links) = Compute(absl::StrCat(tablet, "/event4"), "input", {{"DEVNAME", "input/event4"}});
  EXPECT_THAT(props, UnorderedElementsAreArray(expected_tablet));
  EXPECT_THAT(links, UnorderedElementsAre("input/by-id/usb-QEMU_QEMU_USB_Tablet_28754-0000:00:05.0-3-event-mouse",
                                          "input/by-path/pci-0000:00:05.0-usb-0:3:1.0-event-mouse"));
}

TEST_F(GuestRecordedTest, I8042KeyboardAndPs2MouseHaveByPathLinksOnly) {
  AddI8042();
  AddInput({.parent = "/devices/platform/i8042/serio0", .input = 0, .event = 0, .mouse = -1, .attrs = testing::kGuestAtKeyboard});
  AddInput({.parent = "/devices/platform/i8042/serio1", .input = 3, .event = 1, .mouse = 0, .attrs = testing::kGuestPs2Mouse});
  auto [props, links] = Compute("/devices/platform/i8042/serio0/input/input0/event0", "input",
                                {{"DEVNAME", "input/event0"}});
  EXPECT_THAT(props, UnorderedElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_KEY", "1"),
                                          Pair("ID_INPUT_KEYBOARD", "1"), Pair("ID_BUS", "i8042"),
                                          Pair("ID_SERIAL", "noserial"), Pair("ID_PATH", "platform-i8042-serio-0"),
                                          Pair("ID_PATH_TAG", "platform-i8042-serio-0")));
  EXPECT_THAT(links, ElementsAre("input/by-path/platform-i8042-serio-0-event-kbd"));
  std::tie(props, links) = Compute("/devices/platform/i8042/serio1/input/input3/mouse0", "input",
                                   {{"DEVNAME", "input/mouse0"}});
  EXPECT_THAT(props, UnorderedElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_MOUSE", "1"), Pair("ID_BUS", "i8042"),
                                          Pair("ID_SERIAL", "noserial"), Pair("ID_PATH", "platform-i8042-serio-1"),
                                          Pair("ID_PATH_TAG", "platform-i8042-serio-1")));
  EXPECT_THAT(links, ElementsAre("input/by-path/platform-i8042-serio-1-mouse"));
  EXPECT_THAT(tags_, IsEmpty());
  EXPECT_EQ(udev::PropertyValue(Compute("/devices/platform/i8042/serio0/input/input0", "input").first,
                          "ID_FOR_SEAT"),
            "input-platform-i8042-serio-0");
  EXPECT_THAT(tags_, ElementsAre("seat"));
  EXPECT_EQ(udev::PropertyValue(Compute("/devices/platform/i8042/serio1/input/input3", "input").first,
                          "ID_FOR_SEAT"),
            "input-platform-i8042-serio-1");
  EXPECT_THAT(tags_, ElementsAre("seat"));
}

TEST_F(GuestRecordedTest, PciUsbPlatformAndLedsGetPathId) {
  const std::string hid = AddUsbHid(1, "QEMU USB Keyboard", "68284-0000:00:05.0-1", testing::kGuestKeyboardDescriptors,
                                    "0003:0627:0001.0001", "01", "01");
  AddInput({.parent = hid, .input = 4, .event = 2, .mouse = -1, .attrs = testing::kGuestUsbKeyboard});
  Add(absl::StrCat(hid, "/input/input4/input4::capslock"), "leds", {}, {}, FakeSysfs::Kind::kClass);
  AddI8042();
  Add("/devices/platform/floppy.0", "platform");
  Add("/devices/platform/floppy.0/block/fd0", "block", {{"MAJOR", "2"}, {"MINOR", "0"}, {"DEVNAME", "fd0"}},
      {}, FakeSysfs::Kind::kClass);
  EXPECT_THAT(Compute(kXhci, "pci").first,
              ElementsAre(Pair("ID_PATH", "pci-0000:00:05.0"), Pair("ID_PATH_TAG", "pci-0000_00_05_0")));
  EXPECT_THAT(tags_, IsEmpty());
  // The root hub: no port in its name, so the path stops at the controller. Hubs and class-00
  // devices are "seat" ports.
  const udev::Properties hub = Compute(absl::StrCat(kXhci, "/usb1"), "usb", {{"DEVTYPE", "usb_device"}}).first;
  EXPECT_EQ(udev::PropertyValue(hub, "ID_PATH"), "pci-0000:00:05.0");
  EXPECT_EQ(udev::PropertyValue(hub, "ID_FOR_SEAT"), "usb-pci-0000_00_05_0");
  EXPECT_THAT(tags_, ElementsAre("seat"));
  const udev::Properties keyboard =
      Compute(absl::StrCat(kXhci, "/usb1/1-1"), "usb", {{"DEVTYPE", "usb_device"}}).first;
  EXPECT_EQ(udev::PropertyValue(keyboard, "ID_PATH"), "pci-0000:00:05.0-usb-0:1");
  EXPECT_EQ(udev::PropertyValue(keyboard, "ID_FOR_SEAT"), "usb-pci-0000_00_05_0-usb-0_1");
  EXPECT_THAT(tags_, ElementsAre("seat"));
  EXPECT_THAT(Compute(absl::StrCat(kXhci, "/usb1/1-1/1-1:1.0"), "usb", {{"DEVTYPE", "usb_interface"}}).first,
              ElementsAre(Pair("ID_PATH", "pci-0000:00:05.0-usb-0:1:1.0"),
                          Pair("ID_PATH_TAG", "pci-0000_00_05_0-usb-0_1_1_0")));
  EXPECT_THAT(tags_, IsEmpty());
  EXPECT_THAT(Compute(absl::StrCat(hid, "/input/input4/input4::capslock"), "leds").first,
              ElementsAre(Pair("ID_PATH", "pci-0000:00:05.0-usb-0:1:1.0"),
                          Pair("ID_PATH_TAG", "pci-0000_00_05_0-usb-0_1_1_0"),
                          Pair("ID_FOR_SEAT", "leds-pci-0000_00_05_0-usb-0_1_1_0")));
  EXPECT_THAT(tags_, ElementsAre("seat"));
  EXPECT_THAT(Compute("/devices/platform/i8042", "platform").first,
              ElementsAre(Pair("ID_PATH", "platform-i8042"), Pair("ID_PATH_TAG", "platform-i8042")));
  EXPECT_THAT(Compute("/devices/platform/floppy.0", "platform").first,
              ElementsAre(Pair("ID_PATH", "platform-floppy.0"), Pair("ID_PATH_TAG", "platform-floppy_0")));
  // 60-persistent-storage.rules leaves fd* alone: no ID_PATH, no links.
  const auto [fd_props, fd_links] = Compute("/devices/platform/floppy.0/block/fd0", "block",
                                            {{"DEVTYPE", "disk"}, {"DEVNAME", "fd0"}});
  EXPECT_THAT(fd_props, IsEmpty());
  EXPECT_THAT(fd_links, IsEmpty());
  EXPECT_THAT(tags_, IsEmpty());
}

TEST_F(GuestRecordedTest, NetworkInterfacesGetTheirPciIdsAndPath) {
  Add("/devices/pci0000:00/0000:00:03.0", "pci", {}, {{"vendor", "0x8086"}, {"device", "0x100e"}});
  Add("/devices/pci0000:00/0000:00:03.0/net/eth0", "net", {{"INTERFACE", "eth0"}, {"IFINDEX", "2"}}, {},
      FakeSysfs::Kind::kClass);
  Add("/devices/pci0000:00/0000:00:04.0", "pci", {}, {{"vendor", "0x1af4"}, {"device", "0x1000"}});
  Add("/devices/pci0000:00/0000:00:04.0/virtio0", "virtio", {}, {{"vendor", "0x1af4"}, {"device", "0x0001"}});
  Add("/devices/pci0000:00/0000:00:04.0/virtio0/net/eth1", "net", {{"INTERFACE", "eth1"}, {"IFINDEX", "3"}}, {},
      FakeSysfs::Kind::kClass);
  Add("/devices/virtual/net/lo", "net", {{"INTERFACE", "lo"}, {"IFINDEX", "1"}}, {}, FakeSysfs::Kind::kClass);
  EXPECT_THAT(Compute("/devices/pci0000:00/0000:00:03.0/net/eth0", "net").first,
              UnorderedElementsAre(Pair("ID_BUS", "pci"), Pair("ID_VENDOR_ID", "0x8086"),
                                   Pair("ID_MODEL_ID", "0x100e"), Pair("ID_PATH", "pci-0000:00:03.0"),
                                   Pair("ID_PATH_TAG", "pci-0000_00_03_0")));
  // virtio-net: the PCI function's ids (the virtio device's own are not what the rule reads).
  EXPECT_THAT(Compute("/devices/pci0000:00/0000:00:04.0/virtio0/net/eth1", "net").first,
              UnorderedElementsAre(Pair("ID_BUS", "pci"), Pair("ID_VENDOR_ID", "0x1af4"),
                                   Pair("ID_MODEL_ID", "0x1000"), Pair("ID_PATH", "pci-0000:00:04.0"),
                                   Pair("ID_PATH_TAG", "pci-0000_00_04_0")));
  EXPECT_THAT(Compute("/devices/virtual/net/lo", "net").first, IsEmpty());
}

// The virtio GPU of the tags' run (`-device virtio-gpu-pci`, at 00:06.0; its drm and fbdev
// devices hang from the PCI function): udevd's 70-uaccess and 71-seat tags and ID_FOR_SEAT.
TEST_F(GuestRecordedTest, VirtioGpuDrmDevicesAndFramebufferTags) {
  const std::string gpu = "/devices/pci0000:00/0000:00:06.0";
  Add(gpu, "pci", {{"DRIVER", "virtio-pci"}, {"PCI_CLASS", "38000"}, {"PCI_ID", "1AF4:1050"}},
      {{"class", "0x038000"}, {"vendor", "0x1af4"}, {"device", "0x1050"}});
  Add(gpu + "/drm/card0", "drm",
      {{"DEVTYPE", "drm_minor"}, {"MAJOR", "226"}, {"MINOR", "0"}, {"DEVNAME", "dri/card0"}}, {},
      FakeSysfs::Kind::kClass);
  Add(gpu + "/drm/card0/card0-Virtual-1", "drm", {{"DEVTYPE", "drm_connector"}}, {},
      FakeSysfs::Kind::kClass);
  Add(gpu + "/drm/renderD128", "drm",
      {{"DEVTYPE", "drm_minor"}, {"MAJOR", "226"}, {"MINOR", "128"}, {"DEVNAME", "dri/renderD128"}},
      {}, FakeSysfs::Kind::kClass);
  Add(gpu + "/graphics/fb0", "graphics", {{"MAJOR", "29"}, {"MINOR", "0"}, {"DEVNAME", "fb0"}}, {},
      FakeSysfs::Kind::kClass);
  const udev::Properties path = {{"ID_PATH", "pci-0000:00:06.0"}, {"ID_PATH_TAG", "pci-0000_00_06_0"}};
  // The PCI function has a driver: path_id only, no tag.
  EXPECT_THAT(Compute(gpu, "pci", {{"DRIVER", "virtio-pci"}}).first,
              UnorderedElementsAreArray(path));
  EXPECT_THAT(tags_, IsEmpty());
  EXPECT_THAT(Compute(gpu + "/drm/card0", "drm",
                      {{"DEVTYPE", "drm_minor"}, {"MAJOR", "226"}, {"MINOR", "0"}})
                  .first,
              UnorderedElementsAreArray(With(path, {{"ID_FOR_SEAT", "drm-pci-0000_00_06_0"}})));
  EXPECT_THAT(tags_, UnorderedElementsAre("uaccess", "seat", "master-of-seat"));
  EXPECT_THAT(
      Compute(gpu + "/drm/card0/card0-Virtual-1", "drm", {{"DEVTYPE", "drm_connector"}}).first,
      UnorderedElementsAreArray(With(path, {{"ID_FOR_SEAT", "drm-pci-0000_00_06_0"}})));
  EXPECT_THAT(tags_, UnorderedElementsAre("seat", "master-of-seat"));
  EXPECT_THAT(Compute(gpu + "/drm/renderD128", "drm",
                      {{"DEVTYPE", "drm_minor"}, {"MAJOR", "226"}, {"MINOR", "128"}})
                  .first,
              UnorderedElementsAreArray(With(path, {{"ID_FOR_SEAT", "drm-pci-0000_00_06_0"}})));
  EXPECT_THAT(tags_, UnorderedElementsAre("uaccess", "seat"));
  EXPECT_THAT(
      Compute(gpu + "/graphics/fb0", "graphics", {{"MAJOR", "29"}, {"MINOR", "0"}}).first,
      UnorderedElementsAreArray(With(path, {{"ID_FOR_SEAT", "graphics-pci-0000_00_06_0"}})));
  EXPECT_THAT(tags_, ElementsAre("seat"));
}

}  // namespace
}  // namespace hotring::hotplug::udevcompat

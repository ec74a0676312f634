// input_id, path_id and usb_id on sysfs trees recorded from a qemu x86_64 guest (Debian 12,
// kernel 6.1: USB keyboard and tablet on the xHCI at 00:04.0, the i8042 keyboard and mouse, the
// ACPI power button, a virtio disk) plus capability sets of devices qemu has not (touchscreen,
// touchpad, joystick, pen tablet, accelerometer, lid switch). The expected properties are those
// systemd-udevd 252 sets on the same trees (its builtins' rules, see docs/udev-compat.md).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/sysfs_view.h"
#include "hotplug/udev/sysfs_fixture.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::udev {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using testing::FakeSysfs;

struct Caps {
  std::string ev, key = "0", rel = "0", abs = "0", sw = "0", props = "0", bustype = "0011";
};

class BuiltinsTest : public SysfsFixture {
 protected:
  // An input device (inputN) with its capabilities and an eventN child.
  std::string AddInput(const std::string& parent, int n, const Caps& caps) {
    const std::string input = absl::StrCat(parent, "/input/input", n);
    Add(input, "input", {{"PRODUCT", "3/1/1/1"}}, {}, FakeSysfs::Kind::kClass);
    for (const auto& [name, value] :
         std::vector<std::pair<std::string, std::string>>{{"capabilities/ev", caps.ev},
                                                          {"capabilities/key", caps.key},
                                                          {"capabilities/rel", caps.rel},
                                                          {"capabilities/abs", caps.abs},
                                                          {"capabilities/sw", caps.sw},
                                                          {"properties", caps.props},
                                                          {"id/bustype", caps.bustype}}) {
      // Bitmaps as a kernel of this build's word size prints them (recorded on x86-64).
      const std::string text = name == "id/bustype" ? value : testing::KernelBitmap(value);
      EXPECT_TRUE(sys_->WriteFile(absl::StrCat(input, "/", name), text + "\n").ok());
    }
    const std::string event = absl::StrCat(input, "/event", n);
    Add(event, "input",
        {{"MAJOR", "13"}, {"MINOR", absl::StrCat(64 + n)}, {"DEVNAME", absl::StrCat("input/event", n)}},
        {}, FakeSysfs::Kind::kClass);
    return event;
  }

  // qemu's xHCI with a USB HID device at port `port`.
  std::string AddUsbHid(const std::string& port, const std::string& product,
                        const std::string& id_product, const std::string& serial) {
    Add("/devices/pci0000:00/0000:00:04.0", "pci", {{"PCI_ID", "1B36:000D"}});
    Add("/devices/pci0000:00/0000:00:04.0/usb1", "usb", {{"DEVTYPE", "usb_device"}},
        {{"idVendor", "1d6b"}, {"idProduct", "0002"}});
    const std::string dev = absl::StrCat("/devices/pci0000:00/0000:00:04.0/usb1/1-", port);
    // Device, configuration and one HID interface descriptor (class 03, subclass 01, proto 01).
    std::string descriptors(18, '\0');
    descriptors[0] = 18;
    descriptors[1] = 1;
    descriptors += std::string("\x09\x02\x22\x00\x01\x01\x00\xa0\x32", 9);
    descriptors += std::string("\x09\x04\x00\x00\x01\x03\x01\x01\x00", 9);
    descriptors += std::string("\x09\x21\x11\x01\x00\x01\x22\x3f\x00", 9);
    Add(dev, "usb", {{"DEVTYPE", "usb_device"}, {"PRODUCT", "627/1/0"}},
        {{"idVendor", "0627"},
         {"idProduct", id_product},
         {"manufacturer", "QEMU"},
         {"product", product},
         {"serial", serial},
         {"bcdDevice", "0000"},
         {"descriptors", descriptors}});
    const std::string intf = absl::StrCat(dev, "/1-", port, ":1.0");
    Add(intf, "usb", {{"DEVTYPE", "usb_interface"}},
        {{"bInterfaceNumber", "00"}, {"bInterfaceClass", "03"}, {"bInterfaceSubClass", "01"}});
    EXPECT_TRUE(sys_->AddDriver("usb", "usbhid").ok());
    EXPECT_EQ(::symlink("../../../../../../bus/usb/drivers/usbhid",
                        sys_->Path(absl::StrCat(intf, "/driver")).c_str()),
              0);
    const std::string hid = absl::StrCat(intf, "/0003:0627:", id_product, ".0001");
    Add(hid, "hid");
    return hid;
  }

  [[nodiscard]] DirSysfsView View() const { return DirSysfsView(sys_->root()); }

};

// capabilities/key of qemu's USB keyboard and of the i8042 AT keyboard (64-bit words).
constexpr char kUsbKeyboardKeys[] =
    "1000000000007 ff9f207ac14057ff febeffdfffefffff fffffffffffffffe";
constexpr char kAtKeyboardKeys[] = "402000000 3803078f800d001 feffffdfffefffff fffffffffffffffe";

TEST_F(BuiltinsTest, QemuUsbKeyboard) {
  const std::string hid = AddUsbHid("1", "QEMU USB Keyboard", "0001", "68284-0000:00:04.0-1");
  const std::string event = AddInput(hid, 2, {.ev = "120013", .key = kUsbKeyboardKeys, .bustype = "0003"});
  const DirSysfsView view = View();
  EXPECT_THAT(InputId(view, event),
              ElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_KEY", "1"),
                          Pair("ID_INPUT_KEYBOARD", "1")));
  EXPECT_THAT(PathId(view, event), ElementsAre(Pair("ID_PATH", "pci-0000:00:04.0-usb-0:1:1.0"),
                                               Pair("ID_PATH_TAG", "pci-0000_00_04_0-usb-0_1_1_0")));
  const Properties usb = UsbId(view, event);
  EXPECT_EQ(PropertyValue(usb, "ID_BUS"), "usb");
  EXPECT_EQ(PropertyValue(usb, "ID_VENDOR"), "QEMU");
  EXPECT_EQ(PropertyValue(usb, "ID_VENDOR_ENC"), "QEMU");
  EXPECT_EQ(PropertyValue(usb, "ID_VENDOR_ID"), "0627");
  EXPECT_EQ(PropertyValue(usb, "ID_MODEL"), "QEMU_USB_Keyboard");
  EXPECT_EQ(PropertyValue(usb, "ID_MODEL_ENC"), "QEMU\\x20USB\\x20Keyboard");
  EXPECT_EQ(PropertyValue(usb, "ID_MODEL_ID"), "0001");
  EXPECT_EQ(PropertyValue(usb, "ID_REVISION"), "0000");
  EXPECT_EQ(PropertyValue(usb, "ID_SERIAL"), "QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1");
  EXPECT_EQ(PropertyValue(usb, "ID_SERIAL_SHORT"), "68284-0000:00:04.0-1");
  EXPECT_EQ(PropertyValue(usb, "ID_TYPE"), "hid");
  EXPECT_EQ(PropertyValue(usb, "ID_USB_INTERFACES"), ":030101:");
  EXPECT_EQ(PropertyValue(usb, "ID_USB_INTERFACE_NUM"), "00");
  EXPECT_EQ(PropertyValue(usb, "ID_USB_DRIVER"), "usbhid");
  EXPECT_EQ(PropertyValue(usb, "ID_USB_SERIAL"), "QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1");
}

TEST_F(BuiltinsTest, QemuUsbTabletIsAMouseWithAbsoluteAxes) {
  const std::string hid = AddUsbHid("2", "QEMU USB Tablet", "0001", "28754-0000:00:04.0-2");
  const std::string event =
      AddInput(hid, 4, {.ev = "1f", .key = "70000 0 0 0 0", .rel = "900", .abs = "3", .bustype = "0003"});
  const DirSysfsView view = View();
  EXPECT_THAT(InputId(view, event), ElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_MOUSE", "1")));
  EXPECT_EQ(PropertyValue(PathId(view, event), "ID_PATH"), "pci-0000:00:04.0-usb-0:2:1.0");
  EXPECT_EQ(PropertyValue(UsbId(view, event), "ID_SERIAL"), "QEMU_QEMU_USB_Tablet_28754-0000:00:04.0-2");
}

TEST_F(BuiltinsTest, SerialWithCommaOrNonAsciiIsIgnored) {
  const std::string hid = AddUsbHid("3", "Pad", "0003", "AB,CD");
  const Properties usb = UsbId(View(), hid);
  EXPECT_EQ(PropertyValue(usb, "ID_SERIAL"), "QEMU_Pad");
  EXPECT_EQ(PropertyValue(usb, "ID_SERIAL_SHORT"), "");
}

TEST_F(BuiltinsTest, VendorAndModelFallBackToIds) {
  Add("/devices/pci0000:00/0000:00:04.0", "pci");
  Add("/devices/pci0000:00/0000:00:04.0/usb1", "usb", {{"DEVTYPE", "usb_device"}});
  Add("/devices/pci0000:00/0000:00:04.0/usb1/1-4", "usb", {{"DEVTYPE", "usb_device"}},
      {{"idVendor", "abcd"}, {"idProduct", "1234"}, {"serial", " my serial/1 "}});
  const Properties usb = UsbId(View(), "/devices/pci0000:00/0000:00:04.0/usb1/1-4");
  EXPECT_EQ(PropertyValue(usb, "ID_VENDOR"), "abcd");
  EXPECT_EQ(PropertyValue(usb, "ID_MODEL"), "1234");
  // Whitespace folded to '_', '/' replaced: nothing from the device can become a path.
  EXPECT_EQ(PropertyValue(usb, "ID_SERIAL"), "abcd_1234_my_serial_1");
  EXPECT_EQ(PropertyValue(usb, "ID_TYPE"), "");
}

TEST_F(BuiltinsTest, NotUsbHasNoUsbProperties) {
  Add("/devices/platform/i8042", "platform");
  Add("/devices/platform/i8042/serio0", "serio");
  const std::string event = AddInput("/devices/platform/i8042/serio0", 1, {.ev = "120013", .key = kAtKeyboardKeys});
  EXPECT_THAT(UsbId(View(), event), IsEmpty());
}

TEST_F(BuiltinsTest, I8042KeyboardAndMouse) {
  Add("/devices/platform/i8042", "platform");
  Add("/devices/platform/i8042/serio0", "serio");
  Add("/devices/platform/i8042/serio1", "serio");
  const std::string kbd = AddInput("/devices/platform/i8042/serio0", 1, {.ev = "120013", .key = kAtKeyboardKeys});
  const std::string mouse =
      AddInput("/devices/platform/i8042/serio1", 3, {.ev = "7", .key = "1f0000 0 0 0 0", .rel = "143"});
  const DirSysfsView view = View();
  EXPECT_THAT(InputId(view, kbd), ElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_KEY", "1"),
                                              Pair("ID_INPUT_KEYBOARD", "1")));
  EXPECT_THAT(InputId(view, mouse), ElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_MOUSE", "1")));
  EXPECT_THAT(PathId(view, kbd), ElementsAre(Pair("ID_PATH", "platform-i8042-serio-0"),
                                             Pair("ID_PATH_TAG", "platform-i8042-serio-0")));
  EXPECT_EQ(PropertyValue(PathId(view, mouse), "ID_PATH"), "platform-i8042-serio-1");
  // The inputN device itself gets the same properties as its eventN.
  EXPECT_THAT(InputId(view, "/devices/platform/i8042/serio1/input/input3"),
              ElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_MOUSE", "1")));
}

TEST_F(BuiltinsTest, AcpiPowerButtonHasKeysButIsNoKeyboard) {
  Add("/devices/LNXSYSTM:00", "acpi");
  Add("/devices/LNXSYSTM:00/LNXPWRBN:00", "acpi");
  const std::string event =
      AddInput("/devices/LNXSYSTM:00/LNXPWRBN:00", 0, {.ev = "3", .key = "10000000000000 0", .bustype = "0019"});
  const DirSysfsView view = View();
  EXPECT_THAT(InputId(view, event), ElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_KEY", "1")));
  EXPECT_THAT(PathId(view, event), ElementsAre(Pair("ID_PATH", "acpi-LNXPWRBN:00"),
                                               Pair("ID_PATH_TAG", "acpi-LNXPWRBN_00")));
}

TEST_F(BuiltinsTest, DevicesQemuHasNot) {
  Add("/devices/platform/dev", "platform");
  const DirSysfsView view = View();
  struct Case {
    Caps caps;
    std::vector<std::pair<std::string, std::string>> expected;
  };
  // BTN_TOUCH (0x14a) = word 5 bit 10; BTN_TOOL_FINGER (0x145) = word 5 bit 5; BTN_TOOL_PEN
  // (0x140) = word 5 bit 0; BTN_STYLUS (0x14b) = word 5 bit 11; BTN_A (0x130) = word 4 bit 48;
  // BTN_LEFT (0x110) = word 4 bit 16. ABS_MT_POSITION_X/Y = 0x35/0x36.
  const std::vector<Case> cases = {
      {{.ev = "b", .key = "400 0 0 0 0 0", .abs = "3", .props = "2"},
       {{"ID_INPUT", "1"}, {"ID_INPUT_TOUCHSCREEN", "1"}}},
      {{.ev = "b", .key = "6420 10000 0 0 0 0", .abs = "660800000000003"},
       {{"ID_INPUT", "1"}, {"ID_INPUT_TOUCHPAD", "1"}}},
      {{.ev = "b", .key = "1 0 0 0 0", .abs = "30027", .bustype = "0003"},
       {{"ID_INPUT", "1"}, {"ID_INPUT_JOYSTICK", "1"}}},
      {{.ev = "b", .key = "c01 0 0 0 0 0", .abs = "1000003"},
       {{"ID_INPUT", "1"}, {"ID_INPUT_TABLET", "1"}}},
      {{.ev = "9", .abs = "7"}, {{"ID_INPUT", "1"}, {"ID_INPUT_ACCELEROMETER", "1"}}},
      {{.ev = "21", .sw = "1"}, {{"ID_INPUT", "1"}, {"ID_INPUT_SWITCH", "1"}}},
      // Only a scroll wheel: udev calls it a key device.
      {{.ev = "5", .rel = "100"}, {{"ID_INPUT", "1"}, {"ID_INPUT_KEY", "1"}}},
      // A mouse on I2C is a pointing stick.
      {{.ev = "7", .key = "70000 0 0 0 0", .rel = "3", .bustype = "0018"},
       {{"ID_INPUT", "1"}, {"ID_INPUT_POINTINGSTICK", "1"}, {"ID_INPUT_MOUSE", "1"}}},
  };
  // Touchpad: BTN_TOOL_FINGER + BTN_TOUCH + BTN_LEFT... the key map above puts BTN_LEFT (word 4)
  // and BTN_TOOL_FINGER, BTN_TOUCH, BTN_TOOL_DOUBLETAP (word 5).
  int n = 10;
  for (const Case& c : cases) {
    const std::string event = AddInput("/devices/platform/dev", n, c.caps);
    Properties expected(c.expected.begin(), c.expected.end());
    EXPECT_EQ(InputId(view, event), expected) << "case ev=" << c.caps.ev << " key=" << c.caps.key;
    ++n;
  }
}

TEST_F(BuiltinsTest, NoInputAncestorNoProperties) {
  Add("/devices/platform/serial8250", "platform");
  Add("/devices/platform/serial8250/tty/ttyS0", "tty", {{"MAJOR", "4"}, {"MINOR", "64"}}, {},
      FakeSysfs::Kind::kClass);
  EXPECT_THAT(InputId(View(), "/devices/platform/serial8250/tty/ttyS0"), IsEmpty());
  // platform parent: a path, even for a tty.
  EXPECT_EQ(PropertyValue(PathId(View(), "/devices/platform/serial8250/tty/ttyS0"), "ID_PATH"),
            "platform-serial8250");
}

TEST_F(BuiltinsTest, VirtioDiskAndPartition) {
  // Recorded from this machine: `udevadm test-builtin path_id /sys/block/vda` says
  // ID_PATH=pci-0000:00:02.0, ID_PATH_TAG=pci-0000_00_02_0.
  Add("/devices/pci0000:00/0000:00:02.0", "pci");
  Add("/devices/pci0000:00/0000:00:02.0/virtio1", "virtio");
  Add("/devices/pci0000:00/0000:00:02.0/virtio1/block/vda", "block",
      {{"MAJOR", "254"}, {"MINOR", "0"}, {"DEVNAME", "vda"}, {"DEVTYPE", "disk"}}, {},
      FakeSysfs::Kind::kClass);
  Add("/devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1", "block",
      {{"MAJOR", "254"}, {"MINOR", "1"}, {"DEVNAME", "vda1"}, {"DEVTYPE", "partition"}},
      {{"partition", "1"}}, FakeSysfs::Kind::kClass);
  const DirSysfsView view = View();
  EXPECT_THAT(PathId(view, "/devices/pci0000:00/0000:00:02.0/virtio1/block/vda"),
              ElementsAre(Pair("ID_PATH", "pci-0000:00:02.0"), Pair("ID_PATH_TAG", "pci-0000_00_02_0")));
  EXPECT_EQ(PropertyValue(PathId(view, "/devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1"), "ID_PATH"),
            "pci-0000:00:02.0");
}

TEST_F(BuiltinsTest, BlockDeviceWithoutTransportHasNoPath) {
  Add("/devices/pci0000:00/0000:00:05.0", "pci");
  Add("/devices/pci0000:00/0000:00:05.0/block/xyz0", "block", {{"DEVTYPE", "disk"}}, {},
      FakeSysfs::Kind::kClass);
  EXPECT_THAT(PathId(View(), "/devices/pci0000:00/0000:00:05.0/block/xyz0"), IsEmpty());
  // Virtual devices have no path at all.
  Add("/devices/virtual/block/loop0", "block", {{"DEVTYPE", "disk"}}, {}, FakeSysfs::Kind::kClass);
  EXPECT_THAT(PathId(View(), "/devices/virtual/block/loop0"), IsEmpty());
}

TEST_F(BuiltinsTest, ScsiDiskBehindAta) {
  Add("/devices/pci0000:00/0000:00:1f.2", "pci");
  Add("/devices/pci0000:00/0000:00:1f.2/ata3", "");
  ASSERT_TRUE(sys_->WriteFile("/devices/pci0000:00/0000:00:1f.2/ata3/uevent", "").ok());
  Add("/devices/pci0000:00/0000:00:1f.2/ata3/ata_port/ata3", "ata_port", {}, {{"port_no", "3"}},
      FakeSysfs::Kind::kClass);
  Add("/devices/pci0000:00/0000:00:1f.2/ata3/host2", "scsi", {{"DEVTYPE", "scsi_host"}});
  Add("/devices/pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0", "scsi", {{"DEVTYPE", "scsi_target"}});
  Add("/devices/pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0", "scsi",
      {{"DEVTYPE", "scsi_device"}});
  const std::string sda = "/devices/pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0/block/sda";
  Add(sda, "block", {{"DEVTYPE", "disk"}}, {}, FakeSysfs::Kind::kClass);
  EXPECT_THAT(PathId(View(), sda),
              ElementsAre(Pair("ID_PATH", "pci-0000:00:1f.2-ata-3.0"),
                          Pair("ID_PATH_TAG", "pci-0000_00_1f_2-ata-3_0"),
                          Pair("ID_PATH_ATA_COMPAT", "pci-0000:00:1f.2-ata-3")));
}

TEST_F(BuiltinsTest, MalformedCapabilitiesAreIgnoredWordByWord) {
  Add("/devices/platform/dev", "platform");
  const std::string event = AddInput("/devices/platform/dev", 1, {.ev = "zz 3", .key = "nothex 10000000000000 0"});
  // "zz" is skipped (udev does too); ev's word 0 = 3 has EV_KEY; KEY_POWER is in word 1.
  EXPECT_THAT(InputId(View(), event), ElementsAre(Pair("ID_INPUT", "1"), Pair("ID_INPUT_KEY", "1")));
}

}  // namespace
}  // namespace hotring::hotplug::udev

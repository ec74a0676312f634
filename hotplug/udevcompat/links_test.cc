#include "hotplug/udevcompat/links.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::udevcompat {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Event Block(const std::string& name, const std::string& devtype) {
  Event e;
  e.action = "add";
  e.subsystem = "block";
  e.devpath = "/devices/pci0000:00/0000:00:02.0/virtio1/block/" +
              (devtype == "partition" ? "vda/" + name : name);
  e.devname = name;
  e.major = "254";
  e.env = {{"DEVTYPE", devtype}};
  return e;
}

Event Input(const std::string& name) {
  Event e;
  e.action = "add";
  e.subsystem = "input";
  e.devpath = "/devices/x/input/input3/" + name;
  e.devname = "input/" + name;
  e.major = "13";
  return e;
}

TEST(PersistentLinks, PartitionWithFilesystemAndGptEntry) {
  const udev::Properties props = {{"ID_PATH", "pci-0000:00:02.0"},
                            {"ID_FS_UUID_ENC", "0b9c1d3e-5f7a-4c2b-9e8d-123456789abc"},
                            {"ID_FS_LABEL_ENC", "root\\x20fs"},
                            {"ID_FS_USAGE", "filesystem"},
                            {"ID_PART_ENTRY_SCHEME", "gpt"},
                            {"ID_PART_ENTRY_NAME", "my\\x20root\\x2fx"},
                            {"ID_PART_ENTRY_UUID", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}};
  EXPECT_THAT(PersistentLinks(Block("vda1", "partition"), props, {.virtio_serial = "SER1"}),
              ElementsAre("disk/by-id/virtio-SER1-part1", "disk/by-path/pci-0000:00:02.0-part1",
                          "disk/by-path/virtio-pci-0000:00:02.0-part1",
                          "disk/by-uuid/0b9c1d3e-5f7a-4c2b-9e8d-123456789abc",
                          "disk/by-label/root\\x20fs",
                          "disk/by-partuuid/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                          "disk/by-partlabel/my\\x20root\\x2fx"));
}

TEST(PersistentLinks, UsbDiskByIdAndDiskseq) {
  Event e = Block("sda", "disk");
  e.devpath = "/devices/x/block/sda";
  e.env.emplace_back("DISKSEQ", "9");
  const udev::Properties props = {{"ID_BUS", "usb"}, {"ID_SERIAL", "Kingston_DT_123"}};
  EXPECT_THAT(PersistentLinks(e, props, {}),
              ElementsAre("disk/by-id/usb-Kingston_DT_123", "disk/by-diskseq/9"));
}

TEST(PersistentLinks, SwapHasUuidAndLabelButAnUnknownUsageHasNeither) {
  udev::Properties props = {{"ID_FS_UUID_ENC", "u"}, {"ID_FS_LABEL_ENC", "l"}, {"ID_FS_USAGE", "other"}};
  EXPECT_THAT(PersistentLinks(Block("vdb", "disk"), props, {}),
              ElementsAre("disk/by-uuid/u", "disk/by-label/l"));
  props[2].second = "raid";
  EXPECT_THAT(PersistentLinks(Block("vdb", "disk"), props, {}), IsEmpty());
}

TEST(PersistentLinks, NoLinksForOtherKernelNamesOrRemove) {
  const udev::Properties props = {{"ID_FS_UUID_ENC", "u"}, {"ID_FS_USAGE", "filesystem"}};
  EXPECT_THAT(PersistentLinks(Block("ram0", "disk"), props, {}), IsEmpty());
  Event removed = Block("vdb", "disk");
  removed.action = "remove";
  EXPECT_THAT(PersistentLinks(removed, props, {}), IsEmpty());
}

TEST(PersistentLinks, DeviceValuesNeverLeaveTheDevRoot) {
  std::vector<std::string> refused;
  // A virtio serial is used as udev uses it ('/' kept): one with ".." is refused, not made.
  EXPECT_THAT(PersistentLinks(Block("vdc", "disk"), {}, {.virtio_serial = "../../../etc/passwd"}, &refused),
              IsEmpty());
  EXPECT_THAT(refused, ElementsAre("disk/by-id/virtio-../../../etc/passwd"));
  // Characters udev does not allow in link names become '_'.
  EXPECT_THAT(PersistentLinks(Block("vdc", "disk"), {}, {.virtio_serial = "a*b\x01"}),
              ElementsAre("disk/by-id/virtio-a_b_"));
}

TEST(PersistentLinks, InputByIdAndByPath) {
  const udev::Properties kbd = {{"ID_INPUT_KEYBOARD", "1"}, {"ID_BUS", "usb"},
                          {"ID_SERIAL", "QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1"},
                          {"ID_PATH", "pci-0000:00:04.0-usb-0:1:1.0"}};
  EXPECT_THAT(PersistentLinks(Input("event2"), kbd, {.interface_number = "00"}),
              ElementsAre("input/by-id/usb-QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1-event-kbd",
                          "input/by-path/pci-0000:00:04.0-usb-0:1:1.0-event-kbd"));
  const udev::Properties mouse = {{"ID_INPUT_MOUSE", "1"}, {"ID_BUS", "i8042"},
                            {"ID_PATH", "platform-i8042-serio-1"}};
  // ATTRS{bInterfaceNumber}=="|00" needs an ancestor with the attribute: the PS/2 mouse gets no
  // by-id link (as systemd-udevd in the qemu guest: by-path only).
  EXPECT_THAT(PersistentLinks(Input("mouse0"), mouse, {}),
              ElementsAre("input/by-path/platform-i8042-serio-1-mouse"));
  EXPECT_THAT(PersistentLinks(Input("event3"), mouse, {}),
              ElementsAre("input/by-path/platform-i8042-serio-1-event-mouse"));
  // A second USB interface of a keyboard (multimedia keys): -if01-.
  EXPECT_THAT(PersistentLinks(Input("event5"), kbd, {.interface_number = "01"}),
              ElementsAre("input/by-id/usb-QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1-if01-event-kbd",
                          "input/by-path/pci-0000:00:04.0-usb-0:1:1.0-event-kbd"));
  // The inputN device has no node: no links.
  Event input3 = Input("input3");
  input3.devname.clear();
  EXPECT_THAT(PersistentLinks(input3, kbd, {}), IsEmpty());
}

TEST(InputClass, FromPropertiesAndFacts) {
  EXPECT_EQ(InputClass({{"ID_INPUT_KEYBOARD", "1"}}, {}), "kbd");
  EXPECT_EQ(InputClass({{"ID_INPUT_KEYBOARD", "1"}, {"ID_INPUT_MOUSE", "1"}}, {}), "mouse");
  EXPECT_EQ(InputClass({{"ID_INPUT_JOYSTICK", "1"}}, {}), "joystick");
  EXPECT_EQ(InputClass({{"ID_INPUT_KEY", "1"}}, {.driver = "pcspkr"}), "spkr");
  EXPECT_EQ(InputClass({{"ID_INPUT_KEY", "1"}}, {.name = "Receiver DVB"}), "ir");
  EXPECT_EQ(InputClass({{"ID_INPUT_KEY", "1"}}, {}), "");
}

}  // namespace
}  // namespace hotring::hotplug::udevcompat

#include "hotplug/udevcompat/seat.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/event.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/sysfs_view.h"
#include "hotplug/udev/sysfs_fixture.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::udevcompat {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using testing::FakeSysfs;

constexpr char kGpu[] = "/devices/pci0000:00/0000:00:02.0";

class SeatTest : public udev::SysfsFixture {
 protected:
  SeatTest() : udev::SysfsFixture(FakeSysfs::Kind::kClass) {}

  void AddPci(const std::string& devpath, udev::Attrs attributes = {}) {
    Add(devpath, "pci", {}, std::move(attributes), FakeSysfs::Kind::kBus);
  }

  // The rules applied to an add event of `devpath` with the kernel's `env` and the builtins'
  // `props`; the properties they leave are in `props_`.
  std::vector<std::string> Apply(const std::string& devpath, const std::string& subsystem,
                                 udev::Attrs env = {}, udev::Properties props = {}, SeatContext context = {}) {
    Event e;
    e.action = "add";
    e.subsystem = subsystem;
    e.devpath = devpath;
    e.env = std::move(env);
    e.major = std::string(e.Get("MAJOR").value_or(""));
    e.minor = std::string(e.Get("MINOR").value_or(""));
    props_ = std::move(props);
    const udev::DirSysfsView view(sys_->root());
    return ApplySeatRules(view, e, context, props_);
  }

  udev::Properties props_;
};

TEST_F(SeatTest, DrmCardIsUaccessSeatAndMasterOfSeatWithItsSeatId) {
  AddPci(kGpu, {{"class", "0x030000"}});
  Add(absl::StrCat(kGpu, "/drm/card0"), "drm",
      {{"MAJOR", "226"}, {"MINOR", "0"}, {"DEVNAME", "dri/card0"}});
  Add(absl::StrCat(kGpu, "/drm/card0/card0-DP-1"), "drm");
  Add(absl::StrCat(kGpu, "/drm/renderD128"), "drm", {{"MAJOR", "226"}, {"MINOR", "128"}});
  EXPECT_THAT(Apply(absl::StrCat(kGpu, "/drm/card0"), "drm", {{"MAJOR", "226"}, {"MINOR", "0"}}),
              ElementsAre("uaccess", "seat", "master-of-seat"));
  EXPECT_THAT(props_, ElementsAre(Pair("ID_PATH", "pci-0000:00:02.0"),
                                  Pair("ID_PATH_TAG", "pci-0000_00_02_0"),
                                  Pair("ID_FOR_SEAT", "drm-pci-0000_00_02_0")));
  // A connector has no node: 70-uaccess skips it, 71-seat's card[0-9]* does not.
  EXPECT_THAT(Apply(absl::StrCat(kGpu, "/drm/card0/card0-DP-1"), "drm"),
              ElementsAre("seat", "master-of-seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "drm-pci-0000_00_02_0");
  EXPECT_THAT(
      Apply(absl::StrCat(kGpu, "/drm/renderD128"), "drm", {{"MAJOR", "226"}, {"MINOR", "128"}}),
      ElementsAre("uaccess", "seat"));
  // The PCI function itself has a driver (KMS): no tag.
  EXPECT_THAT(Apply(kGpu, "pci", {{"DRIVER", "bochs-drm"}}, {}, {.nomodeset = "1"}), IsEmpty());
}

TEST_F(SeatTest, SoundCardIsSeatAndItsNodesUaccessOnly) {
  AddPci("/devices/pci0000:00/0000:00:1b.0");
  Add("/devices/pci0000:00/0000:00:1b.0/sound/card0", "sound");
  Add("/devices/pci0000:00/0000:00:1b.0/sound/card0/controlC0", "sound",
      {{"MAJOR", "116"}, {"MINOR", "2"}});
  EXPECT_THAT(Apply("/devices/pci0000:00/0000:00:1b.0/sound/card0", "sound"), ElementsAre("seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "sound-pci-0000_00_1b_0");
  EXPECT_THAT(Apply("/devices/pci0000:00/0000:00:1b.0/sound/card0/controlC0", "sound",
                    {{"MAJOR", "116"}, {"MINOR", "2"}}),
              ElementsAre("uaccess"));
  EXPECT_THAT(props_, IsEmpty());  // not a seat device: no path_id import, no ID_FOR_SEAT
}

TEST_F(SeatTest, InputDevicesAreSeatJoystickNodesUaccess) {
  Add("/devices/platform/i8042", "platform", {}, {}, FakeSysfs::Kind::kBus);
  Add("/devices/platform/i8042/serio1", "serio", {}, {}, FakeSysfs::Kind::kBus);
  const std::string input = "/devices/platform/i8042/serio1/input/input3";
  Add(input, "input");
  Add(absl::StrCat(input, "/event1"), "input", {{"MAJOR", "13"}, {"MINOR", "65"}});
  // ID_PATH from 60-persistent-input.rules is kept, ID_FOR_SEAT built on its tag.
  EXPECT_THAT(Apply(input, "input", {},
                    {{"ID_INPUT", "1"},
                     {"ID_PATH", "platform-i8042-serio-1"},
                     {"ID_PATH_TAG", "platform-i8042-serio-1"}}),
              ElementsAre("seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "input-platform-i8042-serio-1");
  EXPECT_THAT(Apply(absl::StrCat(input, "/event1"), "input", {{"MAJOR", "13"}, {"MINOR", "65"}},
                    {{"ID_INPUT", "1"}, {"ID_INPUT_MOUSE", "1"}}),
              IsEmpty());
  EXPECT_THAT(Apply(absl::StrCat(input, "/event1"), "input", {{"MAJOR", "13"}, {"MINOR", "65"}},
                    {{"ID_INPUT", "1"}, {"ID_INPUT_JOYSTICK", "1"}}),
              ElementsAre("uaccess", "seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "input-platform-i8042-serio-1");
}

TEST_F(SeatTest, UsbDevicesByClassAndInterfaces) {
  AddPci("/devices/pci0000:00/0000:00:05.0");
  const std::string hub = "/devices/pci0000:00/0000:00:05.0/usb1";
  Add(hub, "usb", {{"DEVTYPE", "usb_device"}, {"MAJOR", "189"}, {"MINOR", "0"}},
      {{"bDeviceClass", "09"}}, FakeSysfs::Kind::kBus);
  Add(absl::StrCat(hub, "/1-1"), "usb",
      {{"DEVTYPE", "usb_device"}, {"MAJOR", "189"}, {"MINOR", "1"}}, {{"bDeviceClass", "00"}},
      FakeSysfs::Kind::kBus);
  Add(absl::StrCat(hub, "/1-1/1-1:1.0"), "usb", {{"DEVTYPE", "usb_interface"}}, {},
      FakeSysfs::Kind::kBus);
  Add(absl::StrCat(hub, "/1-2"), "usb",
      {{"DEVTYPE", "usb_device"}, {"MAJOR", "189"}, {"MINOR", "2"}}, {{"bDeviceClass", "ef"}},
      FakeSysfs::Kind::kBus);
  EXPECT_THAT(Apply(hub, "usb", {{"DEVTYPE", "usb_device"}, {"MAJOR", "189"}},
                    {{"ID_PATH", "pci-0000:00:05.0"}, {"ID_PATH_TAG", "pci-0000_00_05_0"}}),
              ElementsAre("seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "usb-pci-0000_00_05_0");
  EXPECT_THAT(
      Apply(absl::StrCat(hub, "/1-1"), "usb", {{"DEVTYPE", "usb_device"}, {"MAJOR", "189"}}),
      ElementsAre("seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "usb-pci-0000_00_05_0-usb-0_1");
  EXPECT_THAT(Apply(absl::StrCat(hub, "/1-1/1-1:1.0"), "usb", {{"DEVTYPE", "usb_interface"}}),
              IsEmpty());
  // A composite device (class ef) is not a seat port, but an MTP/PTP interface makes it uaccess.
  EXPECT_THAT(
      Apply(absl::StrCat(hub, "/1-2"), "usb", {{"DEVTYPE", "usb_device"}, {"MAJOR", "189"}}),
      IsEmpty());
  EXPECT_THAT(Apply(absl::StrCat(hub, "/1-2"), "usb", {{"DEVTYPE", "usb_device"}, {"MAJOR", "189"}},
                    {{"ID_USB_INTERFACES", ":060101:ff0000:"}}),
              ElementsAre("uaccess", "seat"));
}

TEST_F(SeatTest, ScsiGenericOfAnOpticalDriveIsUaccess) {
  AddPci("/devices/pci0000:00/0000:00:01.1");
  const std::string cd = "/devices/pci0000:00/0000:00:01.1/ata2/host1/target1:0:0/1:0:0:0";
  const std::string disk = "/devices/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0";
  Add(cd, "scsi", {{"DEVTYPE", "scsi_device"}}, {{"type", "5"}}, FakeSysfs::Kind::kBus);
  Add(absl::StrCat(cd, "/scsi_generic/sg1"), "scsi_generic", {{"MAJOR", "21"}, {"MINOR", "1"}});
  Add(disk, "scsi", {{"DEVTYPE", "scsi_device"}}, {{"type", "0"}}, FakeSysfs::Kind::kBus);
  Add(absl::StrCat(disk, "/scsi_generic/sg0"), "scsi_generic", {{"MAJOR", "21"}, {"MINOR", "0"}});
  EXPECT_THAT(Apply(absl::StrCat(cd, "/scsi_generic/sg1"), "scsi_generic",
                    {{"MAJOR", "21"}, {"MINOR", "1"}}),
              ElementsAre("uaccess", "seat"));
  EXPECT_THAT(Apply(absl::StrCat(disk, "/scsi_generic/sg0"), "scsi_generic",
                    {{"MAJOR", "21"}, {"MINOR", "0"}}),
              IsEmpty());
}

TEST_F(SeatTest, NomodesetMakesFramebuffersAndDriverlessDisplaysMasters) {
  AddPci(kGpu, {{"class", "0x030000"}});
  Add("/devices/platform/efi-framebuffer.0", "platform", {}, {}, FakeSysfs::Kind::kBus);
  Add("/devices/platform/efi-framebuffer.0/graphics/fb0", "graphics",
      {{"MAJOR", "29"}, {"MINOR", "0"}});
  Add("/devices/virtual/graphics/fb10", "graphics", {{"MAJOR", "29"}, {"MINOR", "10"}});
  const std::string fb0 = "/devices/platform/efi-framebuffer.0/graphics/fb0";
  EXPECT_THAT(Apply(fb0, "graphics", {{"MAJOR", "29"}}), ElementsAre("seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "graphics-platform-efi-framebuffer_0");
  EXPECT_THAT(Apply(fb0, "graphics", {{"MAJOR", "29"}}, {}, {.nomodeset = "1"}),
              ElementsAre("seat", "master-of-seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "nomodeset"), "1");  // IMPORT{cmdline} sets the property
  // fb[0-9] is one digit: fb10 is a seat device, not a master.
  EXPECT_THAT(Apply("/devices/virtual/graphics/fb10", "graphics", {{"MAJOR", "29"}}, {},
                    {.nomodeset = "1"}),
              ElementsAre("seat"));
  EXPECT_THAT(Apply(kGpu, "pci", {}, {}, {.nomodeset = "1"}),
              ElementsAre("seat", "master-of-seat"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_FOR_SEAT"), "pci-pci-0000_00_02_0");
  EXPECT_THAT(Apply(kGpu, "pci"), IsEmpty());  // KMS may still bind a driver
}

TEST_F(SeatTest, QemuSeatBridgeMakesASeatItsChildrenImport) {
  AddPci("/devices/pci0000:00/0000:00:0a.0", {{"vendor", "0x1b36"}, {"device", "0x000a"}});
  EXPECT_THAT(Apply("/devices/pci0000:00/0000:00:0a.0", "pci", {},
                    {{"ID_PATH", "pci-0000:00:0a.0"}, {"ID_PATH_TAG", "pci-0000_00_0a_0"}}),
              ElementsAre("seat", "seat-pci-pci-0000_00_0a_0"));
  EXPECT_THAT(props_, ElementsAre(Pair("ID_PATH", "pci-0000:00:0a.0"),
                                  Pair("ID_PATH_TAG", "pci-0000_00_0a_0"), Pair("ID_AUTOSEAT", "1"),
                                  Pair("ID_FOR_SEAT", "pci-pci-0000_00_0a_0"),
                                  Pair("ID_SEAT", "seat-pci-pci-0000_00_0a_0")));
  // Below it, every device imports the parent's ID_SEAT and is tagged with it.
  AddPci("/devices/pci0000:00/0000:00:0a.0/0000:01:00.0");
  Add("/devices/pci0000:00/0000:00:0a.0/0000:01:00.0/usb3", "usb", {{"DEVTYPE", "usb_device"}},
      {{"bDeviceClass", "09"}}, FakeSysfs::Kind::kBus);
  EXPECT_THAT(
      Apply("/devices/pci0000:00/0000:00:0a.0/0000:01:00.0/usb3", "usb",
            {{"DEVTYPE", "usb_device"}}, {}, {.parent_id_seat = "seat-pci-pci-0000_00_0a_0"}),
      ElementsAre("seat", "seat-pci-pci-0000_00_0a_0"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_SEAT"), "seat-pci-pci-0000_00_0a_0");
  EXPECT_THAT(Apply("/devices/pci0000:00/0000:00:0a.0/0000:01:00.0", "pci", {}, {},
                    {.parent_id_seat = "seat-pci-pci-0000_00_0a_0"}),
              ElementsAre("seat-pci-pci-0000_00_0a_0"));
  // A seat name that is not a tag name (another rule's) is imported but tags nothing.
  EXPECT_THAT(Apply("/devices/pci0000:00/0000:00:0a.0/0000:01:00.0", "pci", {}, {},
                    {.parent_id_seat = "seat 1"}),
              IsEmpty());
  EXPECT_EQ(udev::PropertyValue(props_, "ID_SEAT"), "seat 1");
}

TEST_F(SeatTest, PlugableHubIsAnAutoseat) {
  AddPci("/devices/pci0000:00/0000:00:05.0");
  const std::string hub = "/devices/pci0000:00/0000:00:05.0/usb1/1-3";
  Add("/devices/pci0000:00/0000:00:05.0/usb1", "usb", {{"DEVTYPE", "usb_device"}}, {},
      FakeSysfs::Kind::kBus);
  Add(hub, "usb", {{"DEVTYPE", "usb_device"}},
      {{"bDeviceClass", "09"}, {"idVendor", "2230"}, {"idProduct", "0001"}}, FakeSysfs::Kind::kBus);
  EXPECT_THAT(Apply(hub, "usb", {{"DEVTYPE", "usb_device"}}),
              ElementsAre("seat", "seat-usb-pci-0000_00_05_0-usb-0_3"));
  EXPECT_EQ(udev::PropertyValue(props_, "ID_AUTOSEAT"), "1");
}

TEST_F(SeatTest, LedsBacklightMiscAndPropertyMatches) {
  Add("/devices/platform/i8042", "platform", {}, {}, FakeSysfs::Kind::kBus);
  Add("/devices/platform/i8042/serio0", "serio", {}, {}, FakeSysfs::Kind::kBus);
  Add("/devices/platform/i8042/serio0/input/input1", "input");
  Add("/devices/platform/i8042/serio0/input/input1/input1::capslock", "leds");
  Add("/devices/virtual/misc/kvm", "misc", {{"MAJOR", "10"}, {"MINOR", "232"}});
  Add("/devices/virtual/misc/rfkill", "misc", {{"MAJOR", "10"}, {"MINOR", "242"}});
  Add("/devices/virtual/hidraw/hidraw0", "hidraw", {{"MAJOR", "240"}, {"MINOR", "0"}});
  EXPECT_THAT(Apply("/devices/platform/i8042/serio0/input/input1/input1::capslock", "leds"),
              ElementsAre("seat"));
  EXPECT_THAT(props_, ElementsAre(Pair("ID_PATH", "platform-i8042-serio-0"),
                                  Pair("ID_PATH_TAG", "platform-i8042-serio-0"),
                                  Pair("ID_FOR_SEAT", "leds-platform-i8042-serio-0")));
  // Virtual devices have no path: tagged, but no ID_FOR_SEAT.
  EXPECT_THAT(Apply("/devices/virtual/misc/kvm", "misc", {{"MAJOR", "10"}}),
              ElementsAre("uaccess", "seat"));
  EXPECT_THAT(props_, IsEmpty());
  EXPECT_THAT(Apply("/devices/virtual/misc/rfkill", "misc", {{"MAJOR", "10"}}),
              ElementsAre("uaccess", "seat"));
  EXPECT_THAT(Apply("/devices/virtual/hidraw/hidraw0", "hidraw", {{"MAJOR", "240"}}), IsEmpty());
  // udev::Properties other packages' rules or the hwdb set are honoured when present.
  EXPECT_THAT(Apply("/devices/virtual/hidraw/hidraw0", "hidraw", {{"MAJOR", "240"}},
                    {{"ID_SECURITY_TOKEN", "1"}}),
              ElementsAre("uaccess", "seat"));
  EXPECT_THAT(Apply("/devices/virtual/hidraw/hidraw0", "hidraw", {}, {{"ID_SECURITY_TOKEN", "1"}}),
              IsEmpty());
}

TEST_F(SeatTest, RemoveGetsNothing) {
  Add("/devices/virtual/misc/kvm", "misc", {{"MAJOR", "10"}, {"MINOR", "232"}});
  Event e;
  e.action = "remove";
  e.subsystem = "misc";
  e.devpath = "/devices/virtual/misc/kvm";
  e.env = {{"MAJOR", "10"}};
  udev::Properties props;
  EXPECT_THAT(ApplySeatRules(udev::DirSysfsView(sys_->root()), e, {}, props), IsEmpty());
  EXPECT_THAT(props, IsEmpty());
}

TEST(KernelCmdlineValueTest, BareKeyValueAndLastWins) {
  EXPECT_EQ(KernelCmdlineValue("BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro quiet\n", "nomodeset"),
            std::nullopt);
  EXPECT_EQ(KernelCmdlineValue("root=/dev/vda1 nomodeset quiet\n", "nomodeset"), "1");
  EXPECT_EQ(KernelCmdlineValue("nomodeset=0", "nomodeset"), "0");
  EXPECT_EQ(KernelCmdlineValue("nomodeset nomodeset=2", "nomodeset"), "2");
  EXPECT_EQ(KernelCmdlineValue("nomodesetx rd.nomodeset", "nomodeset"), std::nullopt);
}

}  // namespace
}  // namespace hotring::hotplug::udevcompat

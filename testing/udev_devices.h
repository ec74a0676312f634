// Devices for the udev tests, built into a FakeSysfs: the qemu comparison guest's
// (testing/udevcompat/guest_compare.sh: Debian 12's kernel 6.1, qemu's i440FX PC with an xHCI at
// 00:05.0 holding a USB keyboard, mouse and tablet, the i8042 keyboard and PS/2 mouse, e1000
// and virtio-net NICs, a virtio disk, a virtio GPU) with the sysfs attributes, capability
// bitmaps and USB descriptors the guest showed (guest_dump.sh's `=== sysfs` section), and a
// board's in the shape board layers write rules for (a USB serial adapter and a GPS receiver on
// USB, GPIO and I2C controllers, an I2C touchscreen, an Ethernet MAC on the SoC).
#ifndef HOTRING_TESTING_UDEV_DEVICES_H_
#define HOTRING_TESTING_UDEV_DEVICES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "testing/fake_sysfs.h"

namespace hotring::testing {

// A device's uevent variables or attributes, in order.
using DeviceAttrs = std::vector<std::pair<std::string, std::string>>;

inline constexpr char kGuestXhci[] = "/devices/pci0000:00/0000:00:05.0";

// The guest's input devices' attributes (name, id/*, capabilities/*, properties).
extern const DeviceAttrs kGuestUsbKeyboard;
extern const DeviceAttrs kGuestUsbMouse;
extern const DeviceAttrs kGuestUsbTablet;
extern const DeviceAttrs kGuestAtKeyboard;
extern const DeviceAttrs kGuestPs2Mouse;
// The guest's USB descriptors (device, configuration, interface, HID, endpoint), hex.
extern const char kGuestKeyboardDescriptors[];
extern const char kGuestMouseDescriptors[];
extern const char kGuestTabletDescriptors[];

// One input device of the guest: where it hangs, and its attributes.
struct GuestInput {
  std::string parent;  // the device the inputN hangs below
  int input;           // inputN
  int event;           // eventN
  int mouse;           // mouseN, or -1
  DeviceAttrs attrs;
};

// FakeSysfs::AddDevice, its error naming the device.
absl::Status AddTreeDevice(FakeSysfs& sys, const std::string& devpath, const std::string& subsystem,
                           DeviceAttrs uevent = {}, DeviceAttrs attributes = {},
                           FakeSysfs::Kind kind = FakeSysfs::Kind::kBus);
// A device's "driver" link to bus/BUS/drivers/NAME (made too).
absl::Status LinkDriver(FakeSysfs& sys, absl::string_view devpath, absl::string_view bus,
                        absl::string_view name);
// A USB HID device on the guest xHCI's port `port` (with the xHCI and root hub); the hid
// device's devpath.
absl::StatusOr<std::string> AddGuestUsbHid(FakeSysfs& sys, int port, const std::string& product,
                                           const std::string& serial, const std::string& descriptors_hex,
                                           const std::string& hid_id, const std::string& subclass,
                                           const std::string& protocol);
absl::Status AddGuestI8042(FakeSysfs& sys);
// inputN with its attributes, its eventN and mouseN.
absl::Status AddGuestInput(FakeSysfs& sys, const GuestInput& in);

// A device of the catalog that tests run events for: a short name and its devpath.
struct CatalogDevice {
  std::string name;
  std::string devpath;
};

// Every guest and board device in one tree; the event devices in a fixed order.
absl::StatusOr<std::vector<CatalogDevice>> BuildUdevCatalog(FakeSysfs& sys);

// The main of a tool that builds a catalog (`build`) as a sysfs tree in argv[1] (which must not
// exist; its parent must) and prints one line per device, "NAME DEVPATH": the trees the goldens'
// scripts bind over /sys for Debian's udevadm. Returns the exit status; errors name `tool`.
int WriteCatalogTreeMain(int argc, char** argv, const char* tool,
                         absl::FunctionRef<absl::StatusOr<std::vector<CatalogDevice>>(FakeSysfs&)> build);

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_UDEV_DEVICES_H_

// The devices of the builtins' goldens: the udev test catalog (testing/udev_devices.h) and
// network interfaces, keyboards and disks in the shapes net_id, keyboard and blkid tell apart
// (multi-function and SR-IOV PCI functions, hotplug slots, firmware indexes, PCI domains, ARI,
// USB, ACPI platform and wireless interfaces, InfiniBand; i8042 keyboards with hwdb key
// properties; disks whose nodes are image files).
#ifndef HOTRING_TESTING_UDEVBUILTINS_BUILTIN_DEVICES_H_
#define HOTRING_TESTING_UDEVBUILTINS_BUILTIN_DEVICES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "testing/fake_sysfs.h"
#include "testing/udev_devices.h"

namespace hotring::testing {

// Every device of BuildUdevCatalog and the builtins' own, in one tree.
absl::StatusOr<std::vector<CatalogDevice>> BuildBuiltinCatalog(FakeSysfs& sys);

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_UDEVBUILTINS_BUILTIN_DEVICES_H_

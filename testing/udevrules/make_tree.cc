// Builds the udev test devices (testing/udev_devices.h) as a sysfs tree in a directory, for
// make_goldens.sh to bind over /sys when it runs Debian's udevadm on them. Prints one line per
// event device: "NAME DEVPATH".
//
//   make_tree OUT_DIR      (OUT_DIR must not exist; its parent must)
#include "testing/fake_sysfs.h"
#include "testing/udev_devices.h"

int main(int argc, char** argv) {
  return hotring::testing::WriteCatalogTreeMain(argc, argv, "make_tree", hotring::testing::BuildUdevCatalog);
}

// Builds the builtins' test devices (builtin_devices.h) as a sysfs tree in a directory, for
// make_goldens.sh to bind over /sys when it runs Debian's udevadm on them, and for compare_test.
// Prints one line per device: "NAME DEVPATH".
//
//   make_builtin_tree OUT_DIR      (OUT_DIR must not exist; its parent must)
#include "testing/udev_devices.h"
#include "testing/udevbuiltins/builtin_devices.h"

int main(int argc, char** argv) {
  return hotring::testing::WriteCatalogTreeMain(argc, argv, "make_builtin_tree",
                                                hotring::testing::BuildBuiltinCatalog);
}

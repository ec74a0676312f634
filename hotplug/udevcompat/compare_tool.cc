// Prints what hotring computes for sysfs devices, in `udevadm test-builtin` form, to compare
// with Debian's udevadm on a machine: compare_tool SYSFS_ROOT input_id|path_id|usb_id DEVPATH...
#include <cstdio>
#include <string>

#include "hotplug/udevcompat/builtins.h"
#include "hotplug/udevcompat/sysfs_view.h"

int main(int argc, char** argv) {
  using namespace hotring::hotplug::udevcompat;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SYSFS_ROOT input_id|path_id|usb_id DEVPATH...\n", argv[0]);
    return 2;
  }
  const DirSysfsView view(argv[1]);
  const std::string builtin = argv[2];
  for (int i = 3; i < argc; ++i) {
    const Properties props = builtin == "input_id" ? InputId(view, argv[i])
                             : builtin == "path_id" ? PathId(view, argv[i])
                                                    : UsbId(view, argv[i]);
    std::printf("%s\n", argv[i]);
    for (const auto& [k, v] : props) std::printf("%s=%s\n", k.c_str(), v.c_str());
  }
  return 0;
}

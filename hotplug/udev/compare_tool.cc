// Prints what hotring computes for sysfs devices, in `udevadm test-builtin` form, to compare
// with Debian's udevadm on a machine: compare_tool SYSFS_ROOT input_id|path_id|usb_id DEVPATH...
#include <cstdio>
#include <string>

#include "hotplug/udev/builtins.h"
#include "hotplug/udev/sysfs_view.h"

int main(int argc, char** argv) {
  namespace udev = hotring::hotplug::udev;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SYSFS_ROOT input_id|path_id|usb_id DEVPATH...\n", argv[0]);
    return 2;
  }
  const udev::DirSysfsView view(argv[1]);
  const std::string builtin = argv[2];
  for (int i = 3; i < argc; ++i) {
    const udev::Properties props = builtin == "input_id" ? udev::InputId(view, argv[i])
                             : builtin == "path_id" ? udev::PathId(view, argv[i])
                                                    : udev::UsbId(view, argv[i]);
    std::printf("%s\n", argv[i]);
    for (const auto& [k, v] : props) std::printf("%s=%s\n", k.c_str(), v.c_str());
  }
  return 0;
}

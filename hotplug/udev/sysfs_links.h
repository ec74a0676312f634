// SysfsLinks: where a symlink of a sysfs tree leads, for the builtins that follow one further
// than its last component (net_id: an SR-IOV function's physfn/virtfnN links, a device's
// of_node in the device tree). Separate from SysfsView so that the views stay as they are.
#ifndef HOTRING_HOTPLUG_UDEV_SYSFS_LINKS_H_
#define HOTRING_HOTPLUG_UDEV_SYSFS_LINKS_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace hotring::hotplug::udev {

class SysfsLinks {
 public:
  virtual ~SysfsLinks() = default;
  // The path, relative to the sysfs root ("/devices/...", "/firmware/devicetree/base/..."),
  // that `path`/`name` resolves to (every link followed); nullopt when it does not exist or
  // leads outside the tree.
  [[nodiscard]] virtual std::optional<std::string> Resolve(absl::string_view path,
                                                           absl::string_view name) const = 0;
};

// Links of a directory tree laid out like /sys. Owns its root path.
class DirSysfsLinks final : public SysfsLinks {
 public:
  explicit DirSysfsLinks(std::string root) : root_(std::move(root)) {}
  [[nodiscard]] std::optional<std::string> Resolve(absl::string_view path,
                                                   absl::string_view name) const override;

 private:
  std::string root_;
};

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_SYSFS_LINKS_H_

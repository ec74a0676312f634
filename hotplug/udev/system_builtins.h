// The builtins whose answer comes from the running system rather than from sysfs: `btrfs ready
// $devnode` (BTRFS_IOC_DEVICES_READY on /dev/btrfs-control: ID_BTRFS_READY) and `uaccess`
// (node ACLs for the seat's active user, which udevd 252 only sets while logind runs). Their
// system calls go through BuiltinSystem so that the logic is tested without a btrfs or logind.
#ifndef HOTRING_HOTPLUG_UDEV_SYSTEM_BUILTINS_H_
#define HOTRING_HOTPLUG_UDEV_SYSTEM_BUILTINS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/udev/builtin_device.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udev {

// The system calls of these builtins.
class BuiltinSystem {
 public:
  // What BTRFS_IOC_DEVICES_READY says of `devnode`.
  enum class BtrfsReady { kReady, kNotReady, kNoDriver };
  virtual ~BuiltinSystem() = default;
  // kNoDriver when /dev/btrfs-control is absent (ENOENT, ENODEV, ENXIO); another failure is an
  // error.
  [[nodiscard]] virtual absl::StatusOr<BtrfsReady> BtrfsDevicesReady(absl::string_view devnode) = 0;
  // Whether logind runs (/run/systemd/seats/ exists), as udevd asks before touching ACLs.
  [[nodiscard]] virtual bool LogindRunning() = 0;
};

// The real system: opens `control` (default /dev/btrfs-control) for each query. Owns the paths.
class RealBuiltinSystem final : public BuiltinSystem {
 public:
  explicit RealBuiltinSystem(std::string btrfs_control = "/dev/btrfs-control",
                             std::string seats_dir = "/run/systemd/seats/")
      : btrfs_control_(std::move(btrfs_control)), seats_dir_(std::move(seats_dir)) {}
  [[nodiscard]] absl::StatusOr<BtrfsReady> BtrfsDevicesReady(absl::string_view devnode) override;
  [[nodiscard]] bool LogindRunning() override;

 private:
  std::string btrfs_control_;
  std::string seats_dir_;
};

// `btrfs ready DEVNODE`: ID_BTRFS_READY=1 or 0 (0 also without the btrfs driver, as udevd
// does in an initramfs without btrfs.ko). InvalidArgument for any other argv.
[[nodiscard]] absl::StatusOr<Properties> BtrfsBuiltin(absl::Span<const std::string> argv,
                                                      BuiltinSystem& system);

// `uaccess`: sets no property. Without logind udevd returns at once; with logind running it
// would grant the seat's active user an ACL on the node, which hotring does not do: the result
// says so (Unimplemented) so that the caller can count it, and the event goes on as udevd's.
[[nodiscard]] absl::StatusOr<Properties> UaccessBuiltin(const BuiltinDevice& device,
                                                        BuiltinSystem& system);

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_SYSTEM_BUILTINS_H_

#include "hotplug/udev/system_builtins.h"

#include <fcntl.h>
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udev {

absl::StatusOr<BuiltinSystem::BtrfsReady> RealBuiltinSystem::BtrfsDevicesReady(absl::string_view devnode) {
  UniqueFd fd(::open(btrfs_control_.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    if (errno == ENOENT || errno == ENODEV || errno == ENXIO) return BtrfsReady::kNoDriver;
    return ErrnoStatus(absl::StrCat("open ", btrfs_control_));
  }
  struct btrfs_ioctl_vol_args args;
  std::memset(&args, 0, sizeof(args));
  // strscpy: cut to the field, NUL-terminated.
  const size_t n = std::min(devnode.size(), sizeof(args.name) - 1);
  std::memcpy(args.name, devnode.data(), n);
  const int r = ::ioctl(fd.get(), BTRFS_IOC_DEVICES_READY, &args);
  if (r < 0) return ErrnoStatus("BTRFS_IOC_DEVICES_READY");
  return r == 0 ? BtrfsReady::kReady : BtrfsReady::kNotReady;
}

bool RealBuiltinSystem::LogindRunning() { return ::access(seats_dir_.c_str(), F_OK) == 0; }

absl::StatusOr<Properties> BtrfsBuiltin(absl::Span<const std::string> argv, BuiltinSystem& system) {
  if (argv.size() != 3 || argv[1] != "ready") return absl::InvalidArgumentError("btrfs: invalid arguments");
  HOTRING_ASSIGN_OR_RETURN(const BuiltinSystem::BtrfsReady ready, system.BtrfsDevicesReady(argv[2]));
  return Properties{{"ID_BTRFS_READY", ready == BuiltinSystem::BtrfsReady::kReady ? "1" : "0"}};
}

absl::StatusOr<Properties> UaccessBuiltin(const BuiltinDevice& device, BuiltinSystem& system) {
  if (!system.LogindRunning()) return Properties{};
  return absl::UnimplementedError(
      absl::StrCat("uaccess: logind runs, but seat ACLs are not applied (", device.DevNode(), ")"));
}

}  // namespace hotring::hotplug::udev

// Firmware loading through the kernel's user-mode helper interface, as mdev does:
// /lib/firmware/$FIRMWARE is written to /sys$DEVPATH/data between "1" and "0" written to
// /sys$DEVPATH/loading ("-1" when the file is missing or the copy fails, so that the kernel stops
// waiting at once).
#ifndef HOTRING_HOTPLUG_RULES_FIRMWARE_H_
#define HOTRING_HOTPLUG_RULES_FIRMWARE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hotring::hotplug::rules {

struct FirmwarePaths {
  std::string firmware_root = "/lib/firmware";
  std::string sysfs_root = "/sys";
};

enum class FirmwareOutcome {
  kNotReady,  // /sys$DEVPATH/loading does not exist (yet): try again (busybox: each second, 30 s)
  kLoaded,    // copied; "0" written
  kMissing,   // no such firmware file (or unreadable): "-1" written
  kFailed,    // the copy into data failed: "-1" written
};

// How long callers retry kNotReady (busybox's 30 tries, a second apart).
inline constexpr int kFirmwareTries = 30;
inline constexpr absl::Duration kFirmwareRetryInterval = absl::Seconds(1);

// One attempt. `firmware` must be a safe relative name (EventPlan::firmware is); it is opened
// beneath firmware_root (RESOLVE_BENEATH where the kernel has openat2). `devpath` must not
// contain "..". Errors are for I/O on `loading` itself.
absl::StatusOr<FirmwareOutcome> TryLoadFirmware(const FirmwarePaths& paths,
                                                absl::string_view devpath,
                                                absl::string_view firmware);

// Retries kNotReady synchronously (sleeping) up to kFirmwareTries; for the mdev applet.
absl::StatusOr<FirmwareOutcome> LoadFirmwareBlocking(const FirmwarePaths& paths,
                                                     absl::string_view devpath,
                                                     absl::string_view firmware);

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_FIRMWARE_H_

#include "hotplug/rules/firmware.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::rules {
namespace {

bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool HasDotDot(absl::string_view path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return true;
  }
  return false;
}

// Opens `name` beneath the directory `root_fd`: openat2 RESOLVE_BENEATH where the kernel has
// it (firmware trees use symlinks, which may stay inside); else a plain openat of a name already
// checked to hold no "..", refusing absolute symlinks' escapes only as far as the kernel lets us.
int OpenBeneath(int root_fd, const std::string& name) {
  struct open_how how;
  std::memset(&how, 0, sizeof(how));
  how.flags = O_RDONLY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH;
  const long fd = syscall(SYS_openat2, root_fd, name.c_str(), &how, sizeof(how));
  if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
  return openat(root_fd, name.c_str(), O_RDONLY | O_CLOEXEC);
}

}  // namespace

absl::StatusOr<FirmwareOutcome> TryLoadFirmware(const FirmwarePaths& paths,
                                                absl::string_view devpath,
                                                absl::string_view firmware) {
  if (HasDotDot(devpath) || HasDotDot(firmware) || firmware.empty() || firmware[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("firmware '", firmware, "' for '", devpath, "' leaves its root"));
  }
  const std::string device_dir = absl::StrCat(paths.sysfs_root, devpath);
  UniqueFd loading(open((device_dir + "/loading").c_str(), O_WRONLY | O_CLOEXEC));
  if (!loading) {
    if (errno == ENOENT) return FirmwareOutcome::kNotReady;
    return ErrnoStatus(absl::StrCat("open(", device_dir, "/loading)"));
  }
  UniqueFd root(open(paths.firmware_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd source;
  if (root) source = UniqueFd(OpenBeneath(root.get(), std::string(firmware)));
  if (!source) {
    if (!WriteAll(loading.get(), "-1")) return ErrnoStatus("write(loading)");
    return FirmwareOutcome::kMissing;
  }
  if (!WriteAll(loading.get(), "1")) return ErrnoStatus("write(loading)");
  bool copied = false;
  UniqueFd data(open((device_dir + "/data").c_str(), O_WRONLY | O_CLOEXEC));
  if (data) {
    char buffer[64 * 1024];
    uint64_t total = 0;
    copied = true;
    for (;;) {
      const ssize_t n = read(source.get(), buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        copied = false;
        break;
      }
      if (n == 0) break;
      if (!WriteAll(data.get(), absl::string_view(buffer, static_cast<size_t>(n)))) {
        copied = false;
        break;
      }
      total += static_cast<uint64_t>(n);
    }
    // busybox reports failure for an empty copy too.
    copied = copied && total > 0;
  }
  if (!WriteAll(loading.get(), copied ? "0" : "-1")) return ErrnoStatus("write(loading)");
  return copied ? FirmwareOutcome::kLoaded : FirmwareOutcome::kFailed;
}

absl::StatusOr<FirmwareOutcome> LoadFirmwareBlocking(const FirmwarePaths& paths,
                                                     absl::string_view devpath,
                                                     absl::string_view firmware) {
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<FirmwareOutcome> outcome = TryLoadFirmware(paths, devpath, firmware);
    if (!outcome.ok() || *outcome != FirmwareOutcome::kNotReady || attempt + 1 >= kFirmwareTries) {
      return outcome;
    }
    absl::SleepFor(kFirmwareRetryInterval);
  }
}

}  // namespace hotring::hotplug::rules

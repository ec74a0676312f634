// udev's builtins by name (IMPORT{builtin}="NAME ...", RUN{builtin}+="NAME ..."): the interface a
// builtin implements and the registry the udev rules stage is given, so that builtins are added
// (hwdb, keyboard, net_id, net_setup_link, btrfs, uaccess, ...) without the stage knowing them.
// A builtin runs on the stage's worker threads, for several devices at once: Run must be safe
// to call concurrently, and Reload (the daemon's `control reload`) must not pull state from
// under a Run in flight (swap a shared_ptr).
#ifndef HOTRING_HOTPLUG_UDEV_BUILTIN_REGISTRY_H_
#define HOTRING_HOTPLUG_UDEV_BUILTIN_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/sysfs_view.h"

namespace hotring::hotplug::udev {

// What a builtin is given for one device. Borrowed for the length of the call.
struct BuiltinContext {
  const SysfsView& sysfs;
  absl::string_view devpath;  // "/devices/..."
  absl::string_view action;   // "add", "change", "remove", ...
  // The device's properties as the rules have them at this point (DEVNAME absolute).
  absl::Span<const std::pair<absl::string_view, absl::string_view>> properties;
  // argv[0] is the builtin's name as the rule wrote it; the rest its arguments.
  absl::Span<const std::string> argv;
  // Where device nodes are ("/dev", or a test's directory): "/dev/x" is dev_root + "/x".
  absl::string_view dev_root;
  // The value of a property in `properties`, or "".
  [[nodiscard]] absl::string_view Property(absl::string_view key) const {
    for (const auto& [k, v] : properties) {
      if (k == key) return v;
    }
    return "";
  }
};

// One builtin. Implementations own their state (a mapped hwdb, .link files, ...).
class Builtin {
 public:
  virtual ~Builtin() = default;
  // Appends the properties it sets to *out. An error: the builtin failed (IMPORT{builtin}
  // does not match; RUN{builtin} is logged).
  virtual absl::Status Run(const BuiltinContext& context, Properties* out) const = 0;
  // Re-reads what it depends on (udevd's builtins' `should_reload`/`init`).
  virtual absl::Status Reload() { return absl::OkStatus(); }
};

// Builtins by name. Owns them. Filled at start; read-only (and so shared between threads) after.
class BuiltinRegistry {
 public:
  void Add(std::string name, std::unique_ptr<Builtin> builtin);
  // The builtin `name`, or nullptr.
  [[nodiscard]] const Builtin* Find(absl::string_view name) const;
  [[nodiscard]] std::vector<std::string> Names() const;
  // Reloads every builtin; the first error is returned (the others are still reloaded).
  absl::Status Reload();

 private:
  std::map<std::string, std::unique_ptr<Builtin>, std::less<>> builtins_;
};

// The builtins hotring computes itself: input_id, path_id, usb_id (builtins.h) and blkid from
// hotring's probers (block_probe.h; the probed node is DEVNAME beneath the context's dev_root).
[[nodiscard]] BuiltinRegistry DefaultBuiltinRegistry();

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_BUILTIN_REGISTRY_H_

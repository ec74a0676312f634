// ModuleLoading: what one stage may ask of the stage that loads kernel modules, without either
// including the other: the udev rules stage's `kmod load ALIAS...` builtin (Debian's
// 80-drivers.rules) goes through the modules stage's resolver and loader, so a module is
// resolved by the same rules (blacklist included), loaded in parallel with the others, and never
// twice: a module already loaded, or being loaded for another event, is joined, not reloaded.
// The chain builder hands the modules link to the stages that want it.
#ifndef HOTRING_HOTPLUG_MODULE_LOADING_H_
#define HOTRING_HOTPLUG_MODULE_LOADING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/task.h"
#include "io/reactor.h"

namespace hotring::hotplug {

class ModuleLoading {
 public:
  virtual ~ModuleLoading() = default;
  // Loads what each of `names` (a module alias such as a MODALIAS, or a module name) resolves
  // to, as modprobe does for an alias: blacklisted modules are skipped, an alias that matches
  // nothing is no error (udev's kmod builtin says nothing either). OK when every load succeeded
  // or was already done; otherwise an error naming the modules that failed.
  virtual Task<absl::Status> LoadModules(io::Reactor& reactor, absl::Span<const std::string> names) = 0;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_MODULE_LOADING_H_

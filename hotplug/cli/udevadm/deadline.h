// Deadline: a point `timeout` from now on the monotonic clock (core/clock.h), for udevadm's
// --timeout options; an infinite timeout (udevadm's "infinity", the default of wait) never
// passes. Owns two words.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_DEADLINE_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_DEADLINE_H_

#include <algorithm>

#include "absl/time/time.h"
#include "core/clock.h"

namespace hotring::hotplug::udevadm {

class Deadline {
 public:
  explicit Deadline(absl::Duration timeout)
      : never_(timeout == absl::InfiniteDuration()), at_(never_ ? MonoTime() : MonoNow() + timeout) {}

  // Zero once passed; infinite for a deadline that never passes.
  [[nodiscard]] absl::Duration Left() const {
    if (never_) return absl::InfiniteDuration();
    return std::max(Since(MonoNow(), at_), absl::ZeroDuration());
  }
  [[nodiscard]] bool Passed() const { return Left() <= absl::ZeroDuration(); }

 private:
  bool never_;
  MonoTime at_;
};

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_DEADLINE_H_

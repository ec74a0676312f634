// Clocks: monotonic time for deadlines and timers. Pure logic takes MonoTime as an argument
// (tests pass a fake one); only the I/O edge reads the clock.
#ifndef HOTRING_CORE_CLOCK_H_
#define HOTRING_CORE_CLOCK_H_

#include <chrono>
#include <ctime>

#include "absl/time/time.h"

namespace hotring {

// CLOCK_MONOTONIC (libstdc++'s steady_clock), the clock io_uring timeouts use.
using MonoClock = std::chrono::steady_clock;
using MonoTime = MonoClock::time_point;

[[nodiscard]] inline MonoTime MonoNow() { return MonoClock::now(); }

[[nodiscard]] inline MonoTime operator+(MonoTime t, absl::Duration d) {
  return t + std::chrono::duration_cast<MonoClock::duration>(absl::ToChronoNanoseconds(d));
}

[[nodiscard]] inline absl::Duration Since(MonoTime earlier, MonoTime later) {
  return absl::FromChrono(later - earlier);
}

[[nodiscard]] inline timespec ToTimespec(MonoTime t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  return timespec{static_cast<time_t>(ns.count() / 1000000000),
                  static_cast<long>(ns.count() % 1000000000)};
}

}  // namespace hotring

#endif  // HOTRING_CORE_CLOCK_H_

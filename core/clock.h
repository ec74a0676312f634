// Clocks: monotonic time for deadlines and timers. Pure logic takes MonoTime as an argument
// (tests pass a fake one); only the I/O edge reads the clock.
#ifndef HOTRING_CORE_CLOCK_H_
#define HOTRING_CORE_CLOCK_H_

#include <sys/time.h>

#include <chrono>
#include <cstdint>
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

// absl::Duration <-> timespec/timeval, compiled with our own time_t. Use these, not Abseil's
// ToTimespec/DurationFromTimespec/DurationFromTimeval: those live in Debian's libabsl_time.a,
// which on 32-bit ARM was built with a 32-bit time_t, while hotring builds with
// -D_TIME_BITS=64 (third_party/toolchains/BUILD). Passing a timespec across that boundary
// would silently pass a struct of the wrong size.
[[nodiscard]] inline timespec DurationToTimespec(absl::Duration d) {
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

[[nodiscard]] inline absl::Duration DurationFromTimespec(const timespec& ts) {
  return absl::Seconds(static_cast<int64_t>(ts.tv_sec)) +
         absl::Nanoseconds(static_cast<int64_t>(ts.tv_nsec));
}

[[nodiscard]] inline absl::Duration DurationFromTimeval(const timeval& tv) {
  return absl::Seconds(static_cast<int64_t>(tv.tv_sec)) +
         absl::Microseconds(static_cast<int64_t>(tv.tv_usec));
}

}  // namespace hotring

#endif  // HOTRING_CORE_CLOCK_H_

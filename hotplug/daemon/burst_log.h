// What the daemon says of a burst of events (coldplug first, then each later burst) in a log
// that may be rate-limited (/dev/kmsg in an initramfs): the first few failures a line each, and
// one summary line when the burst settles (`coldplug: N events, M modules in X ms; ...`) that
// sums up the rest. Owns the burst's start and its counters' values at that start.
#ifndef HOTRING_HOTPLUG_DAEMON_BURST_LOG_H_
#define HOTRING_HOTPLUG_DAEMON_BURST_LOG_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "core/clock.h"

namespace hotring::hotplug {

// The counters a summary is made of, as they stand now.
struct BurstCounters {
  uint64_t received = 0;
  uint64_t failed = 0;  // failed or timed out
  std::optional<uint64_t> modules_loaded;  // nullopt: no modules stage
  uint64_t probe_errors = 0;
  const absl::flat_hash_map<std::string, uint64_t>* dropped = nullptr;  // by reason
};

class BurstLog {
 public:
  // A burst is running: an event was accepted since the last settle.
  [[nodiscard]] bool running() const { return start_.has_value(); }
  // An event was accepted at `now` (counted in `counters` already) while none was running:
  // a burst starts. (The caller asks running() first: the counters cost a walk of the stages'.)
  void Start(MonoTime now, const BurstCounters& counters);
  // The daemon settled: the summary line of the burst, if one is running (notice for the first,
  // the coldplug; info for later ones).
  void Settled(MonoTime now, const BurstCounters& counters);
  // A failed or timed-out event: the first few get a warning line, the rest an info line.
  void Failure(const std::string& line);

 private:
  std::optional<MonoTime> start_;
  uint64_t received_base_ = 0;
  uint64_t modules_base_ = 0;
  uint64_t failed_base_ = 0;
  bool coldplug_reported_ = false;
  uint64_t failure_lines_ = 0;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_BURST_LOG_H_

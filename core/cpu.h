// CPU placement for the benchmarks. On a VM a wake-up across vCPUs can cost 20x a same-CPU
// round trip, so every IPC figure is only meaningful with its placement stated and pinned.
#ifndef HOTRING_CORE_CPU_H_
#define HOTRING_CORE_CPU_H_

#include <sched.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotring {

// The CPUs this process may run on (sched_getaffinity), in ascending order.
absl::StatusOr<std::vector<int>> AllowedCpus();

// InvalidArgument unless `cpu` is one of AllowedCpus(); `what` names the flag.
absl::Status CheckCpu(int cpu, const std::string& what);

// Pins the calling thread to `cpu`.
absl::Status PinCurrentThread(int cpu);

// Pins the calling thread when `cpu` is set (the `--cpu N` convention of the bench commands).
absl::Status MaybePinCurrentThread(std::optional<int> cpu);

// Restores the calling thread's CPU affinity when dropped (for code that pins the thread it was
// called on only for the duration of a run). Owns the saved mask.
class AffinityRestorer {
 public:
  AffinityRestorer();
  AffinityRestorer(const AffinityRestorer&) = delete;
  AffinityRestorer& operator=(const AffinityRestorer&) = delete;
  ~AffinityRestorer();

 private:
  cpu_set_t saved_;
  bool valid_ = false;
};

// "0,1" for {0, 1}.
std::string CpuListString(const std::vector<int>& cpus);

}  // namespace hotring

#endif  // HOTRING_CORE_CPU_H_

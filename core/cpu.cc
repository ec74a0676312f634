#include "core/cpu.h"

#include <pthread.h>
#include <sched.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace hotring {

absl::StatusOr<std::vector<int>> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return ErrnoStatus("sched_getaffinity");
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.empty()) return absl::InternalError("sched_getaffinity: no CPU allowed");
  return cpus;
}

absl::Status CheckCpu(int cpu, const std::string& what) {
  absl::StatusOr<std::vector<int>> allowed = AllowedCpus();
  if (!allowed.ok()) return allowed.status();
  for (const int c : *allowed) {
    if (c == cpu) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(what, " ", cpu, ": not one of this process's CPUs (",
                                                 CpuListString(*allowed), ")"));
}

absl::Status PinCurrentThread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return absl::InvalidArgumentError(absl::StrCat("CPU ", cpu, " out of range"));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int err = ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set); err != 0) {
    return ErrnoStatus(absl::StrCat("pthread_setaffinity_np(CPU ", cpu, ")"), err);
  }
  return absl::OkStatus();
}

absl::Status MaybePinCurrentThread(std::optional<int> cpu) {
  if (!cpu.has_value()) return absl::OkStatus();
  return PinCurrentThread(*cpu);
}

AffinityRestorer::AffinityRestorer() {
  CPU_ZERO(&saved_);
  valid_ = ::pthread_getaffinity_np(::pthread_self(), sizeof(saved_), &saved_) == 0;
}

AffinityRestorer::~AffinityRestorer() {
  if (valid_) (void)::pthread_setaffinity_np(::pthread_self(), sizeof(saved_), &saved_);
}

std::string CpuListString(const std::vector<int>& cpus) { return absl::StrJoin(cpus, ","); }

}  // namespace hotring

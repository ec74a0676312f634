// `hotring bench memory`: what a private daemon holds resident when idle, at its peak during a
// burst of events, and once idle again after it.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_MEMORY_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hotring::hotplug::bench {

// One reading of /proc/PID/smaps_rollup and /proc/PID/status, in KiB.
struct MemorySample {
  int64_t rss_kib = 0;        // Rss: every mapped page, file-backed ones included
  int64_t anonymous_kib = 0;  // Anonymous: heap, stacks, ring buffers
  int64_t file_kib = 0;       // Rss - Anonymous: the binary's pages and io_uring's shared rings
  int64_t peak_rss_kib = 0;   // VmHWM: the highest Rss so far
  int64_t threads = 0;
  // The same from /proc/PID/status: VmRSS = RssAnon + RssFile + RssShmem (io_uring's rings).
  int64_t vm_rss_kib = 0;
  int64_t rss_anon_kib = 0;
  int64_t rss_file_kib = 0;
  int64_t rss_shmem_kib = 0;
};

// Reads the process's memory figures (smaps_rollup: Linux 4.14).
absl::StatusOr<MemorySample> ReadMemory(pid_t pid);

// Parses the bench's arguments, runs it, prints the report; returns the exit code.
int BenchMemoryCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_MEMORY_H_

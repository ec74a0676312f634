// `hotring bench sysv`: the parallel SysV message ping-pong (Manfred Spraul's pmsg experiment).
// N private queues; on each, two worker threads bounce one 8-byte message (mtype 2 one way,
// mtype 1 the other), the pair pinned to one CPU. msgrcv blocks and has no io_uring opcode, so
// the workers are threads; the reactor owns the start, the stop timer, signal handling and the
// collection of results, and removes every queue on every exit path.
#ifndef HOTRING_IPC_SYSV_BENCH_H_
#define HOTRING_IPC_SYSV_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/task.h"
#include "io/reactor.h"
#include "io/signals.h"

namespace hotring::ipc {

inline constexpr int kSysvMaxQueues = 1024;

struct SysvBenchOptions {
  int queues = 1;
  absl::Duration duration = absl::Seconds(5);
  // Pin pair i to the i-th allowed CPU (modulo their number); false leaves placement to the
  // scheduler.
  bool pin = true;
};

// InvalidArgument for 0 or too many queues and for a duration that is not positive.
absl::Status ValidateSysvOptions(const SysvBenchOptions& options);

// One worker's outcome. Numbering follows pmsg: thread i is the sender of pair i, thread
// i + queues its partner.
struct SysvWorkerResult {
  int thread = 0;
  int queue = 0;   // pair index
  int msqid = -1;  // the queue's id while it existed
  int cpu = -1;    // -1: not pinned
  bool sender = false;
  uint64_t rounds = 0;  // messages received and answered
};

struct SysvBenchResult {
  int queues = 0;
  double requested_seconds = 0;
  double elapsed_seconds = 0;  // from the start signal to the stop
  std::vector<SysvWorkerResult> workers;
  uint64_t total = 0;
  int interrupted_by = 0;  // the signal that ended the run early, or 0
  [[nodiscard]] double per_second() const {
    return elapsed_seconds > 0 ? static_cast<double>(total) / elapsed_seconds : 0;
  }
};

// Runs the benchmark on `reactor`. With `signals` (whose signals the caller blocked before any
// thread exists), a signal stops the run early and the partial result comes back with
// interrupted_by set. Every queue is gone when this returns, whatever it returns.
Task<absl::StatusOr<SysvBenchResult>> RunSysvBench(io::Reactor& reactor,
                                                   SysvBenchOptions options,
                                                   io::SignalFd* signals);

// pmsg's report (result matrix and total) plus the rate, or one JSON object.
std::string FormatSysvResult(const SysvBenchResult& result, bool json);

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_SYSV_BENCH_H_

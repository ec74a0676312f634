// BlockingSpawner: runs a program to its end from any thread, for callers that must wait in
// place (udev's PROGRAM and IMPORT{program}, which the rules executor runs synchronously on a
// blocking pool's worker). The child is started by a Spawner (under a mutex: starting is short),
// then this thread polls its output pipes and its pidfd until it exits or the deadline passes:
// SIGTERM to the child and its group, then SIGKILL after the grace, as the daemon's Spawner does.
// Owns the Spawner and the mutex; safe to call from several threads at once.
#ifndef HOTRING_IO_PROCESS_BLOCKING_SPAWNER_H_
#define HOTRING_IO_PROCESS_BLOCKING_SPAWNER_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "io/ops.h"
#include "io/process/spawner.h"

namespace hotring::io::process {

// How a blocking run ended, with what the child wrote to its stdout.
struct BlockingRunResult {
  io::ExitStatus exit;
  bool timed_out = false;  // SIGTERM was sent at the deadline
  bool killed = false;     // SIGKILL was sent after the grace
  std::string stdout_text;  // at most max_stdout bytes
  bool stdout_truncated = false;
  std::string stderr_text;  // at most 4 KiB, for the caller's log
};

class BlockingSpawner {
 public:
  static absl::StatusOr<std::unique_ptr<BlockingSpawner>> Create();

  // Runs `request` (its stdout and stderr are piped here whatever it says; stdin is /dev/null),
  // waiting at most request.timeout and then request.kill_grace. The child is gone when this
  // returns, on every path. An error: the program could not be started.
  absl::StatusOr<BlockingRunResult> Run(SpawnRequest request, size_t max_stdout);

 private:
  explicit BlockingSpawner(std::unique_ptr<Spawner> spawner) : spawner_(std::move(spawner)) {}
  std::mutex mutex_;  // guards spawner_
  std::unique_ptr<Spawner> spawner_;
};

}  // namespace hotring::io::process

#endif  // HOTRING_IO_PROCESS_BLOCKING_SPAWNER_H_

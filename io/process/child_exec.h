// The child's side of a spawn, from the clone to its execve: the argument block the parent
// prepares for it, the code the child runs (raw system calls only), and the clone that starts
// it. Private to the Spawner (spawner.cc prepares the block and reads back how the child's setup
// failed); kept apart because none of this may allocate, lock or be instrumented.
#ifndef HOTRING_IO_PROCESS_CHILD_EXEC_H_
#define HOTRING_IO_PROCESS_CHILD_EXEC_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "io/process/spawner.h"

namespace hotring::io::process {

// The step of the child's setup that failed, reported to the parent with its errno.
enum class ChildStep : int { kNone = 0, kSignals, kSetsid, kDup, kPassFd, kCloseRange, kExec };

// The failed step as an error message names it.
absl::string_view ChildStepName(ChildStep step);

// How the child's setup failed: the step, and its errno.
struct ChildFailure {
  ChildStep step = ChildStep::kNone;
  int err = 0;
};

// Everything the child needs, prepared by the parent before the clone (the child must not
// allocate: with CLONE_VM it runs on the parent's memory while the parent is suspended).
struct ChildArgs {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  // -1: keep this process's. Every descriptor the child dups from is above every number it
  // dups onto (0-2 and the passed ones), so no dup3 overwrites a source still to be used.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Passed descriptors: passed[i].parent_fd (a staged copy) becomes passed[i].child_fd.
  const PassedFd* passed = nullptr;
  size_t passed_count = 0;
  // Ascending: the descriptors from 3 up that survive until execve (the passed ones'
  // numbers, and error_fd).
  const unsigned* keep = nullptr;
  size_t keep_count = 0;
  bool new_session = true;
  // The write end of a close-on-exec pipe for the fork-style methods, where the child's memory
  // is a copy. -1 with CLONE_VM: the child writes `failure` directly.
  int error_fd = -1;
  // Bit n-1 set: signal n is caught or ignored here and must be reset to SIG_DFL in the child.
  uint64_t reset_signals = ~uint64_t{0};
  ChildFailure failure;
};

// The signals whose disposition is not SIG_DFL (SigIgn | SigCgt of /proc/self/status), as a
// mask with bit n-1 for signal n; every signal if the file cannot be read or parsed. Read at
// each spawn, so a handler installed at any time is still reset in the child: resetting all
// 62 in the child cost 62 system calls per handler, with the parent suspended meanwhile.
// `status_fd` is this process's status file, kept open (-1: open it here): a pread at offset 0
// regenerates a seq_file, and saves the path walk and the close, which a profile of the daemon
// spawning cheap handlers showed as half of this function's cost (the rest is formatting).
uint64_t SignalsToReset(int status_fd);

// A child just started: its pid and its pidfd, which the caller takes over.
struct ClonedChild {
  pid_t pid;
  int pidfd;
};

// Starts a child by `method` (not kAuto) that runs until execve on `args`, with every signal
// blocked around the clone. `stack_top` is the stack of the vfork-style clone. `unsupported` is
// set when the kernel (or a seccomp filter) refuses the method itself.
absl::StatusOr<ClonedChild> CloneChild(Spawner::Method method, void* stack_top, ChildArgs& args,
                                       bool& unsupported);

}  // namespace hotring::io::process

#endif  // HOTRING_IO_PROCESS_CHILD_EXEC_H_

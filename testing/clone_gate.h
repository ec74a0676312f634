#ifndef HOTRING_TESTING_CLONE_GATE_H_
#define HOTRING_TESTING_CLONE_GATE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/unique_fd.h"

namespace hotring::testing {

// Process creation that fails on demand, for fault tests: a program started through
// CommandPrefix() runs under a seccomp filter that asks this gate about every clone, clone3,
// fork and vfork it or its descendants make (seccomp user notification). While SetFailing(true)
// holds, each call that would make a process (not a thread) fails with `error` (ENOMEM by
// default) before the kernel does anything; otherwise the call proceeds unchanged. No kernel
// condition produces ENOMEM from clone on demand and lets it go again (a memory cgroup limit
// brings the OOM killer; a dead PID namespace stays dead), hence the gate.
// Owns the rendezvous socket, the listener descriptor and the thread answering it.
class CloneGate {
 public:
  static absl::StatusOr<std::unique_ptr<CloneGate>> Create(int error);
  ~CloneGate();
  CloneGate(const CloneGate&) = delete;
  CloneGate& operator=(const CloneGate&) = delete;

  // argv to put before the program: {clone_gate_exec, @SOCKET}.
  [[nodiscard]] std::vector<std::string> CommandPrefix() const;
  void SetFailing(bool failing) { failing_.store(failing); }
  // Process creations failed so far, and let through so far (threads not counted).
  [[nodiscard]] uint64_t failed() const { return failed_.load(); }
  [[nodiscard]] uint64_t allowed() const { return allowed_.load(); }

 private:
  CloneGate(int error, std::string name, UniqueFd listen, UniqueFd stop_read, UniqueFd stop_write);
  void Serve();
  bool Answer(int listener);

  const int error_;
  const std::string name_;  // "@" and the abstract socket name
  UniqueFd listen_;
  UniqueFd stop_read_;
  UniqueFd stop_write_;
  std::atomic<bool> failing_{false};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> allowed_{0};
  std::thread thread_;
};

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_CLONE_GATE_H_

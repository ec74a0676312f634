// SysvQueue: a private SysV message queue that cannot outlive its owner. SysV queues are
// kernel objects that survive the process, so every exit path (return, error, signal) must
// remove them; this type makes that the destructor's job.
#ifndef HOTRING_IPC_SYSV_QUEUE_H_
#define HOTRING_IPC_SYSV_QUEUE_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotring::ipc {

// Owns one IPC_PRIVATE message queue; removes it (IPC_RMID) on destruction. Move-only.
class SysvQueue {
 public:
  static absl::StatusOr<SysvQueue> Create();

  SysvQueue(const SysvQueue&) = delete;
  SysvQueue& operator=(const SysvQueue&) = delete;
  SysvQueue(SysvQueue&& other) noexcept : id_(std::exchange(other.id_, -1)) {}
  SysvQueue& operator=(SysvQueue&& other) noexcept;
  ~SysvQueue() { (void)Remove(); }

  [[nodiscard]] int id() const { return id_; }

  // Removes the queue now; threads blocked on it wake with EIDRM. Idempotent.
  absl::Status Remove();

 private:
  explicit SysvQueue(int id) : id_(id) {}
  int id_ = -1;
};

// Message queues that exist in this IPC namespace (msgctl MSG_INFO, field msgpool).
absl::StatusOr<int> CountSysvQueues();

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_SYSV_QUEUE_H_

// WorkerThread: a joinable POSIX thread for work that must block in a system call io_uring
// cannot issue (SysV msgrcv/msgsnd). Created with pthread_create so a failure is a Status,
// not an abort (the build has no exceptions for std::thread to throw).
#ifndef HOTRING_IPC_WORKER_THREAD_H_
#define HOTRING_IPC_WORKER_THREAD_H_

#include <pthread.h>

#include <functional>
#include <memory>

#include "absl/status/statusor.h"

namespace hotring::ipc {

// Owns one running thread and the function it runs; joins the thread on destruction.
class WorkerThread {
 public:
  // Starts `body` on a new thread, which inherits the caller's signal mask.
  static absl::StatusOr<WorkerThread> Start(std::function<void()> body);

  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;
  WorkerThread(WorkerThread&& other) noexcept;
  WorkerThread& operator=(WorkerThread&& other) noexcept;
  ~WorkerThread() { Join(); }

  // Waits for the thread to return (no-op once joined).
  void Join();

 private:
  WorkerThread() = default;
  static void* Trampoline(void* arg);
  pthread_t thread_{};
  bool joinable_ = false;
  std::unique_ptr<std::function<void()>> body_;
};

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_WORKER_THREAD_H_

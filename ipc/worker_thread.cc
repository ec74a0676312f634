#include "ipc/worker_thread.h"

#include <utility>

#include "core/status.h"

namespace hotring::ipc {

absl::StatusOr<WorkerThread> WorkerThread::Start(std::function<void()> body) {
  WorkerThread thread;
  thread.body_ = std::make_unique<std::function<void()>>(std::move(body));
  if (const int err = ::pthread_create(&thread.thread_, nullptr, &Trampoline, thread.body_.get());
      err != 0) {
    return ErrnoStatus("pthread_create", err);
  }
  thread.joinable_ = true;
  return thread;
}

void* WorkerThread::Trampoline(void* arg) {
  (*static_cast<std::function<void()>*>(arg))();
  return nullptr;
}

WorkerThread::WorkerThread(WorkerThread&& other) noexcept
    : thread_(other.thread_),
      joinable_(std::exchange(other.joinable_, false)),
      body_(std::move(other.body_)) {}

WorkerThread& WorkerThread::operator=(WorkerThread&& other) noexcept {
  if (this != &other) {
    Join();
    thread_ = other.thread_;
    joinable_ = std::exchange(other.joinable_, false);
    body_ = std::move(other.body_);
  }
  return *this;
}

void WorkerThread::Join() {
  if (!joinable_) return;
  joinable_ = false;
  (void)::pthread_join(thread_, nullptr);
  body_.reset();
}

}  // namespace hotring::ipc

#include "io/blocking_pool.h"

#include <signal.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"

namespace hotring::io {

BlockingPool::BlockingPool(Options options) : options_(std::move(options)) {}

BlockingPool::~BlockingPool() { Shutdown(); }

absl::Status BlockingPool::Enqueue(std::shared_ptr<blocking_internal::JobBase> job,
                                   JobOrder order) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) {
    ++stats_.refused;
    return absl::FailedPreconditionError("blocking pool: shut down");
  }
  if (queue_.size() >= options_.max_queued) {
    ++stats_.refused;
    return absl::ResourceExhaustedError(
        absl::StrCat("blocking pool: ", queue_.size(), " jobs already wait for a thread"));
  }
  const blocking_internal::JobBase* const queued = job.get();
  if (order == JobOrder::kFirst) {
    queue_.insert(queue_.begin() + static_cast<std::ptrdiff_t>(first_queued_), std::move(job));
    ++first_queued_;
  } else {
    queue_.push_back(std::move(job));
  }
  stats_.queued = queue_.size();
  // An idle thread that was already notified has not taken its job yet: compare the queue
  // with the idle threads, not idle_ with zero.
  if (queue_.size() > idle_ && threads_.size() < std::max<size_t>(options_.max_threads, 1)) {
    if (absl::Status started = StartThreadLocked(); !started.ok()) {
      if (threads_.empty()) {
        // No thread took anything meanwhile (there is none): the job is where it was put.
        const auto it = std::find_if(queue_.begin(), queue_.end(),
                                     [queued](const auto& j) { return j.get() == queued; });
        if (it - queue_.begin() < static_cast<std::ptrdiff_t>(first_queued_)) --first_queued_;
        queue_.erase(it);
        stats_.queued = queue_.size();
        ++stats_.refused;
        return started;
      }
      // The threads we have will get to it.
      LogWarning("blocking pool %s: %s; continuing with %d threads", options_.name,
                 started.ToString(), threads_.size());
    }
  }
  work_.notify_one();
  return absl::OkStatus();
}

absl::Status BlockingPool::StartThreadLocked() {
  // Workers block every signal: the daemon takes its signals through a signalfd on the reactor
  // thread, and a worker with SIGTERM unblocked would be picked by the kernel to die of it.
  // The mask is inherited from the creating thread, so set it around pthread_create.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_t thread;
  const int err = pthread_create(&thread, nullptr, &BlockingPool::ThreadMain, this);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (err != 0) return ErrnoStatus("pthread_create", err);
  std::string name = options_.name.substr(0, 15);
  (void)pthread_setname_np(thread, name.c_str());
  threads_.push_back(thread);
  stats_.threads = threads_.size();
  return absl::OkStatus();
}

void* BlockingPool::ThreadMain(void* pool) {
  static_cast<BlockingPool*>(pool)->WorkerLoop();
  return nullptr;
}

std::shared_ptr<blocking_internal::JobBase> BlockingPool::TakeLocked() {
  std::shared_ptr<blocking_internal::JobBase> job = std::move(queue_.front());
  queue_.pop_front();
  if (first_queued_ > 0) --first_queued_;
  stats_.queued = queue_.size();
  ++stats_.running;
  stats_.peak_running = std::max(stats_.peak_running, stats_.running);
  return job;
}

std::shared_ptr<blocking_internal::JobBase> BlockingPool::WaitForJob() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++idle_;
  work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
  --idle_;
  if (queue_.empty()) return nullptr;  // stopping, and Shutdown took what was queued
  return TakeLocked();
}

void BlockingPool::WorkerLoop() {
  std::shared_ptr<blocking_internal::JobBase> job = WaitForJob();
  while (job != nullptr) {
    const bool skipped = job->abandoned();
    if (skipped) {
      job->Fail(absl::CancelledError("blocking pool: the awaiting task was dropped"));
    } else {
      job->Execute();
    }
    // Counted before the task can see its result: a task that got it finds it in stats(). The
    // next job waiting is taken under the same lock (a busy pool locks once a job).
    std::shared_ptr<blocking_internal::JobBase> next;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --stats_.running;
      if (skipped) {
        ++stats_.skipped;
      } else {
        ++stats_.completed;
      }
      if (!queue_.empty()) next = TakeLocked();
    }
    // Possibly the last reference then (the task is gone): freed by the reactor or here,
    // outside the lock.
    blocking_internal::JobBase::Complete(std::move(job));
    job = next != nullptr ? std::move(next) : WaitForJob();
  }
}

void BlockingPool::Shutdown() {
  std::deque<std::shared_ptr<blocking_internal::JobBase>> never_started;
  std::vector<pthread_t> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    never_started.swap(queue_);
    first_queued_ = 0;
    stats_.queued = 0;
    threads.swap(threads_);
  }
  work_.notify_all();
  for (std::shared_ptr<blocking_internal::JobBase>& job : never_started) {
    job->Fail(absl::CancelledError("blocking pool: shut down before the job started"));
    blocking_internal::JobBase::Complete(std::move(job));
  }
  never_started.clear();
  for (const pthread_t thread : threads) pthread_join(thread, nullptr);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.threads = 0;
}

BlockingPool::Stats BlockingPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace hotring::io

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
  if (absl::Status woken = WakeForQueueLocked(); !woken.ok()) {
    // No thread took anything meanwhile (there is none): the job is where it was put.
    const auto it = std::find_if(queue_.begin(), queue_.end(),
                                 [queued](const auto& j) { return j.get() == queued; });
    if (it - queue_.begin() < static_cast<std::ptrdiff_t>(first_queued_)) --first_queued_;
    queue_.erase(it);
    stats_.queued = queue_.size();
    ++stats_.refused;
    return woken;
  }
  return absl::OkStatus();
}

absl::Status BlockingPool::WakeForQueueLocked() {
  const size_t max_threads = std::max<size_t>(options_.max_threads, 1);
  // Threads that will come to the queue by themselves: the busy ones when their jobs end, the
  // told ones now.
  const size_t busy = stats_.running - stats_.waiting_elsewhere;
  const size_t coming = busy + notified_ + starting_;
  if (coming >= max_threads) return absl::OkStatus();
  if (options_.max_busy != 0 && coming >= options_.max_busy &&
      Since(last_progress_, MonoNow()) < options_.stall) {
    ++stats_.left_to_busy;
    return absl::OkStatus();
  }
  if (idle_ > notified_) {
    ++notified_;
    work_.notify_one();
    return absl::OkStatus();
  }
  if (threads_.size() >= max_threads) return absl::OkStatus();
  if (absl::Status started = StartThreadLocked(); !started.ok()) {
    if (threads_.empty()) return started;
    // The threads we have will get to it.
    LogWarning("blocking pool %s: %s; continuing with %d threads", options_.name,
               started.ToString(), threads_.size());
    return absl::OkStatus();
  }
  ++starting_;
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
  if (options_.max_busy != 0) last_progress_ = MonoNow();
  return job;
}

std::shared_ptr<blocking_internal::JobBase> BlockingPool::WaitForJob(bool arriving) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (arriving && starting_ > 0) --starting_;
  ++idle_;
  while (!stopping_ && queue_.empty()) {
    work_.wait(lock);
    // Told or not (a spurious wake-up), it is here: fewer are counted as coming, never more,
    // so no job is left to a thread that is not on its way. One that finds the queue empty
    // (a busy thread took the job) waits again, no longer counted.
    if (notified_ > 0) --notified_;
  }
  --idle_;
  if (queue_.empty()) return nullptr;  // stopping, and Shutdown took what was queued
  return TakeLocked();
}

thread_local BlockingPool* BlockingPool::current_ = nullptr;

void BlockingPool::WorkerLoop() {
  current_ = this;
  std::shared_ptr<blocking_internal::JobBase> job = WaitForJob(/*arriving=*/true);
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
      if (options_.max_busy != 0) last_progress_ = MonoNow();
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
    job = next != nullptr ? std::move(next) : WaitForJob(/*arriving=*/false);
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

BlockingPool::WaitingElsewhere::WaitingElsewhere() : pool_(current_) {
  if (pool_ == nullptr) return;
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  ++pool_->stats_.waiting_elsewhere;
  if (!pool_->queue_.empty() && !pool_->stopping_) (void)pool_->WakeForQueueLocked();
}

BlockingPool::WaitingElsewhere::~WaitingElsewhere() {
  if (pool_ == nullptr) return;
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  --pool_->stats_.waiting_elsewhere;
}

BlockingPool::Stats BlockingPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats stats = stats_;
  stats.told = notified_;
  return stats;
}

}  // namespace hotring::io

// BlockingPool: runs blocking calls that have no io_uring opcode (finit_module; later sysfs
// walks and resyncs) on a small, bounded set of threads, so the reactor thread never blocks.
// `co_await pool.Run(reactor, fn)` queues `fn`, and a worker thread runs it; the worker then
// pokes the job's eventfd, whose read the awaiting task has in flight on the ring, so the task
// is resumed by the reactor loop like any other completion.
//
// Dropping the awaiting task is safe: its eventfd read is cancelled, a job that has not started
// is skipped, a running one finishes on its thread and its result is discarded. The job and its
// eventfd are shared by the task and the worker, so whichever lets go last frees them. `fn` must
// therefore own what it uses (capture by value): it may outlive the task that queued it.
#ifndef HOTRING_IO_BLOCKING_POOL_H_
#define HOTRING_IO_BLOCKING_POOL_H_

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/task.h"
#include "io/reactor.h"
#include "io/thread_wake.h"

namespace hotring::io {

namespace blocking_internal {

// What Run() returns for a function returning R: errors of the pool itself (no eventfd, queue
// full, shut down) must fit in it, so plain values come back as StatusOr<R>, void as Status, and
// Status / StatusOr<T> as they are.
template <typename R>
struct RunResult {
  using Type = absl::StatusOr<R>;
};
template <>
struct RunResult<void> {
  using Type = absl::Status;
};
template <>
struct RunResult<absl::Status> {
  using Type = absl::Status;
};
template <typename T>
struct RunResult<absl::StatusOr<T>> {
  using Type = absl::StatusOr<T>;
};

// The eventfds of finished jobs, lent to the next ones: making and closing one per job is two
// system calls and a file's life per event. Shared by a pool and its tasks (a task may outlive
// its pool). A task gives its job's eventfd back only once it has read the job's one write, so
// an eventfd taken from here holds no count and has no read in flight. Thread-safe.
class WakeCache {
 public:
  explicit WakeCache(size_t keep) : keep_(keep) {}
  WakeCache(const WakeCache&) = delete;
  WakeCache& operator=(const WakeCache&) = delete;

  // A kept eventfd, or a new one.
  absl::StatusOr<std::shared_ptr<const ThreadWake>> Take();
  // Keeps `wake` for a later job (up to `keep`; beyond, it is closed when its last user lets go).
  void Give(std::shared_ptr<const ThreadWake> wake);
  // Eventfds made so far.
  [[nodiscard]] uint64_t made() const;

 private:
  const size_t keep_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const ThreadWake>> free_;
  uint64_t made_ = 0;
};

// One job, shared by the awaiting task and the worker thread. Shares the job's eventfd with the
// pool's WakeCache (the worker only writes it, the task only reads it, neither changes it). The
// worker writes the result, then publishes it with a release store of `done`; the task reads it
// only after an acquire load saw `done` (the eventfd is the wake-up, not the synchronisation).
class JobBase {
 public:
  explicit JobBase(std::shared_ptr<const ThreadWake> wake) : wake_(std::move(wake)) {}
  JobBase(const JobBase&) = delete;
  JobBase& operator=(const JobBase&) = delete;
  virtual ~JobBase() = default;

  // On a worker thread: runs the function and stores its result.
  virtual void Execute() = 0;
  // The job will never run (skipped, or the pool shut down first): drops the function and
  // stores `status` as the result.
  virtual void Fail(absl::Status status) = 0;

  // Publishes the result and wakes the task.
  void Complete() {
    done_.store(true, std::memory_order_release);
    wake_->Notify();
  }
  [[nodiscard]] bool done() const { return done_.load(std::memory_order_acquire); }
  // The task is gone: nobody will read the result.
  void Abandon() { abandoned_.store(true, std::memory_order_relaxed); }
  [[nodiscard]] bool abandoned() const { return abandoned_.load(std::memory_order_relaxed); }
  [[nodiscard]] const ThreadWake& wake() const { return *wake_; }
  [[nodiscard]] const std::shared_ptr<const ThreadWake>& shared_wake() const { return wake_; }

 private:
  const std::shared_ptr<const ThreadWake> wake_;
  std::atomic<bool> done_{false};
  std::atomic<bool> abandoned_{false};
};

template <typename Fn>
class Job final : public JobBase {
 public:
  using Value = std::invoke_result_t<Fn&>;
  using Result = typename RunResult<Value>::Type;

  Job(Fn fn, std::shared_ptr<const ThreadWake> wake) : JobBase(std::move(wake)), fn_(std::move(fn)) {}

  void Execute() override {
    if constexpr (std::is_void_v<Value>) {
      (*fn_)();
      result_.emplace(absl::OkStatus());
    } else {
      result_.emplace((*fn_)());
    }
    // What the function captured is released on its thread, at once.
    fn_.reset();
  }
  void Fail(absl::Status status) override {
    fn_.reset();
    result_.emplace(std::move(status));
  }
  // Only after done().
  Result TakeResult() { return std::move(*result_); }

 private:
  std::optional<Fn> fn_;
  std::optional<Result> result_;
};

// Marks the job abandoned when the awaiting frame is destroyed (harmless once it is done).
class AbandonOnDrop {
 public:
  explicit AbandonOnDrop(JobBase* job) : job_(job) {}
  AbandonOnDrop(const AbandonOnDrop&) = delete;
  AbandonOnDrop& operator=(const AbandonOnDrop&) = delete;
  ~AbandonOnDrop() { job_->Abandon(); }

 private:
  JobBase* job_;
};

}  // namespace blocking_internal

// Where a job joins the queue of jobs waiting for a thread.
enum class JobOrder {
  kLast,   // behind every queued job: first come, first served
  kFirst,  // behind the other kFirst jobs only: before every kLast job still waiting
};

// Owns up to `max_threads` worker threads (started on demand, joined by Shutdown) and the queue
// of jobs waiting for one. Run() may be called from any reactor thread; each job reports back to
// the reactor its task awaits on.
class BlockingPool {
 public:
  struct Options {
    size_t max_threads = 4;
    // Jobs waiting for a thread beyond this are refused (ResourceExhausted): queues are bounded.
    size_t max_queued = 4096;
    // Thread name (at most 15 characters are kept), as `ps -L` and /proc show it.
    std::string name = "hotring-pool";
  };

  // A snapshot, for status and tests.
  struct Stats {
    size_t threads = 0;        // started and not yet joined
    size_t running = 0;        // jobs on a thread now
    size_t queued = 0;         // jobs waiting for a thread
    size_t peak_running = 0;   // most jobs ever running at once
    uint64_t completed = 0;    // jobs run to the end
    uint64_t skipped = 0;      // jobs dropped by their task before they started
    uint64_t refused = 0;      // Run() calls refused (queue full, shut down, no thread)
    uint64_t wakes_made = 0;   // eventfds made for jobs (a finished job's goes to the next)
  };

  explicit BlockingPool(Options options);
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;
  // Shutdown().
  ~BlockingPool();

  // Runs `fn()` on a worker thread and completes with its result (see RunResult: pool errors
  // come back as the Status part). The task is lazy: the pool must be alive when it starts, not
  // afterwards. `fn` is moved into the job and destroyed on the worker thread.
  // `order` kFirst puts the job ahead of the kLast jobs still waiting for a thread (a job that
  // others will wait behind, e.g. the driver of a bus whose devices are found only after it).
  template <typename Fn>
  Task<typename blocking_internal::Job<Fn>::Result> Run(Reactor& reactor, Fn fn,
                                                        JobOrder order = JobOrder::kLast);

  // Refuses new jobs, fails the queued ones with Cancelled (their tasks are woken), lets the
  // running ones finish (their tasks get their results), and joins every thread. Blocks for as
  // long as the longest running job; call it from the thread that owns the pool. Idempotent.
  void Shutdown();

  [[nodiscard]] Stats stats() const;
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  // Queues the job, starting a thread when every started one is busy and the bound allows.
  absl::Status Enqueue(std::shared_ptr<blocking_internal::JobBase> job, JobOrder order);
  // Enqueue without the wake-up: takes and releases mutex_ (Enqueue wakes a worker after).
  absl::Status PushJob(std::shared_ptr<blocking_internal::JobBase> job, JobOrder order);
  absl::Status StartThreadLocked();
  static void* ThreadMain(void* pool);
  void WorkerLoop();
  // The next queued job, counted as running; mutex_ held, queue_ not empty.
  std::shared_ptr<blocking_internal::JobBase> TakeLocked();
  // Waits for a job (counted idle meanwhile); nullptr once the pool stops.
  std::shared_ptr<blocking_internal::JobBase> WaitForJob();

  const Options options_;
  const std::shared_ptr<blocking_internal::WakeCache> wakes_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<blocking_internal::JobBase>> queue_;
  size_t first_queued_ = 0;  // the kFirst jobs: the front of queue_
  std::vector<pthread_t> threads_;
  size_t idle_ = 0;  // threads waiting for work
  bool stopping_ = false;
  Stats stats_;
};

template <typename Fn>
Task<typename blocking_internal::Job<Fn>::Result> BlockingPool::Run(Reactor& reactor, Fn fn,
                                                                    JobOrder order) {
  const std::shared_ptr<blocking_internal::WakeCache> wakes = wakes_;
  absl::StatusOr<std::shared_ptr<const ThreadWake>> wake = wakes->Take();
  if (!wake.ok()) co_return wake.status();
  auto job = std::make_shared<blocking_internal::Job<Fn>>(std::move(fn), *wake);
  if (absl::Status queued = Enqueue(job, order); !queued.ok()) {
    wakes->Give(*std::move(wake));  // never written
    co_return queued;
  }
  const blocking_internal::AbandonOnDrop guard(job.get());
  // Nothing below touches the pool: it may be shut down and destroyed while we wait.
  bool read_the_write = false;
  while (!job->done()) {
    absl::StatusOr<uint64_t> woken = co_await job->wake().Wait(reactor);
    if (!woken.ok()) co_return woken.status();
    // The job writes its eventfd once: a read that returned took that write.
    read_the_write = true;
  }
  // A job that was done before we waited may not have written yet: its eventfd goes with it.
  if (read_the_write) wakes->Give(job->shared_wake());
  co_return job->TakeResult();
}

}  // namespace hotring::io

#endif  // HOTRING_IO_BLOCKING_POOL_H_

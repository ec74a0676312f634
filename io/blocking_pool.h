// BlockingPool: runs blocking calls that have no io_uring opcode (finit_module; later sysfs
// walks and resyncs) on a small, bounded set of threads, so the reactor thread never blocks.
// `co_await pool.Run(reactor, fn)` queues `fn`, and a worker thread runs it; the worker then
// posts the job to the reactor's RemoteInbox (one eventfd per reactor, written only when the
// reactor has not been woken already), so the task is resumed by the reactor loop with the
// other completions.
//
// Dropping the awaiting task is safe: it stops waiting at once, a job that has not started is
// skipped, a running one finishes on its thread and its result is discarded. The job is shared
// by the task, the worker and the inbox, so whichever lets go last frees it. `fn` must
// therefore own what it uses (capture by value): it may outlive the task that queued it.
#ifndef HOTRING_IO_BLOCKING_POOL_H_
#define HOTRING_IO_BLOCKING_POOL_H_

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <coroutine>
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
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/task.h"
#include "io/reactor.h"
#include "io/remote_inbox.h"

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

// One job, shared by the awaiting task, the worker thread and (once finished) the reactor's
// inbox. The worker writes the result, then posts the job to the inbox of the reactor its task
// awaits on (RemoteInbox::Post publishes done() with release order); the task reads the result
// only after done() (the inbox is the wake-up, not the synchronisation).
class JobBase : public RemoteItem {
 public:
  explicit JobBase(std::shared_ptr<RemoteInbox> inbox) : inbox_(std::move(inbox)) {}
  JobBase(const JobBase&) = delete;
  JobBase& operator=(const JobBase&) = delete;

  // On a worker thread: runs the function and stores its result.
  virtual void Execute() = 0;
  // The job will never run (skipped, or the pool shut down first): drops the function and
  // stores `status` as the result.
  virtual void Fail(absl::Status status) = 0;

  // Publishes the result and hands the job to its reactor (whose last reference it may be).
  static void Complete(std::shared_ptr<JobBase> job) {
    const std::shared_ptr<RemoteInbox> inbox = job->inbox_;
    inbox->Post(std::move(job));
  }
  // Reactor thread: the task is gone: nobody will read the result, nothing is to be resumed.
  void Abandon() {
    set_waiter(nullptr);
    abandoned_.store(true, std::memory_order_relaxed);
  }
  [[nodiscard]] bool abandoned() const { return abandoned_.load(std::memory_order_relaxed); }

 private:
  const std::shared_ptr<RemoteInbox> inbox_;
  std::atomic<bool> abandoned_{false};
};

template <typename Fn>
class Job final : public JobBase {
 public:
  using Value = std::invoke_result_t<Fn&>;
  using Result = typename RunResult<Value>::Type;

  Job(Fn fn, std::shared_ptr<RemoteInbox> inbox) : JobBase(std::move(inbox)), fn_(std::move(fn)) {}

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

// Marks the job abandoned when the awaiting frame is destroyed (harmless once it is done), and
// tells the reactor it no longer waits for it.
class AbandonOnDrop {
 public:
  AbandonOnDrop(Reactor& reactor, JobBase* job) : reactor_(reactor), job_(job) {}
  AbandonOnDrop(const AbandonOnDrop&) = delete;
  AbandonOnDrop& operator=(const AbandonOnDrop&) = delete;
  ~AbandonOnDrop() {
    job_->Abandon();
    reactor_.ForgetRemote(*job_);
  }

 private:
  Reactor& reactor_;
  JobBase* job_;
};

// Suspends until the reactor takes the finished job from its inbox (not at all if it is done).
class AwaitJob {
 public:
  explicit AwaitJob(JobBase* job) : job_(job) {}
  bool await_ready() const noexcept { return job_->done(); }
  void await_suspend(std::coroutine_handle<> h) noexcept { job_->set_waiter(h); }
  void await_resume() const noexcept {}

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
    // Jobs running at once (not counting those waiting elsewhere: WaitingElsewhere) past which a
    // new job wakes no idle thread: a running one takes it when it finishes its own. A wake-up
    // costs both threads a switch, and a burst of short jobs runs on about as many threads as
    // there are CPUs at best. 0: max_threads (every job goes to a thread while there is one).
    size_t max_busy = 0;
    // A job goes to an idle thread anyway when no job was taken or finished for this long (the
    // running ones wait for something they did not mark with WaitingElsewhere).
    absl::Duration stall = absl::Milliseconds(5);
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
    uint64_t left_to_busy = 0; // jobs queued without a wake-up: max_busy threads were busy
    size_t waiting_elsewhere = 0;  // running jobs inside a WaitingElsewhere now
    size_t told = 0;           // idle threads told to take a job and not yet woken
  };

  // Marks, on a worker thread, a stretch of its job that waits for something else (a child
  // process, a device's I/O): the job stops counting as busy for max_busy, and a queued job gets
  // a thread meanwhile. Nothing outside a pool's worker thread.
  class WaitingElsewhere {
   public:
    WaitingElsewhere();
    WaitingElsewhere(const WaitingElsewhere&) = delete;
    WaitingElsewhere& operator=(const WaitingElsewhere&) = delete;
    ~WaitingElsewhere();

   private:
    BlockingPool* const pool_;
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
  absl::Status StartThreadLocked();
  static void* ThreadMain(void* pool);
  void WorkerLoop();
  // The next queued job, counted as running; mutex_ held, queue_ not empty.
  std::shared_ptr<blocking_internal::JobBase> TakeLocked();
  // Waits for a job (counted idle meanwhile); nullptr once the pool stops. `arriving`: the
  // thread's first call (it was counted as starting).
  std::shared_ptr<blocking_internal::JobBase> WaitForJob(bool arriving);
  // A job was queued or a busy thread turned to wait elsewhere: tells an idle thread, or starts
  // one, unless max_busy threads are busy and one took or finished a job within `stall`. An
  // error only when no thread could be started and none exists.
  absl::Status WakeForQueueLocked();
  // The worker's own pool, for WaitingElsewhere.
  static thread_local BlockingPool* current_;

  const Options options_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<blocking_internal::JobBase>> queue_;
  size_t first_queued_ = 0;  // the kFirst jobs: the front of queue_
  std::vector<pthread_t> threads_;
  size_t idle_ = 0;      // threads waiting for work
  size_t notified_ = 0;  // idle threads told to take a job, not yet woken
  size_t starting_ = 0;  // threads started for a job, not yet at the queue
  MonoTime last_progress_{};  // a job last taken or finished
  bool stopping_ = false;
  Stats stats_;
};

template <typename Fn>
Task<typename blocking_internal::Job<Fn>::Result> BlockingPool::Run(Reactor& reactor, Fn fn,
                                                                    JobOrder order) {
  absl::StatusOr<std::shared_ptr<RemoteInbox>> inbox = reactor.remote_inbox();
  if (!inbox.ok()) co_return inbox.status();
  auto job = std::make_shared<blocking_internal::Job<Fn>>(std::move(fn), *std::move(inbox));
  if (absl::Status queued = Enqueue(job, order); !queued.ok()) co_return queued;
  // Counted once queued: the job reaches the inbox exactly once from here (run or failed).
  reactor.ExpectRemote(*job);
  const blocking_internal::AbandonOnDrop guard(reactor, job.get());
  // Nothing below touches the pool: it may be shut down and destroyed while we wait.
  co_await blocking_internal::AwaitJob(job.get());
  co_return job->TakeResult();
}

}  // namespace hotring::io

#endif  // HOTRING_IO_BLOCKING_POOL_H_

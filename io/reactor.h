// Reactor: owns one io_uring and every operation in flight on it. Coroutines submit operations
// and are resumed when their completions arrive; the reactor, not the coroutine frame, owns an
// operation's storage (buffers, addresses) until the kernel's final CQE for it, so dropping a
// task mid-operation cancels the operation without a use-after-free.
#ifndef HOTRING_IO_REACTOR_H_
#define HOTRING_IO_REACTOR_H_

#include <liburing.h>
#include <linux/time_types.h>

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/task.h"
#include "io/remote_inbox.h"

namespace hotring::io {

// One CQE's payload.
struct Completion {
  int32_t result = 0;
  uint32_t flags = 0;
};

// Identifies an operation in flight: slot index and generation, which together form the SQE's
// user_data. 0 is never a valid id (the reactor uses user_data 0 for CQEs it ignores).
struct OpId {
  uint32_t index = 0;
  uint32_t generation = 0;
  [[nodiscard]] bool valid() const { return index != 0; }
  [[nodiscard]] uint64_t user_data() const {
    return (static_cast<uint64_t>(generation) << 32) | index;
  }
};

// Storage of one io_uring operation: everything the kernel may read or write while it runs.
// Concrete operations (io/ops.h) derive from it and add their buffers.
class Operation {
 public:
  Operation() = default;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;
  virtual ~Operation() = default;

  // Fills the SQE (opcode, fd, buffers). user_data is set by the reactor.
  virtual void Prepare(io_uring_sqe* sqe) = 0;
  // A completion nobody will consume (the awaiter is gone). Multishot receives return the
  // provided buffer the CQE carries to its ring here.
  virtual void Discard(const Completion& completion) {}

  // Optional: fail the operation with -ECANCELED after `timeout` (an IORING_OP_LINK_TIMEOUT).
  void set_link_timeout(absl::Duration timeout);
  [[nodiscard]] bool has_link_timeout() const { return has_link_timeout_; }

  // Marks an operation whose producer never waits for us (netlink multicasts are dropped, not
  // blocked, when the receive queue is full). Only a busy round made of such completions lets
  // the next wait batch (Reactor::Options::batch_window): a sender that blocks on a full
  // queue would otherwise sit idle for the whole window.
  void set_batchable(bool batchable) { batchable_ = batchable; }

  // Completions received and not yet consumed (multishot operations may queue several).
  [[nodiscard]] bool has_completion() const { return next_completion_ < completions_.size(); }
  Completion TakeCompletion();
  // True once the final CQE (no IORING_CQE_F_MORE) has arrived.
  [[nodiscard]] bool finished() const { return finished_; }

 private:
  friend class Reactor;
  std::coroutine_handle<> waiter_ = nullptr;
  absl::InlinedVector<Completion, 1> completions_;
  size_t next_completion_ = 0;
  __kernel_timespec link_timeout_{};
  bool has_link_timeout_ = false;
  bool batchable_ = false;
  bool finished_ = false;
  bool abandoned_ = false;
  bool queued_ = false;
};

// What the running kernel's io_uring offers, probed once at start-up.
struct Features {
  bool single_issuer = false;
  bool defer_taskrun = false;
  bool coop_taskrun = false;
  bool waitid = false;         // IORING_OP_WAITID (kernel 6.7)
  bool recv_multishot = false; // IORING_RECV_MULTISHOT (kernel 6.0)
  // Provided-buffer rings registered from our memory (kernel 5.19), unless pinned pages may be
  // high memory (io/high_memory.h) or Options::use_buf_ring is off: BufferRing then provides
  // its buffers with IORING_OP_PROVIDE_BUFFERS.
  bool buf_ring = false;
  bool high_memory = false;    // a 32-bit kernel with high memory (io/high_memory.h)
  bool cqe_skip = false;       // IOSQE_CQE_SKIP_SUCCESS (kernel 5.17)
  std::string Describe() const;
};

// Owns one io_uring, the slots of every operation in flight, and the list of coroutines to
// resume. Single-threaded: every method is called on the thread that created it.
class Reactor {
 public:
  struct Options {
    unsigned sq_entries = 256;
    // liburing maps the rings with MAP_POPULATE, so every entry is resident from the start:
    // 16,384 entries were 256 KiB of an idle daemon. A full CQ loses nothing (NODROP: the
    // kernel keeps the overflow and the next wait flushes it; a multishot receive it ends is
    // re-armed, its datagrams wait in the socket), and the daemon's receive rings bound its
    // burst completions to a few hundred per wait anyway.
    unsigned cq_entries = 1024;
    // Try IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN first (fall back if refused).
    bool prefer_defer_taskrun = true;
    // Use IORING_OP_WAITID when the kernel has it (tests turn it off to cover the fallback).
    bool use_waitid = true;
    // Register provided-buffer rings when the kernel has them and they are safe (tests turn it
    // off to cover the IORING_OP_PROVIDE_BUFFERS fallback of 32-bit high-memory kernels).
    bool use_buf_ring = true;
    // Let QueueUntracked SQEs skip their completion on success when the kernel can (tests turn
    // it off to cover kernels before 5.17).
    bool use_cqe_skip = true;
    // After a busy round (at least two completions, all of operations marked batchable, see
    // Operation::set_batchable), the next wait asks the kernel for many completions but gives
    // up after this window; after any other round it waits for one completion with no
    // deadline. It trades latency for wake-ups: during a burst each completion may wait up to
    // this long (timers included), and in exchange the producer (the kernel emitting uevents
    // inside a sysfs writer's write()) no longer wakes this thread for each one. Zero turns it
    // off. Only with DEFER_TASKRUN, whose wake-up honours the count (see RunOnce).
    absl::Duration batch_window = absl::Microseconds(100);
  };

  // Sets up the ring and probes the kernel. A kernel without io_uring, or with it disabled
  // (kernel.io_uring_disabled), or without an opcode hotring needs, is one clear error.
  static absl::StatusOr<std::unique_ptr<Reactor>> Create(const Options& options);
  static absl::StatusOr<std::unique_ptr<Reactor>> Create() { return Create(Options()); }

  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;
  // Cancels every operation still in flight and waits for the kernel to let go of them.
  // Every task awaiting on this reactor must be destroyed before it.
  ~Reactor();

  [[nodiscard]] const Features& features() const { return features_; }
  [[nodiscard]] io_uring* ring() { return &ring_; }

  // Takes ownership of `op`, queues its SQE, and records `waiter` to resume on completion.
  OpId Submit(std::unique_ptr<Operation> op, std::coroutine_handle<> waiter);
  // The operation while it is in flight (nullptr for a stale id).
  [[nodiscard]] Operation* Lookup(OpId id);
  // Sets or clears the coroutine to resume on the operation's next completion.
  void SetWaiter(OpId id, std::coroutine_handle<> waiter);
  // Hands a finished operation back to its awaiter (frees the slot).
  std::unique_ptr<Operation> Reclaim(OpId id);
  // The awaiter is gone: cancel the operation if it is still running; the reactor frees its
  // storage when the final CQE arrives. The cancel is submitted at once, so the caller may
  // close the operation's fd afterwards.
  void Abandon(OpId id);
  // Asks the kernel to cancel an operation that is still wanted (its awaiter sees -ECANCELED).
  void Cancel(OpId id);
  // Queues an SQE that nothing awaits and that owns no storage of its own (provided-buffer
  // bookkeeping: the buffers it names belong to a BufferRing). `prepare` fills it; it goes to
  // the kernel with the next submission, in order with every SQE queued before and after it.
  // It posts a completion only if it fails (IOSQE_CQE_SKIP_SUCCESS, where the kernel has it),
  // which is logged and counted (untracked_failures). Were successes posted, the re-provided
  // buffers of a burst would fill the CQ at the start of the next batching wait and end it
  // before it waited (see RunOnce).
  void QueueUntracked(absl::FunctionRef<void(io_uring_sqe*)> prepare);
  // Queues madvise(addr, length, advice) as an untracked SQE (IORING_OP_MADVISE): the kernel
  // runs it on a worker of its own once the next submission goes, while this thread waits,
  // and posts nothing when it succeeds. False, and nothing queued, without
  // IOSQE_CQE_SKIP_SUCCESS (a completion would wake the loop: call madvise instead). For
  // memory given back while idle: code that runs between a madvise and the wait maps its pages
  // again at once, where none runs after this.
  bool QueueMadvise(void* addr, size_t length, int advice);
  // Submits what is queued now.
  absl::Status Flush() { return SubmitPending(0); }

  // The inbox through which other threads hand finished work (RemoteItems) back to this
  // reactor, made on first use, with its eventfd read kept in flight on the ring (not counted
  // in in_flight()). The reactor takes what was posted after each wait and resumes the items'
  // waiters with the other completions. Call ExpectRemote for each item a task will wait for
  // (once the other thread has it; not at all if handing it over failed): a loop with such an
  // item outstanding and nothing else in flight waits for it rather than giving up.
  // ForgetRemote undoes that when the task stops waiting (dropped): as a cancelled operation,
  // an item nobody waits for holds no loop.
  absl::StatusOr<std::shared_ptr<RemoteInbox>> remote_inbox();
  void ExpectRemote(RemoteItem& item) {
    if (!item.expected_) ++remote_expected_;
    item.expected_ = true;
  }
  void ForgetRemote(RemoteItem& item) {
    if (item.expected_) --remote_expected_;
    item.expected_ = false;
  }
  // Items expected and not yet taken from the inbox.
  [[nodiscard]] size_t remote_expected() const { return remote_expected_; }
  // Items taken from the inbox, and the eventfd writes that woke the reactor for them.
  [[nodiscard]] uint64_t remote_taken() const { return remote_taken_count_; }
  [[nodiscard]] uint64_t remote_wakes() const { return inbox_ != nullptr ? inbox_->wakes() : 0; }

  // Submits queued SQEs, waits for at least one completion if `block` and work is in flight,
  // then resumes every coroutine whose operation completed. Returns how many were resumed.
  absl::StatusOr<size_t> RunOnce(bool block);

  // Runs the loop until `task` completes, and returns its value. If the task waits while no
  // operation is in flight (it can never be woken), returns FailedPrecondition.
  template <typename T>
  absl::StatusOr<T> BlockOn(Task<T> task);
  absl::Status BlockOn(Task<void> task);
  // Tasks that already return a Status: the loop's error and the task's are merged.
  absl::Status BlockOn(Task<absl::Status> task);
  template <typename T>
  absl::StatusOr<T> BlockOn(Task<absl::StatusOr<T>> task);

  // Whether the CQ holds completions not reaped yet.
  [[nodiscard]] bool has_unreaped_completions() { return io_uring_cq_ready(&ring_) > 0; }
  // Operations whose final CQE has not arrived (including abandoned ones).
  [[nodiscard]] size_t in_flight() const { return in_flight_; }
  // Completions processed since creation (for benchmarks and tests).
  [[nodiscard]] uint64_t completions_seen() const { return completions_seen_; }
  // Waits that batched (Options::batch_window) since creation (for tests).
  [[nodiscard]] uint64_t batch_waits() const { return batch_waits_; }
  // Reaps that found completions waiting in the kernel's overflow list because the CQ was full
  // (IORING_SQ_CQ_OVERFLOW), and io_uring_enter calls refused with EBUSY for the same reason:
  // each is a full CQ survived, nothing lost.
  [[nodiscard]] uint64_t cq_overflows() const { return cq_overflows_; }
  // Completions of QueueUntracked SQEs that reported an error.
  [[nodiscard]] uint64_t untracked_failures() const { return untracked_failures_; }
  // Completions the kernel dropped (the ring's overflow counter: only when it could not even
  // allocate an overflow entry). Should stay 0: anything else is a lost operation.
  [[nodiscard]] uint64_t cq_lost() const {
    return ring_.cq.koverflow != nullptr ? IO_URING_READ_ONCE(*ring_.cq.koverflow) : 0;
  }

 private:
  explicit Reactor(const Features& features) : features_(features) {}
  absl::Status Init(const Options& options);
  io_uring_sqe* GetSqe();
  absl::Status SubmitPending(unsigned wait_for);
  absl::Status WaitForBatch();
  size_t Reap();
  void Dispatch(uint64_t user_data, int32_t result, uint32_t flags);
  size_t ResumeReady();
  void ArmInbox();
  // Takes what the inbox holds, re-arms its read, and queues the items' waiters.
  void TakeRemote();
  void FreeSlot(uint32_t index);
  absl::Status DriveUntilDone(std::coroutine_handle<> handle);

  struct Slot {
    std::unique_ptr<Operation> op;
    uint32_t generation = 1;
  };

  io_uring ring_{};
  bool ring_ready_ = false;
  Features features_;
  std::vector<Slot> slots_;           // slots_[0] is never used (user_data 0 is reserved)
  std::vector<uint32_t> free_slots_;
  std::vector<OpId> ready_;           // operations with a completion and a waiter
  std::vector<OpId> resuming_;        // the batch being resumed
  size_t in_flight_ = 0;
  unsigned unsubmitted_ = 0;
  uint64_t completions_seen_ = 0;
  bool batching_ = false;             // batch_window set and the ring has DEFER_TASKRUN
  __kernel_timespec batch_window_{};
  uint64_t batch_waits_ = 0;
  uint64_t cq_overflows_ = 0;
  uint64_t untracked_failures_ = 0;
  bool busy_ = false;       // the last round reaped kBusyCompletions, all batchable
  bool round_unbatchable_ = false;  // this round dispatched a completion of an unbatchable op
  size_t round_untracked_ = 0;      // QueueUntracked completions this round (not counted as busy)
  // The remote inbox (remote_inbox()), whether its eventfd read is in flight and whether it
  // completed since the inbox was last emptied, the items expected, and the items taken whose
  // waiters are to be resumed.
  std::shared_ptr<RemoteInbox> inbox_;
  bool inbox_armed_ = false;
  bool inbox_fired_ = false;
  size_t remote_expected_ = 0;
  uint64_t remote_taken_count_ = 0;
  std::vector<std::shared_ptr<RemoteItem>> remote_taken_;
  std::vector<std::shared_ptr<RemoteItem>> remote_resuming_;
};

template <typename T>
absl::StatusOr<T> Reactor::BlockOn(Task<T> task) {
  const absl::Status status = DriveUntilDone(task.handle());
  if (!status.ok()) return status;
  return task.TakeResult();
}

template <typename T>
absl::StatusOr<T> Reactor::BlockOn(Task<absl::StatusOr<T>> task) {
  const absl::Status status = DriveUntilDone(task.handle());
  if (!status.ok()) return status;
  return task.TakeResult();
}

// Awaitable for a single-shot operation of type Op. Op must derive from Operation and provide
// `Result TakeResult(Completion)`. While suspended, the reactor owns the Op; if the awaiting
// frame is destroyed, the destructor abandons (and so cancels) it.
template <typename Op>
class [[nodiscard]] OpAwaitable {
 public:
  OpAwaitable(Reactor& reactor, std::unique_ptr<Op> op)
      : reactor_(&reactor), op_(std::move(op)) {}
  OpAwaitable(const OpAwaitable&) = delete;
  OpAwaitable& operator=(const OpAwaitable&) = delete;
  OpAwaitable(OpAwaitable&& other) noexcept
      : reactor_(other.reactor_), op_(std::move(other.op_)), id_(std::exchange(other.id_, {})) {}
  ~OpAwaitable() {
    if (id_.valid()) reactor_->Abandon(id_);
  }

  // Fails the operation with DeadlineExceeded if it has not completed after `timeout`.
  OpAwaitable&& WithTimeout(absl::Duration timeout) && {
    op_->set_link_timeout(timeout);
    return std::move(*this);
  }

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { id_ = reactor_->Submit(std::move(op_), h); }
  auto await_resume() {
    std::unique_ptr<Operation> base = reactor_->Reclaim(std::exchange(id_, {}));
    Op& op = static_cast<Op&>(*base);
    return op.TakeResult(op.TakeCompletion());
  }

 private:
  Reactor* reactor_;
  std::unique_ptr<Op> op_;
  OpId id_;
};

}  // namespace hotring::io

#endif  // HOTRING_IO_REACTOR_H_

#include "io/reactor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/log.h"
#include "core/notifier.h"
#include "core/status.h"
#include "io/high_memory.h"

namespace hotring::io {
namespace {

// IORING_OP_WAITID is newer than Debian 12's liburing headers.
constexpr int kOpWaitId = 50;

// A round that reaped this many completions counts as busy: the next wait batches (see
// Options::batch_window).
constexpr size_t kBusyCompletions = 2;
// How many completions a batching wait asks for. With DEFER_TASKRUN the kernel wakes a waiter
// only once this many task-work items are pending (io_req_local_work_add compares its count
// with cq_wait_nr); a socket's receive is one such item however many datagrams queue behind
// it, so in practice a batching wait ends at the window, or earlier when many different
// operations complete. A timer or waitid completion still wakes the thread at once, but the
// kernel then sleeps again until the count or the window is reached.
constexpr unsigned kBatchCompletions = 32;

// user_data of QueueUntracked SQEs. An OpId never has it: generations skip all-ones.
constexpr uint64_t kUntrackedUserData = ~uint64_t{0};
// The remote inbox's eventfd read: generation 0xffffffff is never used, so no OpId makes it.
constexpr uint64_t kInboxUserData = ~uint64_t{0} - 1;

// /proc/meminfo, or nullopt if it cannot be read (no /proc yet, early in an initramfs).
std::optional<std::string> ReadMeminfo() {
  const int fd = ::open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

struct RequiredOp {
  int opcode;
  const char* name;
};

constexpr RequiredOp kRequiredOps[] = {
    {IORING_OP_NOP, "NOP"},
    {IORING_OP_READ, "READ"},
    {IORING_OP_WRITE, "WRITE"},
    {IORING_OP_SENDMSG, "SENDMSG"},
    {IORING_OP_RECVMSG, "RECVMSG"},
    {IORING_OP_SEND, "SEND"},
    {IORING_OP_RECV, "RECV"},
    {IORING_OP_TIMEOUT, "TIMEOUT"},
    {IORING_OP_LINK_TIMEOUT, "LINK_TIMEOUT"},
    {IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL"},
    {IORING_OP_POLL_ADD, "POLL_ADD"},
};

absl::Status SetupError(int err) {
  switch (err) {
    case ENOSYS:
      return absl::UnimplementedError(
          "io_uring is not available: this kernel was built without CONFIG_IO_URING "
          "(hotring needs Linux 6.1 or newer with io_uring)");
    case EPERM:
      return absl::PermissionDeniedError(
          "io_uring is disabled on this system (sysctl kernel.io_uring_disabled is 1 or 2, or a "
          "seccomp filter forbids it); hotring needs io_uring");
    case ENOMEM:
      return absl::ResourceExhaustedError(
          "io_uring_setup: out of memory (or RLIMIT_MEMLOCK too low for the ring)");
    default:
      return ErrnoStatus("io_uring_queue_init_params", err);
  }
}

}  // namespace

void Operation::set_link_timeout(absl::Duration timeout) {
  if (timeout < absl::ZeroDuration()) timeout = absl::ZeroDuration();
  const int64_t ns = absl::ToInt64Nanoseconds(timeout);
  link_timeout_.tv_sec = ns / 1000000000;
  link_timeout_.tv_nsec = ns % 1000000000;
  has_link_timeout_ = true;
}

Completion Operation::TakeCompletion() {
  const Completion c = completions_[next_completion_++];
  if (next_completion_ == completions_.size()) {
    completions_.clear();
    next_completion_ = 0;
  }
  return c;
}

std::string Features::Describe() const {
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat("single_issuer=", single_issuer));
  parts.push_back(absl::StrCat("defer_taskrun=", defer_taskrun));
  parts.push_back(absl::StrCat("coop_taskrun=", coop_taskrun));
  parts.push_back(absl::StrCat("waitid=", waitid));
  parts.push_back(absl::StrCat("recv_multishot=", recv_multishot));
  parts.push_back(absl::StrCat("buf_ring=", buf_ring));
  if (high_memory) parts.push_back("high_memory=1");
  if (!cqe_skip) parts.push_back("cqe_skip=0");
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<std::unique_ptr<Reactor>> Reactor::Create(const Options& options) {
  std::unique_ptr<Reactor> reactor(new Reactor(Features{}));
  const absl::Status status = reactor->Init(options);
  if (!status.ok()) return status;
  return reactor;
}

absl::Status Reactor::Init(const Options& options) {
  // Newest flags first; older kernels refuse unknown flags with EINVAL.
  std::vector<unsigned> attempts;
  const unsigned base = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
  if (options.prefer_defer_taskrun) {
    attempts.push_back(base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
  }
  attempts.push_back(base | IORING_SETUP_COOP_TASKRUN);
  attempts.push_back(IORING_SETUP_CQSIZE);
  attempts.push_back(0);
  int ret = -EINVAL;
  unsigned used = 0;
  for (const unsigned flags : attempts) {
    io_uring_params params{};
    params.flags = flags;
    params.cq_entries = options.cq_entries;
    ret = io_uring_queue_init_params(options.sq_entries, &ring_, &params);
    if (ret == 0) {
      used = flags;
      features_.cqe_skip =
          options.use_cqe_skip && (params.features & IORING_FEAT_CQE_SKIP) != 0;
      if ((params.features & IORING_FEAT_NODROP) == 0) {
        io_uring_queue_exit(&ring_);
        return absl::FailedPreconditionError(
            "io_uring lacks IORING_FEAT_NODROP (kernel 5.5): completions could be lost");
      }
      break;
    }
    if (ret != -EINVAL) break;
  }
  if (ret < 0) return SetupError(-ret);
  ring_ready_ = true;
  features_.single_issuer = (used & IORING_SETUP_SINGLE_ISSUER) != 0;
  features_.defer_taskrun = (used & IORING_SETUP_DEFER_TASKRUN) != 0;
  features_.coop_taskrun = (used & IORING_SETUP_COOP_TASKRUN) != 0;
  // Without DEFER_TASKRUN every completion wakes the waiter whatever it asked for, so a
  // batching wait would only add the window to each completion.
  if (features_.defer_taskrun && options.batch_window > absl::ZeroDuration()) {
    const int64_t ns = absl::ToInt64Nanoseconds(options.batch_window);
    batch_window_.tv_sec = ns / 1000000000;
    batch_window_.tv_nsec = ns % 1000000000;
    batching_ = true;
  }

  io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
  if (probe == nullptr) {
    return absl::FailedPreconditionError(
        "io_uring probe failed (IORING_REGISTER_PROBE, kernel 5.6): kernel too old for hotring");
  }
  std::vector<std::string> missing;
  for (const RequiredOp& op : kRequiredOps) {
    if (!io_uring_opcode_supported(probe, op.opcode)) missing.push_back(op.name);
  }
  features_.waitid = options.use_waitid && probe->last_op >= kOpWaitId &&
                     io_uring_opcode_supported(probe, kOpWaitId);
  // Multishot receive (6.0) and buffer rings (5.19) have no opcode of their own; SENDMSG_ZC
  // (6.1) is the closest probe-visible marker that both are present.
  features_.recv_multishot = io_uring_opcode_supported(probe, IORING_OP_SENDMSG_ZC);
  // A 64-bit process skips the file: its kernel has no high memory (io/high_memory.h).
  std::optional<std::string> meminfo;
  if (sizeof(void*) < 8) meminfo = ReadMeminfo();
  features_.high_memory = PinnedPagesMayBeHighMemory(meminfo, sizeof(void*));
  features_.buf_ring =
      features_.recv_multishot && options.use_buf_ring && !features_.high_memory;
  if (features_.recv_multishot && features_.high_memory) {
    LogInfo("io_uring: 32-bit kernel with high memory: buffers provided with "
            "IORING_OP_PROVIDE_BUFFERS, not a registered ring (which such kernels cannot "
            "read from high memory)");
  }
  io_uring_free_probe(probe);
  if (!missing.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("io_uring lacks opcodes hotring needs: ", absl::StrJoin(missing, ", "),
                     " (kernel too old)"));
  }
  slots_.resize(1);  // index 0 reserved
  return absl::OkStatus();
}

Reactor::~Reactor() {
  if (!ring_ready_) return;
  if (inbox_ != nullptr) {
    // Posts from now on are dropped; the items still held go with their last owner.
    inbox_->Close();
    remote_taken_.clear();
    remote_resuming_.clear();
    if (inbox_armed_) {
      io_uring_sqe* sqe = GetSqe();
      io_uring_prep_cancel64(sqe, kInboxUserData, 0);
      io_uring_sqe_set_data64(sqe, 0);
    }
  }
  for (uint32_t i = 1; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.op == nullptr) continue;
    if (slot.op->finished_) {
      FreeSlot(i);
    } else if (!slot.op->abandoned_) {
      Abandon(OpId{i, slot.generation});
    }
  }
  // Wait for the kernel to release every operation's storage; bounded so a wedged kernel
  // request cannot hang shutdown forever.
  for (int round = 0; (in_flight_ > 0 || inbox_armed_) && round < 1000; ++round) {
    __kernel_timespec ts{.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
    io_uring_cqe* cqe = nullptr;
    (void)io_uring_submit(&ring_);
    (void)io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
    Reap();
  }
  if (in_flight_ > 0 || inbox_armed_) {
    LogError("reactor: %d operations still in flight at shutdown; leaking their storage",
             in_flight_ + (inbox_armed_ ? 1 : 0));
    for (Slot& slot : slots_) (void)slot.op.release();
    // The inbox read's buffer is the inbox's: a late write into it must land in memory that
    // stays.
    if (inbox_armed_) (void)new std::shared_ptr<RemoteInbox>(std::move(inbox_));
  }
  io_uring_queue_exit(&ring_);
}

io_uring_sqe* Reactor::GetSqe() {
  for (;;) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe != nullptr) {
      ++unsubmitted_;
      return sqe;
    }
    // SQ full: hand the batch to the kernel and try again.
    const absl::Status status = SubmitPending(0);
    if (!status.ok()) LogError("reactor: submit failed: %s", status.ToString());
  }
}

absl::Status Reactor::SubmitPending(unsigned wait_for) {
  for (int attempt = 0;; ++attempt) {
    const int ret = wait_for > 0 ? io_uring_submit_and_wait(&ring_, wait_for)
                                 : io_uring_submit(&ring_);
    if (ret >= 0) {
      unsubmitted_ = 0;
      return absl::OkStatus();
    }
    if (ret == -EINTR) {
      if (wait_for > 0) return absl::OkStatus();  // a signal: let the loop look around
      continue;
    }
    if (ret == -EBUSY || ret == -EAGAIN) {
      if (ret == -EBUSY) ++cq_overflows_;
      // The CQ is full or overflowed: drain completions (queued for resumption, not lost)
      // so the kernel can post again, then retry.
      Reap();
      (void)io_uring_get_events(&ring_);
      Reap();
      // What the reaps found may be all a waiting loop waits for (the inbox's read, which is
      // re-armed only by RunOnce): let it run that rather than block.
      if (wait_for > 0 && (!ready_.empty() || inbox_fired_)) return absl::OkStatus();
      if (attempt < 1000) continue;
    }
    return ErrnoStatus("io_uring_submit", -ret);
  }
}

OpId Reactor::Submit(std::unique_ptr<Operation> op, std::coroutine_handle<> waiter) {
  uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& slot = slots_[index];
  const OpId id{index, slot.generation};
  op->waiter_ = waiter;
  Operation* const raw = op.get();
  slot.op = std::move(op);
  ++in_flight_;

  io_uring_sqe* sqe = GetSqe();
  raw->Prepare(sqe);
  io_uring_sqe_set_data64(sqe, id.user_data());
  if (raw->has_link_timeout_) {
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe* timeout_sqe = GetSqe();
    io_uring_prep_link_timeout(timeout_sqe, &raw->link_timeout_, 0);
    io_uring_sqe_set_data64(timeout_sqe, 0);
  }
  return id;
}

Operation* Reactor::Lookup(OpId id) {
  if (id.index == 0 || id.index >= slots_.size()) return nullptr;
  Slot& slot = slots_[id.index];
  if (slot.generation != id.generation) return nullptr;
  return slot.op.get();
}

void Reactor::SetWaiter(OpId id, std::coroutine_handle<> waiter) {
  Operation* const op = Lookup(id);
  if (op == nullptr) return;
  op->waiter_ = waiter;
  if (waiter && op->has_completion() && !op->queued_) {
    op->queued_ = true;
    ready_.push_back(id);
  }
}

std::unique_ptr<Operation> Reactor::Reclaim(OpId id) {
  Operation* const op = Lookup(id);
  if (op == nullptr) return nullptr;
  std::unique_ptr<Operation> owned = std::move(slots_[id.index].op);
  owned->waiter_ = nullptr;
  FreeSlot(id.index);
  return owned;
}

void Reactor::FreeSlot(uint32_t index) {
  Slot& slot = slots_[index];
  slot.op.reset();
  // Generations skip 0 and the all-ones value so no user_data is ever 0 or ~0.
  if (++slot.generation == 0xffffffffu) slot.generation = 1;
  free_slots_.push_back(index);
}

void Reactor::Abandon(OpId id) {
  Operation* const op = Lookup(id);
  if (op == nullptr) return;
  op->waiter_ = nullptr;
  while (op->has_completion()) op->Discard(op->TakeCompletion());
  if (op->finished_) {
    FreeSlot(id.index);
    return;
  }
  if (op->abandoned_) return;
  op->abandoned_ = true;
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_cancel64(sqe, id.user_data(), 0);
  io_uring_sqe_set_data64(sqe, 0);
  // Submit now: the caller may close the operation's fd next, and an SQE still sitting in the
  // SQ would then name whatever file reuses that number.
  const absl::Status status = SubmitPending(0);
  if (!status.ok()) LogError("reactor: cancel submit failed: %s", status.ToString());
}

void Reactor::Cancel(OpId id) {
  Operation* const op = Lookup(id);
  if (op == nullptr || op->finished_) return;
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_cancel64(sqe, id.user_data(), 0);
  io_uring_sqe_set_data64(sqe, 0);
}

void Reactor::QueueUntracked(absl::FunctionRef<void(io_uring_sqe*)> prepare) {
  io_uring_sqe* sqe = GetSqe();
  prepare(sqe);
  if (features_.cqe_skip) sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  io_uring_sqe_set_data64(sqe, kUntrackedUserData);
}

bool Reactor::QueueMadvise(void* addr, size_t length, int advice) {
  if (!features_.cqe_skip || length > UINT32_MAX) return false;
  QueueUntracked([&](io_uring_sqe* sqe) {
    io_uring_prep_madvise(sqe, addr, static_cast<off_t>(length), advice);
  });
  return true;
}

absl::StatusOr<std::shared_ptr<RemoteInbox>> Reactor::remote_inbox() {
  if (inbox_ == nullptr) {
    absl::StatusOr<std::shared_ptr<RemoteInbox>> made = RemoteInbox::Create();
    if (!made.ok()) return made.status();
    inbox_ = *std::move(made);
    ArmInbox();
  }
  return inbox_;
}

void Reactor::ArmInbox() {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_read(sqe, inbox_->fd(), inbox_->read_buffer(), sizeof(uint64_t), 0);
  io_uring_sqe_set_data64(sqe, kInboxUserData);
  inbox_armed_ = true;
}

void Reactor::TakeRemote() {
  inbox_fired_ = false;
  // Re-armed before taking: a post after TakeAll writes the eventfd, which this read sees.
  ArmInbox();
  remote_taken_.clear();
  inbox_->TakeAll(remote_taken_);
  remote_taken_count_ += remote_taken_.size();
  for (std::shared_ptr<RemoteItem>& item : remote_taken_) {
    ForgetRemote(*item);
    if (item->waiter_) remote_resuming_.push_back(std::move(item));
  }
  // The items nobody waits for any more are freed here (their tasks were dropped).
  remote_taken_.clear();
}

size_t Reactor::Reap() {
  size_t reaped = 0;
  if (io_uring_cq_has_overflow(&ring_)) ++cq_overflows_;
  for (;;) {
    unsigned head;
    unsigned count = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      Dispatch(cqe->user_data, cqe->res, cqe->flags);
      ++count;
    }
    if (count == 0) return reaped;
    // Advance before anything resumes: the CQ has room again as early as possible.
    io_uring_cq_advance(&ring_, count);
    completions_seen_ += count;
    reaped += count;
  }
}

void Reactor::Dispatch(uint64_t user_data, int32_t result, uint32_t flags) {
  if (user_data == 0) return;  // cancel and link-timeout CQEs
  if (user_data == kInboxUserData) {
    inbox_armed_ = false;
    if (result < 0 && result != -ECANCELED) {
      LogWarning("reactor: remote inbox read failed: %s", strerror(-result));
    }
    // Taken and re-armed once the round's completions are in (RunOnce), not while reaping.
    // Like the per-job reads it replaces, it is no producer's burst: no batching wait next.
    inbox_fired_ = true;
    round_unbatchable_ = true;
    return;
  }
  if (user_data == kUntrackedUserData) {
    // Our own bookkeeping (PROVIDE_BUFFERS recycling a buffer after each datagram): no sign of
    // a producer's burst, so it does not count towards batching the next wait.
    ++round_untracked_;
    if (result < 0) {
      ++untracked_failures_;
      LogWarning("reactor: untracked operation failed: %s", strerror(-result));
    }
    return;
  }
  const OpId id{static_cast<uint32_t>(user_data & 0xffffffffu),
                static_cast<uint32_t>(user_data >> 32)};
  Operation* const op = Lookup(id);
  if (op == nullptr) {
    LogDebug("reactor: CQE for stale user_data %#x (res %d)", user_data, result);
    return;
  }
  if (!op->batchable_) round_unbatchable_ = true;
  const bool final_cqe = (flags & IORING_CQE_F_MORE) == 0;
  if (final_cqe) {
    op->finished_ = true;
    --in_flight_;
  }
  if (op->abandoned_) {
    op->Discard(Completion{result, flags});
    if (final_cqe) FreeSlot(id.index);
    return;
  }
  op->completions_.push_back(Completion{result, flags});
  if (op->waiter_ && !op->queued_) {
    op->queued_ = true;
    ready_.push_back(id);
  }
}

size_t Reactor::ResumeReady() {
  size_t resumed = 0;
  while (!ready_.empty() || !remote_resuming_.empty()) {
    resuming_.swap(ready_);
    for (const OpId id : resuming_) {
      Operation* const op = Lookup(id);
      // The frame may have been destroyed by an earlier resumption in this batch.
      if (op == nullptr) continue;
      op->queued_ = false;
      const std::coroutine_handle<> waiter = std::exchange(op->waiter_, nullptr);
      if (!waiter) continue;
      waiter.resume();
      ++resumed;
    }
    resuming_.clear();
    // Remote items: held here until resumed; a waiter dropped by an earlier resumption in
    // this batch has cleared itself.
    std::vector<std::shared_ptr<RemoteItem>> items;
    items.swap(remote_resuming_);
    for (const std::shared_ptr<RemoteItem>& item : items) {
      const std::coroutine_handle<> waiter = std::exchange(item->waiter_, nullptr);
      if (!waiter) continue;
      waiter.resume();
      ++resumed;
    }
    items.clear();
    // Keep the larger buffer for the next batch.
    if (remote_resuming_.empty()) remote_resuming_.swap(items);
  }
  return resumed;
}

// Why batch: during coldplug every uevent's arrival wakes a thread sleeping in io_uring_enter
// with wait_nr 1, and it does so inside the writer's write() to sysfs: on a VM guest a
// cross-CPU wake-up costs several microseconds to the writer as well as to us, and the woken
// daemon then competes with the writer for the CPUs. Once a round shows that batchable
// completions come in numbers, waiting for many with a short deadline lets the kernel queue
// uevents without waking us; we take them in one batch at the deadline. Only producers that
// never wait for us qualify (Operation::set_batchable): a sender blocked on our full queue
// would sit out the window with us (measured: `bench events` 4x slower). Any other round goes
// back to waiting for one completion with no deadline: an idle loop never wakes on its own,
// and a lone completion after a quiet spell is handled at once.
absl::Status Reactor::WaitForBatch() {
  // Submit first and do not wait if anything is already there: an operation that completes
  // inline (a NOP) must not sit out the window.
  if (unsubmitted_ > 0) {
    const absl::Status status = SubmitPending(0);
    if (!status.ok()) return status;
  }
  if (io_uring_cq_ready(&ring_) > 0) return absl::OkStatus();
  ++batch_waits_;
  __kernel_timespec window = batch_window_;
  io_uring_cqe* cqe = nullptr;
  const int ret = io_uring_wait_cqes(&ring_, &cqe, kBatchCompletions, &window, nullptr);
  // -ETIME: the window ended; the kernel ran the deferred work before returning, so what
  // completed meanwhile is in the CQ. -EINTR: a signal, let the loop look around. -EBUSY:
  // the CQ overflowed; the caller reaps and the next wait flushes the overflow.
  if (ret >= 0 || ret == -ETIME || ret == -EINTR || ret == -EBUSY || ret == -EAGAIN) {
    return absl::OkStatus();
  }
  return ErrnoStatus("io_uring_wait_cqes", -ret);
}

absl::StatusOr<size_t> Reactor::RunOnce(bool block) {
  const unsigned wait_for = (block && ready_.empty() && !HasReadyNotifications() && !inbox_fired_ &&
                             (in_flight_ > 0 || remote_expected_ > 0))
                                ? 1
                                : 0;
  if (wait_for > 0 && busy_ && batching_) {
    const absl::Status status = WaitForBatch();
    if (!status.ok()) return status;
  } else if (unsubmitted_ > 0 || wait_for > 0 || features_.defer_taskrun) {
    // With DEFER_TASKRUN completions are only posted when we enter the kernel to get events.
    if (wait_for == 0 && features_.defer_taskrun) {
      const absl::Status status = SubmitPending(0);
      if (!status.ok()) return status;
      (void)io_uring_get_events(&ring_);
    } else {
      const absl::Status status = SubmitPending(wait_for);
      if (!status.ok()) return status;
    }
  }
  round_unbatchable_ = false;
  round_untracked_ = 0;
  const size_t reaped = Reap() - round_untracked_;
  if (inbox_fired_) TakeRemote();
  // A round that could have waited decides the next wait; one that ran ready work without
  // waiting only upgrades it. A round of nothing but our own bookkeeping (failed
  // QueueUntracked SQEs; on a kernel without IOSQE_CQE_SKIP_SUCCESS every one of them, which
  // complete inline as a batching wait submits them) says nothing about the producers: it
  // leaves the next wait as it was.
  const bool only_untracked = reaped == 0 && round_untracked_ > 0;
  if (reaped >= kBusyCompletions && !round_unbatchable_) {
    busy_ = true;
  } else if ((wait_for > 0 && !only_untracked) || round_unbatchable_) {
    busy_ = false;
  }
  size_t resumed = ResumeReady();
  // Notifications made by what just ran; they may submit more, which the next round sees.
  while (RunReadyNotifications()) {
    ++resumed;
    resumed += ResumeReady();
  }
  return resumed;
}

absl::Status Reactor::DriveUntilDone(std::coroutine_handle<> handle) {
  if (!handle) return absl::InvalidArgumentError("BlockOn: empty task");
  handle.resume();
  while (!handle.done()) {
    if (ready_.empty() && in_flight_ == 0 && unsubmitted_ == 0 && !HasReadyNotifications() &&
        remote_expected_ == 0 && remote_resuming_.empty()) {
      return absl::FailedPreconditionError(
          "BlockOn: the task is suspended but no operation is in flight to wake it");
    }
    const absl::StatusOr<size_t> resumed = RunOnce(/*block=*/true);
    if (!resumed.ok()) return resumed.status();
  }
  return absl::OkStatus();
}

absl::Status Reactor::BlockOn(Task<void> task) { return DriveUntilDone(task.handle()); }

absl::Status Reactor::BlockOn(Task<absl::Status> task) {
  const absl::Status status = DriveUntilDone(task.handle());
  if (!status.ok()) return status;
  return task.TakeResult();
}

}  // namespace hotring::io

#include "ipc/sysv_bench.h"

#include <sys/ipc.h>
#include <sys/msg.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/task_scope.h"
#include "io/ops.h"
#include "io/thread_wake.h"
#include "core/cpu.h"
#include "core/json.h"
#include "ipc/sysv_queue.h"
#include "ipc/worker_thread.h"

namespace hotring::ipc {
namespace {

// pmsg's DATASIZE. The payload carries a counter so every hop can be checked.
constexpr size_t kDataSize = 8;

struct Message {
  long mtype;
  char data[kDataSize];
};

enum class Phase : int { kWaiting, kRunning, kStopped };

// What the workers share with the reactor thread. Owned by SysvRun, outlives every worker.
struct Shared {
  std::atomic<Phase> phase{Phase::kWaiting};
  std::atomic<int> ready{0};
  std::atomic<int> finished{0};
  const io::ThreadWake* wake = nullptr;
};

// One worker's inputs and outputs; the worker writes `rounds` and `status` before it counts
// itself finished (release), and the reactor reads them after seeing that (acquire).
struct Slot {
  SysvWorkerResult result;
  absl::Status status;
};

bool QueueGone(int err) { return err == EIDRM || err == EINVAL; }

// `me` is a private copy of the worker's slot and `rounds` a local of the caller: the slots of
// different workers share cache lines, and a counter written there on every round would bounce
// between CPUs.
absl::Status WorkerLoop(Shared& shared, const SysvWorkerResult me, uint64_t& rounds) {
  if (me.cpu >= 0) HOTRING_RETURN_IF_ERROR(PinCurrentThread(me.cpu));
  shared.ready.fetch_add(1, std::memory_order_acq_rel);
  shared.wake->Notify();
  shared.phase.wait(Phase::kWaiting, std::memory_order_acquire);
  if (shared.phase.load(std::memory_order_acquire) != Phase::kRunning) return absl::OkStatus();

  const auto stopped = [&] {
    return shared.phase.load(std::memory_order_relaxed) != Phase::kRunning;
  };
  const auto gone_error = [&](const char* call) {
    return absl::AbortedError(absl::StrFormat(
        "%s: queue %d (pair %d) was removed while the benchmark ran", call, me.msqid, me.queue));
  };
  // mtype 2 travels from the sender to its partner, mtype 1 back (pmsg's convention).
  const long own_type = me.sender ? 2 : 1;
  const long wanted_type = me.sender ? 1 : 2;
  Message message{};
  uint64_t expected = me.sender ? 1 : 0;
  if (me.sender) {
    message.mtype = own_type;
    const uint64_t first = 0;
    std::memcpy(message.data, &first, sizeof(first));
    if (::msgsnd(me.msqid, &message, kDataSize, 0) != 0) {
      if (QueueGone(errno) && stopped()) return absl::OkStatus();
      if (QueueGone(errno)) return gone_error("msgsnd");
      return ErrnoStatus("msgsnd");
    }
  }
  while (!stopped()) {
    const ssize_t n = ::msgrcv(me.msqid, &message, kDataSize, wanted_type, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (QueueGone(errno) && stopped()) break;
      if (QueueGone(errno)) return gone_error("msgrcv");
      return ErrnoStatus("msgrcv");
    }
    uint64_t value;
    std::memcpy(&value, message.data, sizeof(value));
    if (static_cast<size_t>(n) != kDataSize || value != expected) {
      return absl::DataLossError(absl::StrFormat(
          "queue %d (pair %d): received %d bytes carrying %d, expected %d bytes carrying %d",
          me.msqid, me.queue, n, value, kDataSize, expected));
    }
    message.mtype = own_type;
    const uint64_t next = value + 1;
    std::memcpy(message.data, &next, sizeof(next));
    for (;;) {
      if (::msgsnd(me.msqid, &message, kDataSize, 0) == 0) break;
      if (errno == EINTR) continue;
      if (QueueGone(errno) && stopped()) return absl::OkStatus();
      if (QueueGone(errno)) return gone_error("msgsnd");
      return ErrnoStatus("msgsnd");
    }
    expected += 2;
    ++rounds;
  }
  return absl::OkStatus();
}

void WorkerMain(Shared* shared, Slot* slot) {
  uint64_t rounds = 0;
  slot->status = WorkerLoop(*shared, slot->result, rounds);
  slot->result.rounds = rounds;
  shared->finished.fetch_add(1, std::memory_order_acq_rel);
  shared->wake->Notify();
}

// Owns the queues, the worker threads and what they share. Its destructor is the cleanup of
// every exit path: stop, remove the queues (waking blocked workers with EIDRM), join.
class SysvRun {
 public:
  explicit SysvRun(const io::ThreadWake& wake) { shared_.wake = &wake; }
  SysvRun(const SysvRun&) = delete;
  SysvRun& operator=(const SysvRun&) = delete;
  ~SysvRun() {
    (void)Stop();
    threads_.clear();  // joins
  }

  absl::Status Create(const SysvBenchOptions& options, const std::vector<int>& cpus) {
    const int n = options.queues;
    slots_ = std::make_unique<Slot[]>(2 * n);
    queues_.reserve(n);
    for (int i = 0; i < n; ++i) {
      HOTRING_ASSIGN_OR_RETURN(SysvQueue queue, SysvQueue::Create());
      const int cpu = options.pin ? cpus[i % cpus.size()] : -1;
      for (const bool sender : {true, false}) {
        SysvWorkerResult& r = slots_[sender ? i : i + n].result;
        r.thread = sender ? i : i + n;
        r.queue = i;
        r.msqid = queue.id();
        r.cpu = cpu;
        r.sender = sender;
      }
      queues_.push_back(std::move(queue));
    }
    threads_.reserve(2 * n);
    for (int t = 0; t < 2 * n; ++t) {
      Shared* const shared = &shared_;
      Slot* const slot = &slots_[t];
      HOTRING_ASSIGN_OR_RETURN(WorkerThread thread,
                               WorkerThread::Start([shared, slot] { WorkerMain(shared, slot); }));
      threads_.push_back(std::move(thread));
    }
    return absl::OkStatus();
  }

  [[nodiscard]] int workers() const { return static_cast<int>(threads_.size()); }
  [[nodiscard]] int ready() const { return shared_.ready.load(std::memory_order_acquire); }
  [[nodiscard]] int finished() const { return shared_.finished.load(std::memory_order_acquire); }

  void Start() {
    shared_.phase.store(Phase::kRunning, std::memory_order_release);
    shared_.phase.notify_all();
  }

  // Idempotent. Returns the first queue-removal error.
  absl::Status Stop() {
    shared_.phase.store(Phase::kStopped, std::memory_order_release);
    shared_.phase.notify_all();
    absl::Status first;
    for (SysvQueue& queue : queues_) {
      const absl::Status status = queue.Remove();
      if (first.ok()) first = status;
    }
    return first;
  }

  void JoinAll() {
    for (WorkerThread& thread : threads_) thread.Join();
  }

  // After JoinAll().
  [[nodiscard]] const Slot& slot(int t) const { return slots_[t]; }

 private:
  Shared shared_;
  std::unique_ptr<Slot[]> slots_;
  std::vector<SysvQueue> queues_;
  std::vector<WorkerThread> threads_;
};

// Why the main loop should stop; written by the watcher tasks on the reactor thread.
struct StopRequest {
  bool requested = false;
  int signal = 0;
};

Task<void> StopAt(io::Reactor& reactor, MonoTime deadline, StopRequest* stop,
                  const io::ThreadWake* wake) {
  const absl::Status slept = co_await io::SleepUntil(reactor, deadline);
  (void)slept;  // a failed timer still ends the run rather than letting it run forever
  stop->requested = true;
  wake->Notify();
}

Task<void> StopOnSignal(io::Reactor& reactor, io::SignalFd* signals, StopRequest* stop,
                        const io::ThreadWake* wake) {
  const absl::StatusOr<int> signo = co_await signals->Next(reactor);
  if (!signo.ok()) co_return;  // no signal handling rather than a spurious stop
  stop->requested = true;
  stop->signal = *signo;
  wake->Notify();
}

}  // namespace

absl::Status ValidateSysvOptions(const SysvBenchOptions& options) {
  if (options.queues < 1 || options.queues > kSysvMaxQueues) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bench sysv: --queues must be 1..", kSysvMaxQueues, ", got ", options.queues));
  }
  if (options.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bench sysv: --seconds must be positive, got ", absl::ToDoubleSeconds(options.duration)));
  }
  if (options.duration > absl::Hours(24)) {
    return absl::InvalidArgumentError("bench sysv: --seconds must be at most one day");
  }
  return absl::OkStatus();
}

Task<absl::StatusOr<SysvBenchResult>> RunSysvBench(io::Reactor& reactor,
                                                   SysvBenchOptions options,
                                                   io::SignalFd* signals) {
  HOTRING_CO_RETURN_IF_ERROR(ValidateSysvOptions(options));
  HOTRING_CO_ASSIGN_OR_RETURN(const std::vector<int> cpus, AllowedCpus());
  HOTRING_CO_ASSIGN_OR_RETURN(const io::ThreadWake wake, io::ThreadWake::Create());
  StopRequest stop;
  // Declared after `wake` and `stop` (which the workers and watchers use), so destroyed first.
  TaskScope watchers;
  SysvRun run(wake);
  if (signals != nullptr) watchers.Spawn(StopOnSignal(reactor, signals, &stop, &wake));
  HOTRING_CO_RETURN_IF_ERROR(run.Create(options, cpus));

  // Start only once every worker is pinned and parked, so all pairs begin together.
  const int total = run.workers();
  while (run.ready() < total && run.finished() == 0 && !stop.requested) {
    HOTRING_CO_RETURN_IF_ERROR((co_await wake.Wait(reactor)).status());
  }
  const MonoTime start = MonoNow();
  MonoTime end = start;
  if (run.finished() == 0 && !stop.requested) {
    run.Start();
    watchers.Spawn(StopAt(reactor, start + options.duration, &stop, &wake));
    // A worker that ends before the stop has failed; end the run at once.
    while (!stop.requested && run.finished() == 0) {
      HOTRING_CO_RETURN_IF_ERROR((co_await wake.Wait(reactor)).status());
    }
    end = MonoNow();
  }
  const absl::Status removed = run.Stop();
  watchers.CancelAll();
  while (run.finished() < total) {
    HOTRING_CO_RETURN_IF_ERROR((co_await wake.Wait(reactor)).status());
  }
  run.JoinAll();

  SysvBenchResult result;
  result.queues = options.queues;
  result.requested_seconds = absl::ToDoubleSeconds(options.duration);
  result.elapsed_seconds = absl::ToDoubleSeconds(Since(start, end));
  result.interrupted_by = stop.signal;
  for (int t = 0; t < total; ++t) {
    const Slot& slot = run.slot(t);
    if (!slot.status.ok()) co_return slot.status;
    result.workers.push_back(slot.result);
    result.total += slot.result.rounds;
  }
  HOTRING_CO_RETURN_IF_ERROR(removed);
  co_return result;
}

std::string FormatSysvResult(const SysvBenchResult& result, bool json) {
  const int n = result.queues;
  if (json) {
    std::vector<std::string> workers;
    for (const SysvWorkerResult& w : result.workers) {
      workers.push_back(JsonObject()
                            .Int("thread", w.thread)
                            .Int("queue", w.queue)
                            .Int("cpu", w.cpu)
                            .Bool("sender", w.sender)
                            .Uint("rounds", w.rounds)
                            .Build());
    }
    JsonObject out;
    out.String("bench", "sysv")
        .Int("queues", n)
        .Int("threads", 2 * n)
        .Double("seconds", result.requested_seconds)
        .Double("elapsed_s", result.elapsed_seconds)
        .Raw("workers", absl::StrCat("[", absl::StrJoin(workers, ", "), "]"))
        .Uint("total", result.total)
        .Double("per_second", result.per_second())
        .Int("interrupted_by", result.interrupted_by);
    return out.Build() + "\n";
  }
  std::string out = absl::StrFormat("Using %d queues/cpus (%d threads) for %g seconds.\n", n,
                                    2 * n, result.requested_seconds);
  for (const SysvWorkerResult& w : result.workers) {
    absl::StrAppendFormat(&out, "thread %d: sysvmsg %8d type %d bound to %s\n", w.thread, w.msqid,
                          w.sender ? 1 : 0,
                          w.cpu >= 0 ? absl::StrCat("CPU ", w.cpu) : std::string("any CPU"));
  }
  out += "Result matrix:\n";
  for (int i = 0; i < n && static_cast<size_t>(i + n) < result.workers.size(); ++i) {
    absl::StrAppendFormat(&out, "  Thread %3d: %8d     %3d: %8d\n", i, result.workers[i].rounds,
                          i + n, result.workers[i + n].rounds);
  }
  absl::StrAppendFormat(&out, "Total: %d\n", result.total);
  absl::StrAppendFormat(&out, "Per second: %.0f (%.6f s measured)\n", result.per_second(),
                        result.elapsed_seconds);
  if (result.interrupted_by != 0) {
    absl::StrAppendFormat(&out, "Interrupted by signal %d: partial result\n",
                          result.interrupted_by);
  }
  return out;
}

}  // namespace hotring::ipc

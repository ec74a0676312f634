// TaskScope: a nursery that owns spawned tasks. Nothing runs detached: every spawned task is
// owned here until it finishes, is cancelled (its frame destroyed, cancelling its I/O), or the
// scope is destroyed.
#ifndef HOTRING_CORE_TASK_SCOPE_H_
#define HOTRING_CORE_TASK_SCOPE_H_

#include <coroutine>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "core/task.h"

namespace hotring {

// Owns a set of running Task<void>s. Spawned tasks start at once and run until their first
// suspension. Not thread-safe: one scope lives on one reactor thread.
class TaskScope {
 public:
  TaskScope() = default;
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;
  // Cancels whatever still runs.
  ~TaskScope();

  // Takes ownership of `task` and starts it.
  void Spawn(Task<void> task);

  // Tasks still running.
  [[nodiscard]] size_t size() const { return running_.size(); }
  [[nodiscard]] bool empty() const { return running_.empty(); }

  // Destroys every running task (their pending operations are cancelled). Must not be called
  // from inside one of this scope's own tasks. Wakes a pending Join().
  void CancelAll();

  // Awaitable that completes when no task is running. One joiner at a time.
  class JoinAwaiter {
   public:
    explicit JoinAwaiter(TaskScope* scope) : scope_(scope) {}
    JoinAwaiter(const JoinAwaiter&) = delete;
    JoinAwaiter& operator=(const JoinAwaiter&) = delete;
    ~JoinAwaiter();
    bool await_ready() const noexcept { return scope_->empty(); }
    void await_suspend(std::coroutine_handle<> h) noexcept;
    void await_resume() const noexcept {}

   private:
    TaskScope* scope_;
    bool waiting_ = false;
  };
  [[nodiscard]] JoinAwaiter Join() { return JoinAwaiter(this); }

 private:
  struct RunnerPromise;
  using RunnerHandle = std::coroutine_handle<RunnerPromise>;
  struct Runner {
    using promise_type = RunnerPromise;
    RunnerHandle handle;
  };
  static Runner Run(Task<void> task);
  // Called by a runner at its final suspension; returns what to resume next.
  std::coroutine_handle<> Finished(uint64_t id) noexcept;

  uint64_t next_id_ = 1;
  absl::flat_hash_map<uint64_t, RunnerHandle> running_;
  std::coroutine_handle<> joiner_ = nullptr;
};

}  // namespace hotring

#endif  // HOTRING_CORE_TASK_SCOPE_H_

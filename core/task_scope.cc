#include "core/task_scope.h"

#include <cstdlib>
#include <vector>

namespace hotring {

struct TaskScope::RunnerPromise {
  TaskScope* scope = nullptr;
  uint64_t id = 0;

  Runner get_return_object() noexcept { return Runner{RunnerHandle::from_promise(*this)}; }
  std::suspend_always initial_suspend() const noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(RunnerHandle self) noexcept {
      // Finished() destroys this frame (and this awaiter): read what we need first.
      TaskScope* const scope = self.promise().scope;
      const uint64_t id = self.promise().id;
      return scope->Finished(id);
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() const noexcept { return {}; }
  void return_void() const noexcept {}
  void unhandled_exception() const noexcept { std::abort(); }
};

TaskScope::Runner TaskScope::Run(Task<void> task) { co_await std::move(task); }

TaskScope::~TaskScope() { CancelAll(); }

void TaskScope::Spawn(Task<void> task) {
  const uint64_t id = next_id_++;
  const RunnerHandle handle = Run(std::move(task)).handle;
  handle.promise().scope = this;
  handle.promise().id = id;
  running_.emplace(id, handle);
  handle.resume();
}

std::coroutine_handle<> TaskScope::Finished(uint64_t id) noexcept {
  const auto it = running_.find(id);
  if (it != running_.end()) {
    const RunnerHandle handle = it->second;
    running_.erase(it);
    handle.destroy();
  }
  if (running_.empty() && joiner_) return std::exchange(joiner_, nullptr);
  return std::noop_coroutine();
}

void TaskScope::CancelAll() {
  // Destroying a frame never resumes another coroutine (awaiters only unregister), but it may
  // spawn nothing new either; loop in case a destructor did.
  while (!running_.empty()) {
    std::vector<RunnerHandle> handles;
    handles.reserve(running_.size());
    for (const auto& [id, handle] : running_) handles.push_back(handle);
    running_.clear();
    for (const RunnerHandle handle : handles) handle.destroy();
  }
  if (joiner_) std::exchange(joiner_, nullptr).resume();
}

TaskScope::JoinAwaiter::~JoinAwaiter() {
  if (waiting_ && scope_->joiner_) scope_->joiner_ = nullptr;
}

void TaskScope::JoinAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  waiting_ = true;
  scope_->joiner_ = h;
}

}  // namespace hotring

// Task<T>: a lazy, move-only coroutine. It starts when awaited and hands control back to its
// awaiter by symmetric transfer, so a chain of a million awaits needs no extra stack.
// Destroying a Task destroys its frame, and with it every operation the frame was awaiting
// (their destructors cancel them): dropping a task cancels its I/O.
#ifndef HOTRING_CORE_TASK_H_
#define HOTRING_CORE_TASK_H_

#include <coroutine>
#include <cstdlib>
#include <optional>
#include <utility>

namespace hotring {

template <typename T>
class Task;

namespace task_internal {

// Common part of every Task promise: who resumes when the task ends.
struct PromiseBase {
  std::coroutine_handle<> continuation;

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) noexcept {
      const std::coroutine_handle<> next = self.promise().continuation;
      return next ? next : std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };

  std::suspend_always initial_suspend() const noexcept { return {}; }
  FinalAwaiter final_suspend() const noexcept { return {}; }
  // Built with -fno-exceptions: nothing can be thrown, but the promise must name a handler.
  void unhandled_exception() const noexcept { std::abort(); }
};

template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <typename U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T TakeValue() { return std::move(*value); }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() const noexcept {}
  void TakeValue() const noexcept {}
};

}  // namespace task_internal

// A lazily started coroutine producing T. Owns its frame.
template <typename T = void>
class [[nodiscard]] Task {
 public:
  using promise_type = task_internal::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle handle) : handle_(handle) {}
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~Task() { Reset(); }

  [[nodiscard]] bool valid() const { return static_cast<bool>(handle_); }
  [[nodiscard]] bool done() const { return handle_ && handle_.done(); }

  // Destroys the frame (cancelling whatever it awaits).
  void Reset() {
    if (handle_) std::exchange(handle_, nullptr).destroy();
  }

  auto operator co_await() && noexcept {
    struct Awaiter {
      Handle handle;
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
        handle.promise().continuation = awaiting;
        return handle;
      }
      T await_resume() { return handle.promise().TakeValue(); }
    };
    return Awaiter{handle_};
  }

  // For drivers (BlockOn, TaskScope): start or resume the frame without an awaiter, and read
  // the value once done().
  void Start() { handle_.resume(); }
  T TakeResult() { return handle_.promise().TakeValue(); }
  Handle handle() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

namespace task_internal {
template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
}  // namespace task_internal

}  // namespace hotring

#endif  // HOTRING_CORE_TASK_H_

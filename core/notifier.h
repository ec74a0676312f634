// Notifier: lets tasks on one thread wait for "something changed" (a condition variable for
// coroutines). A waiter that is destroyed while waiting unregisters itself, so dropping a task
// that waits here is safe.
#ifndef HOTRING_CORE_NOTIFIER_H_
#define HOTRING_CORE_NOTIFIER_H_

#include <coroutine>
#include <cstddef>

namespace hotring {

// Owns the list of currently waiting coroutines (the waiters own their list nodes).
class Notifier {
 public:
  class Awaiter {
   public:
    explicit Awaiter(Notifier* notifier) : notifier_(notifier) {}
    Awaiter(const Awaiter&) = delete;
    Awaiter& operator=(const Awaiter&) = delete;
    ~Awaiter() { Unlink(); }
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept;
    void await_resume() noexcept { Unlink(); }

   private:
    friend class Notifier;
    void Unlink() noexcept;
    Notifier* notifier_;
    std::coroutine_handle<> handle_ = nullptr;
    Awaiter* prev_ = nullptr;
    Awaiter* next_ = nullptr;
    bool linked_ = false;
  };

  Notifier() = default;
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;
  ~Notifier();

  // Waits for the next NotifyOne/NotifyAll. Like a condition variable: re-check the condition.
  [[nodiscard]] Awaiter Wait() { return Awaiter(this); }

  // Resumes (inline) every coroutine waiting at the time of the call.
  void NotifyAll();
  // Resumes the longest-waiting coroutine, if any.
  void NotifyOne();

  [[nodiscard]] size_t waiters() const { return count_; }

 private:
  Awaiter* head_ = nullptr;
  Awaiter* tail_ = nullptr;
  size_t count_ = 0;
};

}  // namespace hotring

#endif  // HOTRING_CORE_NOTIFIER_H_

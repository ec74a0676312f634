// Notifier: lets tasks on one thread wait for "something changed" (a condition variable for
// coroutines). Notifying never resumes a waiter inline: it moves the waiter to this thread's
// ready list, which the event loop runs (RunReadyNotifications) once the notifier's caller has
// returned. Inline resumption would let a woken task destroy the very task that notified it
// (a stop request tearing down the receive loop that delivered it). A waiter destroyed while
// waiting or ready unlinks itself, so dropping such a task is safe.
#ifndef HOTRING_CORE_NOTIFIER_H_
#define HOTRING_CORE_NOTIFIER_H_

#include <coroutine>
#include <cstddef>

namespace hotring {

namespace notifier_internal {

struct WaiterList;

// The links of one waiter; a waiter is in at most one list (a notifier's, or the ready list).
struct WaiterNode {
  std::coroutine_handle<> handle = nullptr;
  WaiterNode* prev = nullptr;
  WaiterNode* next = nullptr;
  WaiterList* list = nullptr;
};

// An intrusive doubly-linked list of waiters. Borrows its nodes.
struct WaiterList {
  WaiterNode* head = nullptr;
  WaiterNode* tail = nullptr;
  size_t size = 0;
  void PushBack(WaiterNode* node);
  void Remove(WaiterNode* node);
};

}  // namespace notifier_internal

// Owns the list of currently waiting coroutines (the waiters own their list nodes).
class Notifier {
 public:
  class Awaiter : private notifier_internal::WaiterNode {
   public:
    explicit Awaiter(Notifier* notifier) : notifier_(notifier) {}
    Awaiter(const Awaiter&) = delete;
    Awaiter& operator=(const Awaiter&) = delete;
    ~Awaiter() { Unlink(); }
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept;
    void await_resume() noexcept { Unlink(); }

   private:
    void Unlink() noexcept;
    Notifier* notifier_;
  };

  Notifier() = default;
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;
  ~Notifier();

  // Waits for the next NotifyOne/NotifyAll. Like a condition variable: re-check the condition.
  [[nodiscard]] Awaiter Wait() { return Awaiter(this); }

  // Makes every coroutine waiting now ready to run.
  void NotifyAll();
  // Makes the longest-waiting coroutine, if any, ready to run.
  void NotifyOne();

  [[nodiscard]] size_t waiters() const { return waiting_.size; }

 private:
  notifier_internal::WaiterList waiting_;
};

// Resumes every ready waiter of this thread, including ones made ready meanwhile; returns
// whether any ran. The reactor's loop calls it; code without a reactor (tests) calls it itself.
bool RunReadyNotifications();
// True when a waiter of this thread is ready to run.
[[nodiscard]] bool HasReadyNotifications();

}  // namespace hotring

#endif  // HOTRING_CORE_NOTIFIER_H_

#include "core/notifier.h"

namespace hotring {

void Notifier::Awaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  handle_ = h;
  prev_ = notifier_->tail_;
  next_ = nullptr;
  if (notifier_->tail_ != nullptr) {
    notifier_->tail_->next_ = this;
  } else {
    notifier_->head_ = this;
  }
  notifier_->tail_ = this;
  ++notifier_->count_;
  linked_ = true;
}

void Notifier::Awaiter::Unlink() noexcept {
  if (!linked_) return;
  if (prev_ != nullptr) {
    prev_->next_ = next_;
  } else {
    notifier_->head_ = next_;
  }
  if (next_ != nullptr) {
    next_->prev_ = prev_;
  } else {
    notifier_->tail_ = prev_;
  }
  prev_ = next_ = nullptr;
  --notifier_->count_;
  linked_ = false;
}

Notifier::~Notifier() {
  while (head_ != nullptr) head_->Unlink();
}

void Notifier::NotifyOne() {
  if (head_ == nullptr) return;
  Awaiter* const first = head_;
  first->Unlink();
  first->handle_.resume();
}

void Notifier::NotifyAll() {
  // Waiters that re-wait while we resume go to the tail; the count keeps them for next time.
  for (size_t n = count_; n > 0 && head_ != nullptr; --n) NotifyOne();
}

}  // namespace hotring

#include "core/notifier.h"

namespace hotring {
namespace notifier_internal {

void WaiterList::PushBack(WaiterNode* node) {
  node->prev = tail;
  node->next = nullptr;
  if (tail != nullptr) {
    tail->next = node;
  } else {
    head = node;
  }
  tail = node;
  node->list = this;
  ++size;
}

void WaiterList::Remove(WaiterNode* node) {
  if (node->prev != nullptr) {
    node->prev->next = node->next;
  } else {
    head = node->next;
  }
  if (node->next != nullptr) {
    node->next->prev = node->prev;
  } else {
    tail = node->prev;
  }
  node->prev = node->next = nullptr;
  node->list = nullptr;
  --size;
}

}  // namespace notifier_internal

namespace {

// Ready waiters of this thread. Per thread because a coroutine never moves between threads
// here: each reactor thread runs its own.
notifier_internal::WaiterList& ReadyList() {
  thread_local notifier_internal::WaiterList ready;
  return ready;
}

}  // namespace

void Notifier::Awaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  handle = h;
  notifier_->waiting_.PushBack(this);
}

void Notifier::Awaiter::Unlink() noexcept {
  if (list != nullptr) list->Remove(this);
}

Notifier::~Notifier() {
  while (waiting_.head != nullptr) waiting_.Remove(waiting_.head);
}

void Notifier::NotifyOne() {
  notifier_internal::WaiterNode* const first = waiting_.head;
  if (first == nullptr) return;
  waiting_.Remove(first);
  ReadyList().PushBack(first);
}

void Notifier::NotifyAll() {
  while (waiting_.head != nullptr) NotifyOne();
}

bool RunReadyNotifications() {
  notifier_internal::WaiterList& ready = ReadyList();
  bool ran = false;
  while (ready.head != nullptr) {
    notifier_internal::WaiterNode* const node = ready.head;
    ready.Remove(node);
    ran = true;
    node->handle.resume();
  }
  return ran;
}

bool HasReadyNotifications() { return ReadyList().head != nullptr; }

}  // namespace hotring

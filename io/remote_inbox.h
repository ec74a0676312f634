// RemoteInbox: how threads other than a reactor's hand finished work back to it. A thread posts
// an item (a RemoteItem, shared with the task that waits for it); the reactor takes every item
// posted since it last looked, in one batch, and resumes the tasks still waiting for them. One
// eventfd per reactor, read through its ring: a post writes it only when the reactor has not
// been told already, so items finished close together cost one write and one wake-up between
// them, not one eventfd, one write and one read each.
//
// Ownership: the reactor and every posting thread share the inbox (a thread may post after the
// reactor is gone: the item is then dropped). The inbox owns posted items until the reactor
// takes them. Posting is thread-safe; everything else is the reactor's.
#ifndef HOTRING_IO_REMOTE_INBOX_H_
#define HOTRING_IO_REMOTE_INBOX_H_

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/unique_fd.h"

namespace hotring::io {

// Something a thread finishes for a task on a reactor. The thread publishes its result, then
// posts the item (RemoteInbox::Post marks it done first, with release order: a task that sees
// done() may read the result). The waiting task records itself with set_waiter and clears it if
// it is dropped first, on the reactor's thread.
class RemoteItem {
 public:
  RemoteItem() = default;
  RemoteItem(const RemoteItem&) = delete;
  RemoteItem& operator=(const RemoteItem&) = delete;
  virtual ~RemoteItem() = default;

  [[nodiscard]] bool done() const { return done_.load(std::memory_order_acquire); }
  // Reactor thread only: the coroutine to resume once the reactor takes the item (nullptr: none).
  void set_waiter(std::coroutine_handle<> waiter) { waiter_ = waiter; }
  [[nodiscard]] std::coroutine_handle<> waiter() const { return waiter_; }

 private:
  friend class RemoteInbox;
  friend class Reactor;
  std::atomic<bool> done_{false};
  std::coroutine_handle<> waiter_ = nullptr;
  bool expected_ = false;  // counted in its reactor's remote_expected() (reactor thread only)
};

class RemoteInbox {
 public:
  // A blocking eventfd (io_uring polls a blocking one on every kernel).
  static absl::StatusOr<std::shared_ptr<RemoteInbox>> Create();

  RemoteInbox(const RemoteInbox&) = delete;
  RemoteInbox& operator=(const RemoteInbox&) = delete;

  // Any thread: marks `item` done and hands it to the reactor, waking it unless it was woken
  // already and has not looked since. After Close, the item is dropped.
  void Post(std::shared_ptr<RemoteItem> item);

  // Reactor thread: moves the posted items to `out` (appended, in posting order); the next post
  // writes the eventfd again.
  void TakeAll(std::vector<std::shared_ptr<RemoteItem>>& out);
  // Reactor thread, when it goes: drops what is posted and everything posted later.
  void Close();

  [[nodiscard]] int fd() const { return fd_.get(); }
  // Reactor thread: where its eventfd read puts the count (the inbox's memory, so that it
  // lives as long as the read may).
  [[nodiscard]] uint64_t* read_buffer() { return &read_count_; }
  // Eventfd writes so far (tests: items finished together share one).
  [[nodiscard]] uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }
  // Items posted and not yet taken (tests).
  [[nodiscard]] size_t waiting() {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_.size();
  }

 private:
  explicit RemoteInbox(UniqueFd fd) : fd_(std::move(fd)) {}

  const UniqueFd fd_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<RemoteItem>> posted_;
  bool signalled_ = false;  // written since the reactor last took the items
  bool closed_ = false;
  std::atomic<uint64_t> wakes_{0};
  uint64_t read_count_ = 0;
};

}  // namespace hotring::io

#endif  // HOTRING_IO_REMOTE_INBOX_H_

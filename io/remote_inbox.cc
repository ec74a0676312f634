#include "io/remote_inbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "core/status.h"

namespace hotring::io {

absl::StatusOr<std::shared_ptr<RemoteInbox>> RemoteInbox::Create() {
  const int fd = ::eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return ErrnoStatus("eventfd");
  return std::shared_ptr<RemoteInbox>(new RemoteInbox(UniqueFd(fd)));
}

void RemoteInbox::Post(std::shared_ptr<RemoteItem> item) {
  item->done_.store(true, std::memory_order_release);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) {
      posted_.push_back(std::move(item));
      wake = !signalled_;
      signalled_ = true;
    }
  }
  // A closed inbox's item (possibly the last reference to a job and what it holds) is freed
  // here, outside the lock.
  item.reset();
  if (!wake) return;
  wakes_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t one = 1;
  // Fails only if the counter would overflow, which one write per reactor read cannot reach.
  while (::write(fd_.get(), &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

void RemoteInbox::TakeAll(std::vector<std::shared_ptr<RemoteItem>>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  signalled_ = false;
  if (out.empty()) {
    out.swap(posted_);
  } else {
    for (std::shared_ptr<RemoteItem>& item : posted_) out.push_back(std::move(item));
    posted_.clear();
  }
}

void RemoteInbox::Close() {
  std::vector<std::shared_ptr<RemoteItem>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    dropped.swap(posted_);
  }
}

}  // namespace hotring::io

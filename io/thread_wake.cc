#include "io/thread_wake.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "core/status.h"
#include "io/ops.h"

namespace hotring::io {

absl::StatusOr<ThreadWake> ThreadWake::Create() {
  // Blocking on purpose: io_uring polls a blocking eventfd on every kernel, while an O_NONBLOCK
  // one would fail the read with EAGAIN where the file lacks FMODE_NOWAIT.
  const int fd = ::eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return ErrnoStatus("eventfd");
  return ThreadWake(UniqueFd(fd));
}

void ThreadWake::Notify() const {
  const uint64_t one = 1;
  // Only fails if the counter would overflow (2^64 - 2 pending wakes) or the fd is gone.
  for (;;) {
    const ssize_t n = ::write(fd_.get(), &one, sizeof(one));
    if (n >= 0 || errno != EINTR) return;
  }
}

Task<absl::StatusOr<uint64_t>> ThreadWake::Wait(Reactor& reactor) const {
  BufferResult result = co_await Read(reactor, fd_.get(), Buffer(sizeof(uint64_t)));
  if (!result.bytes.ok()) co_return result.bytes.status();
  if (*result.bytes != sizeof(uint64_t)) co_return absl::InternalError("eventfd: short read");
  uint64_t count;
  std::memcpy(&count, result.buffer.data(), sizeof(count));
  co_return count;
}

}  // namespace hotring::io

#include "io/buffer_ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <cstring>

#include "core/log.h"
#include "core/status.h"

namespace hotring::io {

BufferRing::BufferRing(Reactor& reactor, uint16_t group_id, uint16_t count, uint32_t size)
    : reactor_(reactor), group_id_(group_id), count_(count), size_(size) {}

absl::StatusOr<std::shared_ptr<BufferRing>> BufferRing::Create(Reactor& reactor,
                                                               uint16_t group_id,
                                                               uint16_t count, uint32_t size) {
  if (count == 0 || (count & (count - 1)) != 0 || count > 32768) {
    return absl::InvalidArgumentError("buffer ring size must be a power of two <= 32768");
  }
  if (size == 0) return absl::InvalidArgumentError("buffer ring: zero buffer size");
  std::shared_ptr<BufferRing> ring(new BufferRing(reactor, group_id, count, size));
  ring->ring_bytes_ = sizeof(io_uring_buf) * count;
  void* mem = ::mmap(nullptr, ring->ring_bytes_, PROT_READ | PROT_WRITE,
                     MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (mem == MAP_FAILED) return ErrnoStatus("mmap(buffer ring)");
  ring->ring_ = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uintptr_t>(mem);
  reg.ring_entries = count;
  reg.bgid = group_id;
  const int ret = io_uring_register_buf_ring(reactor.ring(), &reg, 0);
  if (ret < 0) return ErrnoStatus("io_uring_register_buf_ring", -ret);
  ring->registered_ = true;
  io_uring_buf_ring_init(ring->ring_);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  ring->stride_ = (size + page - 1) / page * page;
  ring->storage_bytes_ = ring->stride_ * count;
  void* storage = ::mmap(nullptr, ring->storage_bytes_, PROT_READ | PROT_WRITE,
                         MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (storage == MAP_FAILED) return ErrnoStatus("mmap(buffer ring storage)");
  ring->storage_ = static_cast<char*>(storage);
  const int mask = io_uring_buf_ring_mask(count);
  for (uint16_t i = 0; i < count; ++i) {
    io_uring_buf_ring_add(ring->ring_, ring->storage_ + static_cast<size_t>(i) * ring->stride_,
                          size, i, mask, i);
  }
  io_uring_buf_ring_advance(ring->ring_, count);
  ring->available_ = count;
  return ring;
}

BufferRing::~BufferRing() {
  if (registered_) {
    const int ret = io_uring_unregister_buf_ring(reactor_.ring(), group_id_);
    if (ret < 0) LogWarning("io_uring_unregister_buf_ring(%d): %s", group_id_, strerror(-ret));
  }
  if (ring_ != nullptr) ::munmap(ring_, ring_bytes_);
  if (storage_ != nullptr) ::munmap(storage_, storage_bytes_);
}

absl::Span<char> BufferRing::Data(uint16_t buffer_id) {
  return absl::Span<char>(storage_ + static_cast<size_t>(buffer_id) * stride_, size_);
}

bool BufferRing::ReleaseMemory() {
  if (available_ != count_) return false;
  if (::madvise(storage_, storage_bytes_, MADV_DONTNEED) != 0) {
    LogWarning("madvise(buffer ring %d, MADV_DONTNEED): %s", group_id_, strerror(errno));
    return false;
  }
  return true;
}

void BufferRing::Recycle(uint16_t buffer_id) {
  io_uring_buf_ring_add(ring_, Data(buffer_id).data(), size_, buffer_id,
                        io_uring_buf_ring_mask(count_), 0);
  io_uring_buf_ring_advance(ring_, 1);
  ++available_;
}

}  // namespace hotring::io

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
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  ring->stride_ = (size + page - 1) / page * page;
  ring->storage_bytes_ = ring->stride_ * count;
  void* storage = ::mmap(nullptr, ring->storage_bytes_, PROT_READ | PROT_WRITE,
                         MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (storage == MAP_FAILED) return ErrnoStatus("mmap(buffer ring storage)");
  ring->storage_ = static_cast<char*>(storage);
  ring->available_ = count;
  if (reactor.features().buf_ring) {
    const absl::Status status = ring->Register();
    if (status.ok()) return ring;
    if (StatusErrno(status) != EINVAL) return status;
    // A kernel that refuses the ring's pages (high memory on 6.6 and later) or rings at all.
    LogInfo("buffer group %d: %s; providing its buffers with IORING_OP_PROVIDE_BUFFERS",
            group_id, status.message());
  }
  for (uint16_t i = 0; i < count; ++i) ring->Provide(i);
  return ring;
}

absl::Status BufferRing::Register() {
  ring_bytes_ = sizeof(io_uring_buf) * count_;
  void* mem = ::mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE,
                     MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (mem == MAP_FAILED) return ErrnoStatus("mmap(buffer ring)");
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uintptr_t>(mem);
  reg.ring_entries = count_;
  reg.bgid = group_id_;
  const int ret = io_uring_register_buf_ring(reactor_.ring(), &reg, 0);
  if (ret < 0) {
    ::munmap(mem, ring_bytes_);
    return ErrnoStatus("io_uring_register_buf_ring", -ret);
  }
  ring_ = static_cast<io_uring_buf_ring*>(mem);
  registered_ = true;
  io_uring_buf_ring_init(ring_);
  const int mask = io_uring_buf_ring_mask(count_);
  for (uint16_t i = 0; i < count_; ++i) {
    io_uring_buf_ring_add(ring_, storage_ + static_cast<size_t>(i) * stride_, size_, i, mask, i);
  }
  io_uring_buf_ring_advance(ring_, count_);
  return absl::OkStatus();
}

void BufferRing::Provide(uint16_t buffer_id) {
  char* const data = Data(buffer_id).data();
  reactor_.QueueUntracked([&](io_uring_sqe* sqe) {
    io_uring_prep_provide_buffers(sqe, data, static_cast<int>(size_), 1, group_id_, buffer_id);
  });
}

BufferRing::~BufferRing() {
  if (registered_) {
    const int ret = io_uring_unregister_buf_ring(reactor_.ring(), group_id_);
    if (ret < 0) LogWarning("io_uring_unregister_buf_ring(%d): %s", group_id_, strerror(-ret));
  } else if (storage_ != nullptr) {
    // The kernel still holds the addresses of the buffers it was given: take them back before
    // the memory goes, so no receive can ever write into whatever is mapped there next. Every
    // buffer is in the kernel's list now (no ProvidedBuffer outlives us) or queued to it ahead
    // of this SQE.
    const uint16_t group_id = group_id_;
    const int count = count_;
    reactor_.QueueUntracked(
        [&](io_uring_sqe* sqe) { io_uring_prep_remove_buffers(sqe, count, group_id); });
    const absl::Status status = reactor_.Flush();
    if (!status.ok()) LogWarning("buffer group %d: remove buffers: %s", group_id_, status.ToString());
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
  if (registered_) {
    io_uring_buf_ring_add(ring_, Data(buffer_id).data(), size_, buffer_id,
                          io_uring_buf_ring_mask(count_), 0);
    io_uring_buf_ring_advance(ring_, 1);
  } else {
    Provide(buffer_id);
  }
  ++available_;
}

}  // namespace hotring::io

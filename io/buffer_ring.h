// BufferRing: a group of provided buffers of a reactor's io_uring, from which multishot receives
// pick buffers: a registered provided-buffer ring where that is safe, else buffers provided one
// by one with IORING_OP_PROVIDE_BUFFERS. ProvidedBuffer: a lease on one buffer, returned to the
// group when dropped.
#ifndef HOTRING_IO_BUFFER_RING_H_
#define HOTRING_IO_BUFFER_RING_H_

#include <liburing.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "io/reactor.h"

namespace hotring::io {

// Owns the ring's shared memory and the buffers behind it. Shared (std::shared_ptr) between
// its user and the multishot operations using it, so the memory outlives every operation the
// kernel may still write through. Must be released before its Reactor.
//
// Two ways to hand buffers to the kernel, the same to the user (group id, buffer ids, Recycle):
// - a ring registered from our memory (IORING_REGISTER_PBUF_RING, kernel 5.19): recycling a
//   buffer is two stores, no system call. Used when Features::buf_ring.
// - IORING_OP_PROVIDE_BUFFERS (kernel 5.7): each buffer is given to the kernel by an SQE
//   (Reactor::QueueUntracked), which goes in with the next submission. Used on 32-bit kernels
//   with high memory, which oops (Debian's 6.1) or refuse with EINVAL (6.6 and later) when a
//   registered ring's page lies there (io/high_memory.h), and when registration fails with
//   EINVAL for any other reason. The kernel only keeps the buffers' addresses and writes them
//   with copy_to_user, which reaches high memory.
class BufferRing {
 public:
  // `count` must be a power of two (at most 32768); each buffer holds `size` bytes.
  static absl::StatusOr<std::shared_ptr<BufferRing>> Create(Reactor& reactor, uint16_t group_id,
                                                            uint16_t count, uint32_t size);
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;
  ~BufferRing();

  [[nodiscard]] uint16_t group_id() const { return group_id_; }
  [[nodiscard]] uint32_t buffer_size() const { return size_; }
  [[nodiscard]] uint16_t count() const { return count_; }
  [[nodiscard]] absl::Span<char> Data(uint16_t buffer_id);
  // Gives buffer `buffer_id` back to the kernel.
  void Recycle(uint16_t buffer_id);
  // Whether the buffers go through a registered ring (else IORING_OP_PROVIDE_BUFFERS).
  [[nodiscard]] bool registered() const { return registered_; }
  // Buffers currently lent to the kernel (not held by a consumer).
  [[nodiscard]] uint32_t available() const { return available_; }
  // A CQE handed buffer `buffer_id` to a consumer.
  void MarkTaken() { --available_; }

  // Gives the pages behind the buffers back to the kernel (MADV_DONTNEED: they read as zeros
  // and cost nothing until the kernel writes a datagram into them again); false, doing
  // nothing, while a consumer holds a buffer. A burst touches every buffer, and without this
  // the daemon kept them all resident for the rest of its life. The caller makes sure the
  // kernel is not filling a buffer and no completion naming one is unconsumed
  // (MultishotReceiver::ReleaseIdleMemory).
  bool ReleaseMemory();
  // Bytes of buffer storage (every buffer starts on a page; see stride_).
  [[nodiscard]] size_t storage_bytes() const { return storage_bytes_; }

 private:
  BufferRing(Reactor& reactor, uint16_t group_id, uint16_t count, uint32_t size);
  // Maps and registers ring_ and fills it (ring mode). A refusal is the kernel's errno as a
  // status (StatusErrno), EINVAL being the one Create falls back from.
  absl::Status Register();
  // Queues IORING_OP_PROVIDE_BUFFERS for one buffer (provide mode).
  void Provide(uint16_t buffer_id);
  Reactor& reactor_;
  uint16_t group_id_;
  uint16_t count_;
  uint32_t size_;
  io_uring_buf_ring* ring_ = nullptr;
  size_t ring_bytes_ = 0;
  // Anonymous pages of their own (mmap), not zeroed by us: the kernel fills a buffer before
  // anything reads it, and zero-filling touched every page at start-up (the netlink and
  // control rings, 1.1 MB, were most of the daemon's start-up CPU). Untouched pages cost
  // nothing until a datagram first lands in them, and ReleaseMemory can hand them back.
  char* storage_ = nullptr;
  size_t storage_bytes_ = 0;
  // Distance between buffers: `size` rounded up to whole pages, so a datagram smaller than a
  // page (nearly every uevent) touches one page of its buffer, not two.
  size_t stride_ = 0;
  uint32_t available_ = 0;
  bool registered_ = false;  // ring mode; else provide mode
};

// A lease on one buffer of a BufferRing, holding `length` valid bytes starting at `offset`.
class ProvidedBuffer {
 public:
  ProvidedBuffer() = default;
  ProvidedBuffer(std::shared_ptr<BufferRing> ring, uint16_t buffer_id, size_t length)
      : ring_(std::move(ring)), buffer_id_(buffer_id), length_(length) {}
  ProvidedBuffer(const ProvidedBuffer&) = delete;
  ProvidedBuffer& operator=(const ProvidedBuffer&) = delete;
  ProvidedBuffer(ProvidedBuffer&& other) noexcept
      : ring_(std::move(other.ring_)), buffer_id_(other.buffer_id_), length_(other.length_) {}
  ProvidedBuffer& operator=(ProvidedBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      ring_ = std::move(other.ring_);
      buffer_id_ = other.buffer_id_;
      length_ = other.length_;
    }
    return *this;
  }
  ~ProvidedBuffer() { Release(); }

  [[nodiscard]] absl::Span<char> bytes() const {
    return ring_ ? ring_->Data(buffer_id_).subspan(0, length_) : absl::Span<char>();
  }
  void Release() {
    if (ring_) {
      ring_->Recycle(buffer_id_);
      ring_.reset();
    }
  }

 private:
  std::shared_ptr<BufferRing> ring_;
  uint16_t buffer_id_ = 0;
  size_t length_ = 0;
};

}  // namespace hotring::io

#endif  // HOTRING_IO_BUFFER_RING_H_

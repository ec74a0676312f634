// MultishotReceiver: one armed multishot recvmsg on a socket, drawing buffers from a
// BufferRing, yielding one datagram per Next(). High-rate sockets (netlink, the control socket)
// use it so a burst costs one CQE per datagram and no SQE.
#ifndef HOTRING_IO_MULTISHOT_H_
#define HOTRING_IO_MULTISHOT_H_

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/task.h"
#include "io/buffer_ring.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::io {

// One datagram from a multishot receive. `payload` points into `buffer`.
struct Datagram {
  ProvidedBuffer buffer;
  absl::string_view payload;
  SocketAddress peer;
  std::optional<ucred> credentials;
  bool truncated = false;  // MSG_TRUNC: the datagram was larger than a ring buffer
};

// Storage of the multishot recvmsg operation (the msghdr template the kernel reads).
class MultishotRecvMsgOp final : public Operation {
 public:
  MultishotRecvMsgOp(int fd, std::shared_ptr<BufferRing> ring);
  void Prepare(io_uring_sqe* sqe) override;
  void Discard(const Completion& completion) override;
  [[nodiscard]] const msghdr& header() const { return msg_; }

 private:
  int fd_;
  std::shared_ptr<BufferRing> ring_;
  msghdr msg_{};
};

// Owns the armed operation (through the reactor) and re-arms it when the kernel ends it, for
// instance with ENOBUFS when every ring buffer is in use. Dropping it cancels the receive.
class MultishotReceiver {
 public:
  MultishotReceiver(Reactor& reactor, int fd, std::shared_ptr<BufferRing> ring)
      : reactor_(reactor), fd_(fd), ring_(std::move(ring)) {}
  MultishotReceiver(const MultishotReceiver&) = delete;
  MultishotReceiver& operator=(const MultishotReceiver&) = delete;
  ~MultishotReceiver();

  // The next datagram, or the socket's error. ResourceExhausted if the consumer holds every
  // ring buffer (nothing can be received until some are released).
  Task<absl::StatusOr<Datagram>> Next();

  // Times the kernel ended the multishot because the ring was empty (data stays queued in the
  // socket; it is not lost).
  [[nodiscard]] uint64_t ring_exhausted() const { return ring_exhausted_; }
  [[nodiscard]] uint64_t arms() const { return arms_; }

 private:
  void Arm();
  Reactor& reactor_;
  int fd_;
  std::shared_ptr<BufferRing> ring_;
  OpId id_;
  uint64_t ring_exhausted_ = 0;
  uint64_t arms_ = 0;
};

}  // namespace hotring::io

#endif  // HOTRING_IO_MULTISHOT_H_

// MultishotReceiver: one armed multishot recvmsg on a socket, drawing buffers from a
// BufferRing, yielding one datagram per Next(). High-rate sockets (netlink, the control socket)
// use it so a burst costs one CQE per datagram and no SQE.
#ifndef HOTRING_IO_MULTISHOT_H_
#define HOTRING_IO_MULTISHOT_H_

#include <sys/socket.h>

#include <coroutine>
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

// True for the status Next() returns when the socket's receive queue overran and the kernel
// dropped datagrams (recvmsg failed with ENOBUFS): ResourceExhausted carrying errno ENOBUFS
// (core/status.h StatusErrno). The receiver stays usable; call Next() again.
[[nodiscard]] bool IsSocketOverrun(const absl::Status& status);

// Owns the armed operation (through the reactor) and re-arms it when the kernel ends it, for
// instance with ENOBUFS when every ring buffer is in use. Dropping it cancels the receive.
//
// ENOBUFS is ambiguous in a multishot receive: the kernel ends the operation with -ENOBUFS both
// when the provided-buffer ring is empty (nothing lost: the datagrams stay queued in the socket)
// and when recvmsg itself reports an overrun (netlink: the kernel dropped messages). Both CQEs
// look alike (no buffer, no IORING_CQE_F_MORE). Next() tells them apart so:
//  - every ring buffer held by the consumer when the CQE is handled: the ring was empty when
//    the kernel tried (a buffer only reaches the consumer through an earlier CQE);
//  - otherwise the socket's drop counter (SO_MEMINFO, SK_MEMINFO_DROPS) decides: it grew since
//    the last overrun this receiver reported (or since the socket was created) -> overrun;
//    unchanged -> the ring ran empty and the consumer has released buffers since.
// The ring state alone cannot decide: a consumer that releases each datagram before asking for
// the next one has usually given buffers back by the time the ENOBUFS CQE is read.
class MultishotReceiver {
 public:
  MultishotReceiver(Reactor& reactor, int fd, std::shared_ptr<BufferRing> ring)
      : reactor_(reactor), fd_(fd), ring_(std::move(ring)) {}
  MultishotReceiver(const MultishotReceiver&) = delete;
  MultishotReceiver& operator=(const MultishotReceiver&) = delete;
  ~MultishotReceiver();

  // The next datagram, or the socket's error. A socket overrun is IsSocketOverrun() (reported
  // once per overrun; the next call re-arms). ResourceExhausted without an errno if the
  // consumer holds every ring buffer (nothing can be received until some are released).
  Task<absl::StatusOr<Datagram>> Next();

  // Next() for a caller that awaits at once: `co_await receiver.Receive()`. A completion the
  // kernel already queued (a burst arrives as one batch of CQEs) is taken without suspending
  // and without a coroutine frame; only waiting for the kernel runs Next(). Holds the result
  // or the waiting Next() task; dropping it (with the awaiting frame) cancels that wait.
  class [[nodiscard]] ReceiveAwaiter {
   public:
    explicit ReceiveAwaiter(MultishotReceiver& receiver) : receiver_(receiver) {}
    ReceiveAwaiter(const ReceiveAwaiter&) = delete;
    ReceiveAwaiter& operator=(const ReceiveAwaiter&) = delete;
    bool await_ready() { return receiver_.TryReceive(result_); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) {
      waiting_ = receiver_.Next();
      return std::move(waiting_).operator co_await().await_suspend(awaiting);
    }
    absl::StatusOr<Datagram> await_resume() {
      if (waiting_.valid()) return waiting_.TakeResult();
      return std::move(result_);
    }

   private:
    MultishotReceiver& receiver_;
    absl::StatusOr<Datagram> result_;
    Task<absl::StatusOr<Datagram>> waiting_;
  };
  ReceiveAwaiter Receive() { return ReceiveAwaiter(*this); }

  // Gives the ring's buffer pages back to the kernel (BufferRing::ReleaseMemory) when that is
  // safe, and says whether it did. Safe means no datagram can be lost or torn: the consumer
  // holds no buffer, no completion naming one is waiting to be read (reaped or not), and the
  // kernel cannot be writing into one now. The last holds only with DEFER_TASKRUN, where the
  // kernel runs the receive (and so fills buffers) inside this thread's io_uring_enter and
  // nowhere else; without it the pages stay.
  bool ReleaseIdleMemory();

  // Times the kernel ended the multishot because the ring was empty (data stays queued in the
  // socket; it is not lost).
  [[nodiscard]] uint64_t ring_exhausted() const { return ring_exhausted_; }
  [[nodiscard]] uint64_t arms() const { return arms_; }
  // Overruns reported by Next().
  [[nodiscard]] uint64_t socket_overruns() const { return socket_overruns_; }

 private:
  void Arm();
  // Consumes queued completions until one makes a result (a datagram or an error) and returns
  // true with it in `out`; false when there is none yet and the receive is armed.
  bool TryReceive(absl::StatusOr<Datagram>& out);
  // Whether the socket dropped datagrams since the last reported overrun (updates the mark).
  bool SocketDroppedSinceLastOverrun();
  Reactor& reactor_;
  int fd_;
  std::shared_ptr<BufferRing> ring_;
  OpId id_;
  uint64_t ring_exhausted_ = 0;
  uint64_t arms_ = 0;
  uint64_t socket_overruns_ = 0;
  uint32_t drops_reported_ = 0;  // SK_MEMINFO_DROPS at the last reported overrun
};

}  // namespace hotring::io

#endif  // HOTRING_IO_MULTISHOT_H_

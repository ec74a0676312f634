// io_uring operations the IPC benchmarks need beyond io/ops.h: a send of a buffer's prefix (so
// a receive buffer can be forwarded without shrinking it), accept, and a send linked to the
// receive that follows it, which puts "send request" and "receive reply" into one
// io_uring_enter with one completion: one system call per round trip where blocking sockets
// need two.
#ifndef HOTRING_IPC_RING_OPS_H_
#define HOTRING_IPC_RING_OPS_H_

#include <coroutine>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/unique_fd.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::ipc {

// IORING_OP_SEND of buffer[0, length). Owns the buffer until the CQE; gives it back whole.
class SendPrefixOp final : public io::Operation {
 public:
  SendPrefixOp(int fd, io::Buffer buffer, size_t length, int flags)
      : fd_(fd), buffer_(std::move(buffer)), length_(length), flags_(flags) {}
  void Prepare(io_uring_sqe* sqe) override;
  io::BufferResult TakeResult(const io::Completion& c);

 private:
  int fd_;
  io::Buffer buffer_;
  size_t length_;
  int flags_;
};

// IORING_OP_ACCEPT; the new socket is close-on-exec.
class AcceptOp final : public io::Operation {
 public:
  explicit AcceptOp(int fd) : fd_(fd) {}
  void Prepare(io_uring_sqe* sqe) override;
  // A connection accepted after its awaiter left is closed, not leaked.
  void Discard(const io::Completion& completion) override;
  absl::StatusOr<UniqueFd> TakeResult(const io::Completion& c);

 private:
  int fd_;
};

[[nodiscard]] io::OpAwaitable<AcceptOp> Accept(io::Reactor& reactor, int fd);

// Queues one IORING_OP_ASYNC_CANCEL (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL) per
// descriptor: every operation on them then completes with ECANCELED through the reactor as
// usual, and their awaiters resume. The cancel requests carry user_data 0, which the reactor
// ignores (its own convention for cancels), and go to the kernel with the reactor's next
// submission: hundreds of operations are cancelled in a few system calls, where dropping their
// awaiters would submit one cancel each.
void QueueCancelAllOn(io::Reactor& reactor, absl::Span<const int> fds);

// What a receive (optionally preceded by a linked send) gives back: the receive's byte count or
// the error, and both buffers.
struct Transfer {
  absl::StatusOr<size_t> received;
  io::Buffer receive_buffer;
  io::Buffer send_buffer;  // empty unless a send was linked
};

// IORING_OP_RECV into an owned buffer, optionally preceded by a SEND linked to it
// (IOSQE_IO_LINK) that posts no completion when it succeeds (IOSQE_CQE_SKIP_SUCCESS). Both go
// to the kernel in one submission and exactly one completion comes back: the receive's, or the
// send's failure (the kernel then drops the receive without a completion of its own). So a
// request/reply costs one io_uring_enter and one CQE. Both SQEs carry the operation's
// user_data, so cancelling the operation cancels whichever of the two is pending. The
// operation owns both buffers until that one completion.
class SendRecvOp final : public io::Operation {
 public:
  struct Send {
    int fd = -1;
    io::Buffer buffer;
    size_t length = 0;
    int flags = 0;
  };
  // `poll_first` (IORING_RECVSEND_POLL_FIRST) skips the first receive attempt: right when the
  // caller knows nothing can have arrived yet (the reply to a request not yet sent).
  SendRecvOp(std::optional<Send> send, int fd, io::Buffer buffer, int flags, bool poll_first)
      : send_(std::move(send)), fd_(fd), buffer_(std::move(buffer)), flags_(flags),
        poll_first_(poll_first) {}

  // Fills the send's SQE, which must come right before this operation's own in the ring. Its
  // user_data is set once the reactor has assigned the operation's.
  void PrepareSend(io_uring_sqe* sqe);
  [[nodiscard]] bool has_send() const { return send_.has_value(); }
  // No SQE was left for the send: the receive is replaced by a NOP and the result is an error.
  void FailSend() { send_unqueued_ = true; }

  void Prepare(io_uring_sqe* sqe) override;
  Transfer TakeResult(const io::Completion& c);

 private:
  std::optional<Send> send_;
  int fd_;
  io::Buffer buffer_;
  int flags_;
  bool poll_first_;
  bool send_unqueued_ = false;
};

// Awaitable for SendRecvOp: places the linked send's SQE, then submits the receive. Dropping it
// while suspended cancels the receive; the reactor keeps both buffers until the kernel is done.
class [[nodiscard]] SendRecvAwaitable {
 public:
  SendRecvAwaitable(io::Reactor& reactor, std::unique_ptr<SendRecvOp> op)
      : reactor_(&reactor), op_(std::move(op)) {}
  SendRecvAwaitable(const SendRecvAwaitable&) = delete;
  SendRecvAwaitable& operator=(const SendRecvAwaitable&) = delete;
  SendRecvAwaitable(SendRecvAwaitable&& other) noexcept
      : reactor_(other.reactor_), op_(std::move(other.op_)), id_(std::exchange(other.id_, {})) {}
  ~SendRecvAwaitable() {
    if (id_.valid()) reactor_->Abandon(id_);
  }

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h);
  Transfer await_resume();

 private:
  io::Reactor* reactor_;
  std::unique_ptr<SendRecvOp> op_;
  io::OpId id_;
};

// Sends buffer[0, length) on `send_fd`, then receives on `recv_fd` into `receive_buffer`.
[[nodiscard]] SendRecvAwaitable SendThenRecv(io::Reactor& reactor, int send_fd, io::Buffer buffer,
                                             size_t length, int send_flags, int recv_fd,
                                             io::Buffer receive_buffer, int recv_flags,
                                             bool poll_first);
// A plain receive with the same result type.
[[nodiscard]] SendRecvAwaitable RecvInto(io::Reactor& reactor, int fd, io::Buffer buffer,
                                         int flags, bool poll_first);

[[nodiscard]] inline io::OpAwaitable<SendPrefixOp> SendPrefix(io::Reactor& reactor, int fd,
                                                              io::Buffer buffer, size_t length,
                                                              int flags) {
  return io::OpAwaitable<SendPrefixOp>(
      reactor, std::make_unique<SendPrefixOp>(fd, std::move(buffer), length, flags));
}

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_RING_OPS_H_

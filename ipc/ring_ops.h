// io_uring operations the IPC benchmarks need beyond io/ops.h: a send of a buffer's prefix (so
// a receive buffer can be forwarded without shrinking it), accept, and StartedOp, which submits
// an operation now and awaits it later. StartedOp is what lets a ping-pong put "send request"
// and "receive reply" into one io_uring_enter: one system call per round trip where blocking
// sockets need two.
#ifndef HOTRING_IPC_RING_OPS_H_
#define HOTRING_IPC_RING_OPS_H_

#include <coroutine>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
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

// An operation submitted at construction (its SQE goes out with the reactor's next submission)
// and awaited later. Owns the operation's slot until awaited; dropping it unawaited cancels the
// operation like dropping any awaiting task would.
template <typename Op>
class [[nodiscard]] StartedOp {
 public:
  StartedOp(io::Reactor& reactor, std::unique_ptr<Op> op)
      : reactor_(&reactor), id_(reactor.Submit(std::move(op), nullptr)) {}
  StartedOp(const StartedOp&) = delete;
  StartedOp& operator=(const StartedOp&) = delete;
  StartedOp(StartedOp&& other) noexcept
      : reactor_(other.reactor_), id_(std::exchange(other.id_, {})) {}
  ~StartedOp() {
    if (id_.valid()) reactor_->Abandon(id_);
  }

  bool await_ready() const noexcept {
    const io::Operation* op = reactor_->Lookup(id_);
    return op != nullptr && op->has_completion();
  }
  void await_suspend(std::coroutine_handle<> h) { reactor_->SetWaiter(id_, h); }
  auto await_resume() {
    std::unique_ptr<io::Operation> base = reactor_->Reclaim(std::exchange(id_, {}));
    Op& op = static_cast<Op&>(*base);
    return op.TakeResult(op.TakeCompletion());
  }

 private:
  io::Reactor* reactor_;
  io::OpId id_;
};

[[nodiscard]] inline StartedOp<SendPrefixOp> StartSend(io::Reactor& reactor, int fd,
                                                       io::Buffer buffer, size_t length,
                                                       int flags) {
  return StartedOp<SendPrefixOp>(
      reactor, std::make_unique<SendPrefixOp>(fd, std::move(buffer), length, flags));
}

[[nodiscard]] inline io::OpAwaitable<SendPrefixOp> SendPrefix(io::Reactor& reactor, int fd,
                                                              io::Buffer buffer, size_t length,
                                                              int flags) {
  return io::OpAwaitable<SendPrefixOp>(
      reactor, std::make_unique<SendPrefixOp>(fd, std::move(buffer), length, flags));
}

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_RING_OPS_H_

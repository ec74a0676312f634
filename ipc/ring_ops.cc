#include "ipc/ring_ops.h"

#include <sys/socket.h>
#include <unistd.h>

namespace hotring::ipc {

void SendPrefixOp::Prepare(io_uring_sqe* sqe) {
  io_uring_prep_send(sqe, fd_, buffer_.data(), length_, flags_);
}

io::BufferResult SendPrefixOp::TakeResult(const io::Completion& c) {
  const absl::Status status = io::CompletionStatus("send", c, has_link_timeout());
  if (!status.ok()) return io::BufferResult{status, std::move(buffer_)};
  return io::BufferResult{static_cast<size_t>(c.result), std::move(buffer_)};
}

void AcceptOp::Prepare(io_uring_sqe* sqe) {
  io_uring_prep_accept(sqe, fd_, nullptr, nullptr, SOCK_CLOEXEC);
}

void AcceptOp::Discard(const io::Completion& completion) {
  if (completion.result >= 0) ::close(completion.result);
}

absl::StatusOr<UniqueFd> AcceptOp::TakeResult(const io::Completion& c) {
  const absl::Status status = io::CompletionStatus("accept", c, has_link_timeout());
  if (!status.ok()) return status;
  return UniqueFd(c.result);
}

io::OpAwaitable<AcceptOp> Accept(io::Reactor& reactor, int fd) {
  return io::OpAwaitable<AcceptOp>(reactor, std::make_unique<AcceptOp>(fd));
}

}  // namespace hotring::ipc

namespace hotring::ipc {

void SendRecvOp::PrepareSend(io_uring_sqe* sqe) {
  io_uring_prep_send(sqe, send_->fd, send_->buffer.data(), send_->length, send_->flags);
  sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
}

void SendRecvOp::Prepare(io_uring_sqe* sqe) {
  if (send_unqueued_) {
    io_uring_prep_nop(sqe);
    return;
  }
  io_uring_prep_recv(sqe, fd_, buffer_.data(), buffer_.size(), flags_);
  if (poll_first_) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
}

Transfer SendRecvOp::TakeResult(const io::Completion& c) {
  Transfer out;
  out.receive_buffer = std::move(buffer_);
  if (send_.has_value()) out.send_buffer = std::move(send_->buffer);
  if (send_unqueued_) {
    out.received = absl::ResourceExhaustedError("send: no submission queue entry left");
  } else if (c.result < 0) {
    out.received =
        io::CompletionStatus(send_.has_value() ? "send/recv" : "recv", c, has_link_timeout());
  } else {
    out.received = static_cast<size_t>(c.result);
  }
  return out;
}

void SendRecvAwaitable::await_suspend(std::coroutine_handle<> h) {
  io_uring_sqe* send_sqe = nullptr;
  if (op_->has_send()) {
    io_uring* const ring = reactor_->ring();
    // The send and the receive must sit next to each other in the ring for the link to join
    // them; make room for both first.
    if (io_uring_sq_space_left(ring) < 2) (void)io_uring_submit(ring);
    send_sqe = io_uring_sq_space_left(ring) >= 2 ? io_uring_get_sqe(ring) : nullptr;
    if (send_sqe != nullptr) {
      op_->PrepareSend(send_sqe);
    } else {
      op_->FailSend();
    }
  }
  // With room for two, Submit takes the very next SQE and does not submit yet, so the send's
  // SQE can still be given the operation's user_data.
  id_ = reactor_->Submit(std::move(op_), h);
  if (send_sqe != nullptr) io_uring_sqe_set_data64(send_sqe, id_.user_data());
}

Transfer SendRecvAwaitable::await_resume() {
  std::unique_ptr<io::Operation> base = reactor_->Reclaim(std::exchange(id_, {}));
  SendRecvOp& op = static_cast<SendRecvOp&>(*base);
  return op.TakeResult(op.TakeCompletion());
}

void QueueCancelAllOn(io::Reactor& reactor, absl::Span<const int> fds) {
  io_uring* const ring = reactor.ring();
  for (const int fd : fds) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (sqe == nullptr) {
      (void)io_uring_submit(ring);
      sqe = io_uring_get_sqe(ring);
      if (sqe == nullptr) continue;  // the kernel refused the batch; the awaiters still cancel
    }
    io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(sqe, 0);
  }
}

SendRecvAwaitable SendThenRecv(io::Reactor& reactor, int send_fd, io::Buffer buffer,
                               size_t length, int send_flags, int recv_fd,
                               io::Buffer receive_buffer, int recv_flags, bool poll_first) {
  return SendRecvAwaitable(
      reactor, std::make_unique<SendRecvOp>(
                   SendRecvOp::Send{send_fd, std::move(buffer), length, send_flags}, recv_fd,
                   std::move(receive_buffer), recv_flags, poll_first));
}

SendRecvAwaitable RecvInto(io::Reactor& reactor, int fd, io::Buffer buffer, int flags,
                           bool poll_first) {
  return SendRecvAwaitable(reactor, std::make_unique<SendRecvOp>(std::nullopt, fd,
                                                                 std::move(buffer), flags,
                                                                 poll_first));
}

}  // namespace hotring::ipc

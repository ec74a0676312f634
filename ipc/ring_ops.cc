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

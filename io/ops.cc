#include "io/ops.h"

#include <poll.h>
#include <sys/wait.h>

#include <cstring>

#include "core/status.h"

namespace hotring::io {
namespace {

constexpr int kOpWaitId = 50;  // IORING_OP_WAITID; newer than Debian 12's liburing headers
#ifndef P_PIDFD
constexpr idtype_t P_PIDFD = static_cast<idtype_t>(3);
#endif

__kernel_timespec ToKernel(absl::Duration d) {
  if (d < absl::ZeroDuration()) d = absl::ZeroDuration();
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  return __kernel_timespec{.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

}  // namespace

absl::Status CompletionStatus(const char* call, const Completion& completion,
                              bool had_link_timeout) {
  if (completion.result >= 0) return absl::OkStatus();
  if (completion.result == -ECANCELED && had_link_timeout) {
    return absl::DeadlineExceededError(std::string(call) + ": timed out");
  }
  return ErrnoStatus(call, -completion.result);
}

void NopOp::Prepare(io_uring_sqe* sqe) { io_uring_prep_nop(sqe); }
absl::Status NopOp::TakeResult(const Completion& c) {
  return CompletionStatus("nop", c, has_link_timeout());
}

void BufferOp::Prepare(io_uring_sqe* sqe) {
  switch (kind_) {
    case Kind::kRead:
      io_uring_prep_read(sqe, fd_, buffer_.data(), static_cast<unsigned>(buffer_.size()), arg_);
      return;
    case Kind::kWrite:
      io_uring_prep_write(sqe, fd_, buffer_.data(), static_cast<unsigned>(buffer_.size()), arg_);
      return;
    case Kind::kRecv:
      io_uring_prep_recv(sqe, fd_, buffer_.data(), buffer_.size(), static_cast<int>(arg_));
      return;
    case Kind::kSend:
      io_uring_prep_send(sqe, fd_, buffer_.data(), buffer_.size(), static_cast<int>(arg_));
      return;
  }
}

BufferResult BufferOp::TakeResult(const Completion& c) {
  static constexpr const char* kNames[] = {"read", "write", "recv", "send"};
  const absl::Status status = CompletionStatus(kNames[static_cast<int>(kind_)], c,
                                               has_link_timeout());
  if (!status.ok()) return BufferResult{status, std::move(buffer_)};
  return BufferResult{static_cast<size_t>(c.result), std::move(buffer_)};
}

RecvMsgOp::RecvMsgOp(int fd, Buffer buffer, int flags)
    : fd_(fd), flags_(flags), buffer_(std::move(buffer)) {}

void RecvMsgOp::Prepare(io_uring_sqe* sqe) {
  iov_ = iovec{buffer_.data(), buffer_.size()};
  msg_ = msghdr{};
  msg_.msg_name = &peer_;
  msg_.msg_namelen = sizeof(peer_);
  msg_.msg_iov = &iov_;
  msg_.msg_iovlen = 1;
  msg_.msg_control = control_;
  msg_.msg_controllen = sizeof(control_);
  io_uring_prep_recvmsg(sqe, fd_, &msg_, static_cast<unsigned>(flags_));
}

ReceivedMessage RecvMsgOp::TakeResult(const Completion& c) {
  ReceivedMessage out;
  const absl::Status status = CompletionStatus("recvmsg", c, has_link_timeout());
  out.buffer = std::move(buffer_);
  if (!status.ok()) {
    out.bytes = status;
    return out;
  }
  out.bytes = static_cast<size_t>(c.result);
  std::memcpy(&out.peer.storage, &peer_, sizeof(peer_));
  out.peer.length = msg_.msg_namelen;
  out.msg_flags = msg_.msg_flags;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg_); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg_, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS &&
        cmsg->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(cmsg), sizeof(cred));
      out.credentials = cred;
    } else if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
      // Never keep descriptors someone pushed at us: close them at once.
      const size_t n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
        ::close(fd);
      }
    }
  }
  return out;
}

SendMsgOp::SendMsgOp(int fd, Buffer data, std::optional<SocketAddress> destination, int flags)
    : fd_(fd), flags_(flags), data_(std::move(data)), destination_(std::move(destination)) {}

void SendMsgOp::Prepare(io_uring_sqe* sqe) {
  iov_ = iovec{data_.data(), data_.size()};
  msg_ = msghdr{};
  if (destination_.has_value()) {
    msg_.msg_name = &destination_->storage;
    msg_.msg_namelen = destination_->length;
  }
  msg_.msg_iov = &iov_;
  msg_.msg_iovlen = 1;
  io_uring_prep_sendmsg(sqe, fd_, &msg_, static_cast<unsigned>(flags_));
}

BufferResult SendMsgOp::TakeResult(const Completion& c) {
  const absl::Status status = CompletionStatus("sendmsg", c, has_link_timeout());
  if (!status.ok()) return BufferResult{status, std::move(data_)};
  return BufferResult{static_cast<size_t>(c.result), std::move(data_)};
}

void TimeoutOp::Prepare(io_uring_sqe* sqe) {
  io_uring_prep_timeout(sqe, &ts_, 0, absolute_ ? IORING_TIMEOUT_ABS : 0);
}

absl::Status TimeoutOp::TakeResult(const Completion& c) {
  if (c.result == -ETIME || c.result == 0) return absl::OkStatus();
  if (c.result == -ECANCELED) return absl::CancelledError("timeout cancelled");
  return ErrnoStatus("timeout", -c.result);
}

void PollOp::Prepare(io_uring_sqe* sqe) { io_uring_prep_poll_add(sqe, fd_, mask_); }

absl::StatusOr<unsigned> PollOp::TakeResult(const Completion& c) {
  const absl::Status status = CompletionStatus("poll_add", c, has_link_timeout());
  if (!status.ok()) return status;
  return static_cast<unsigned>(c.result);
}

void WaitIdOp::Prepare(io_uring_sqe* sqe) {
  // The layout liburing's io_uring_prep_waitid uses: fd = id, len = idtype,
  // file_index = options, addr2 = siginfo.
  io_uring_prep_rw(kOpWaitId, sqe, pidfd_, nullptr, static_cast<unsigned>(P_PIDFD), 0);
  sqe->file_index = WEXITED;
  sqe->addr2 = reinterpret_cast<uintptr_t>(&info_);
}

absl::StatusOr<siginfo_t> WaitIdOp::TakeResult(const Completion& c) {
  const absl::Status status = CompletionStatus("waitid", c, has_link_timeout());
  if (!status.ok()) return status;
  return info_;
}

void CancelOp::Prepare(io_uring_sqe* sqe) { io_uring_prep_cancel64(sqe, target_.user_data(), 0); }

absl::Status CancelOp::TakeResult(const Completion& c) {
  return CompletionStatus("async_cancel", c, false);
}

OpAwaitable<NopOp> Nop(Reactor& reactor) {
  return OpAwaitable<NopOp>(reactor, std::make_unique<NopOp>());
}
OpAwaitable<BufferOp> Read(Reactor& reactor, int fd, Buffer buffer, uint64_t offset) {
  return OpAwaitable<BufferOp>(
      reactor, std::make_unique<BufferOp>(BufferOp::Kind::kRead, fd, std::move(buffer), offset));
}
OpAwaitable<BufferOp> Write(Reactor& reactor, int fd, Buffer data, uint64_t offset) {
  return OpAwaitable<BufferOp>(
      reactor, std::make_unique<BufferOp>(BufferOp::Kind::kWrite, fd, std::move(data), offset));
}
OpAwaitable<BufferOp> Recv(Reactor& reactor, int fd, Buffer buffer, int flags) {
  return OpAwaitable<BufferOp>(
      reactor, std::make_unique<BufferOp>(BufferOp::Kind::kRecv, fd, std::move(buffer),
                                          static_cast<uint64_t>(flags)));
}
OpAwaitable<BufferOp> Send(Reactor& reactor, int fd, Buffer data, int flags) {
  return OpAwaitable<BufferOp>(
      reactor, std::make_unique<BufferOp>(BufferOp::Kind::kSend, fd, std::move(data),
                                          static_cast<uint64_t>(flags)));
}
OpAwaitable<RecvMsgOp> RecvMsg(Reactor& reactor, int fd, Buffer buffer, int flags) {
  return OpAwaitable<RecvMsgOp>(reactor,
                                std::make_unique<RecvMsgOp>(fd, std::move(buffer), flags));
}
OpAwaitable<SendMsgOp> SendMsg(Reactor& reactor, int fd, Buffer data,
                               std::optional<SocketAddress> destination, int flags) {
  return OpAwaitable<SendMsgOp>(
      reactor, std::make_unique<SendMsgOp>(fd, std::move(data), std::move(destination), flags));
}
OpAwaitable<TimeoutOp> Sleep(Reactor& reactor, absl::Duration duration) {
  return OpAwaitable<TimeoutOp>(reactor,
                                std::make_unique<TimeoutOp>(ToKernel(duration), false));
}
OpAwaitable<TimeoutOp> SleepUntil(Reactor& reactor, MonoTime deadline) {
  const timespec ts = ToTimespec(deadline);
  return OpAwaitable<TimeoutOp>(
      reactor, std::make_unique<TimeoutOp>(__kernel_timespec{ts.tv_sec, ts.tv_nsec}, true));
}
OpAwaitable<PollOp> Poll(Reactor& reactor, int fd, unsigned mask) {
  return OpAwaitable<PollOp>(reactor, std::make_unique<PollOp>(fd, mask));
}
OpAwaitable<WaitIdOp> WaitId(Reactor& reactor, int pidfd) {
  return OpAwaitable<WaitIdOp>(reactor, std::make_unique<WaitIdOp>(pidfd));
}
OpAwaitable<CancelOp> Cancel(Reactor& reactor, OpId target) {
  return OpAwaitable<CancelOp>(reactor, std::make_unique<CancelOp>(target));
}

ExitStatus ExitStatusFromSiginfo(const siginfo_t& info) {
  ExitStatus status;
  status.exited = info.si_code == CLD_EXITED;
  status.code = info.si_status;
  return status;
}

Task<absl::StatusOr<ExitStatus>> WaitForExit(Reactor& reactor, int pidfd) {
  if (reactor.features().waitid) {
    absl::StatusOr<siginfo_t> info = co_await WaitId(reactor, pidfd);
    if (!info.ok()) co_return info.status();
    co_return ExitStatusFromSiginfo(*info);
  }
  for (;;) {
    absl::StatusOr<unsigned> revents = co_await Poll(reactor, pidfd, POLLIN);
    if (!revents.ok()) co_return revents.status();
    siginfo_t info{};
    if (::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG) < 0) {
      co_return ErrnoStatus("waitid(P_PIDFD)");
    }
    if (info.si_pid != 0) co_return ExitStatusFromSiginfo(info);
  }
}

}  // namespace hotring::io

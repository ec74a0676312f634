// Awaitable io_uring operations. Each owns every buffer and address the kernel may touch until
// its CQE arrives, and hands the buffer back with the result (the tokio-uring shape), so a
// dropped task can never leave the kernel writing into freed memory.
#ifndef HOTRING_IO_OPS_H_
#define HOTRING_IO_OPS_H_

#include <linux/time_types.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/task.h"
#include "io/reactor.h"

namespace hotring::io {

using Buffer = std::vector<char>;

// Result of an operation that carried a buffer: the byte count (or error) and the buffer back.
struct BufferResult {
  absl::StatusOr<size_t> bytes;
  Buffer buffer;
};

// A socket address of any family, owned.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  [[nodiscard]] const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// Result of RecvMsg: bytes (or error), the buffer, the sender's address and credentials
// (SCM_CREDENTIALS, present when the socket has SO_PASSCRED), and the kernel's msg_flags.
struct ReceivedMessage {
  absl::StatusOr<size_t> bytes;
  Buffer buffer;
  SocketAddress peer;
  std::optional<ucred> credentials;
  int msg_flags = 0;
  [[nodiscard]] bool truncated() const { return (msg_flags & MSG_TRUNC) != 0; }
};

// Maps an operation's CQE result to a Status: -ECANCELED after a link timeout becomes
// DeadlineExceeded.
absl::Status CompletionStatus(const char* call, const Completion& completion,
                              bool had_link_timeout);

class NopOp final : public Operation {
 public:
  void Prepare(io_uring_sqe* sqe) override;
  absl::Status TakeResult(const Completion& c);
};

// READ, WRITE, RECV, SEND on one owned buffer.
class BufferOp final : public Operation {
 public:
  enum class Kind { kRead, kWrite, kRecv, kSend };
  BufferOp(Kind kind, int fd, Buffer buffer, uint64_t offset_or_flags)
      : kind_(kind), fd_(fd), buffer_(std::move(buffer)), arg_(offset_or_flags) {}
  void Prepare(io_uring_sqe* sqe) override;
  BufferResult TakeResult(const Completion& c);

 private:
  Kind kind_;
  int fd_;
  Buffer buffer_;
  uint64_t arg_;
};

class RecvMsgOp final : public Operation {
 public:
  RecvMsgOp(int fd, Buffer buffer, int flags);
  void Prepare(io_uring_sqe* sqe) override;
  ReceivedMessage TakeResult(const Completion& c);

 private:
  int fd_;
  int flags_;
  Buffer buffer_;
  iovec iov_{};
  msghdr msg_{};
  sockaddr_storage peer_{};
  alignas(cmsghdr) char control_[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(4 * sizeof(int))]{};
};

class SendMsgOp final : public Operation {
 public:
  SendMsgOp(int fd, Buffer data, std::optional<SocketAddress> destination, int flags);
  void Prepare(io_uring_sqe* sqe) override;
  BufferResult TakeResult(const Completion& c);

 private:
  int fd_;
  int flags_;
  Buffer data_;
  std::optional<SocketAddress> destination_;
  iovec iov_{};
  msghdr msg_{};
};

class TimeoutOp final : public Operation {
 public:
  TimeoutOp(__kernel_timespec ts, bool absolute) : ts_(ts), absolute_(absolute) {}
  void Prepare(io_uring_sqe* sqe) override;
  // OK when the time was reached; Cancelled if cancelled.
  absl::Status TakeResult(const Completion& c);

 private:
  __kernel_timespec ts_;
  bool absolute_;
};

class PollOp final : public Operation {
 public:
  PollOp(int fd, unsigned mask) : fd_(fd), mask_(mask) {}
  void Prepare(io_uring_sqe* sqe) override;
  absl::StatusOr<unsigned> TakeResult(const Completion& c);

 private:
  int fd_;
  unsigned mask_;
};

// IORING_OP_WAITID on a pidfd (kernel 6.7): reaps the child.
class WaitIdOp final : public Operation {
 public:
  explicit WaitIdOp(int pidfd) : pidfd_(pidfd) {}
  void Prepare(io_uring_sqe* sqe) override;
  absl::StatusOr<siginfo_t> TakeResult(const Completion& c);

 private:
  int pidfd_;
  siginfo_t info_{};
};

// Cancels the operation with the given id; OK if it was found.
class CancelOp final : public Operation {
 public:
  explicit CancelOp(OpId target) : target_(target) {}
  void Prepare(io_uring_sqe* sqe) override;
  absl::Status TakeResult(const Completion& c);

 private:
  OpId target_;
};

// The constructors of the awaitables: `co_await io::Recv(reactor, fd, std::move(buffer))`.
[[nodiscard]] OpAwaitable<NopOp> Nop(Reactor& reactor);
[[nodiscard]] OpAwaitable<BufferOp> Read(Reactor& reactor, int fd, Buffer buffer,
                                         uint64_t offset = ~0ull);
[[nodiscard]] OpAwaitable<BufferOp> Write(Reactor& reactor, int fd, Buffer data,
                                          uint64_t offset = ~0ull);
[[nodiscard]] OpAwaitable<BufferOp> Recv(Reactor& reactor, int fd, Buffer buffer, int flags = 0);
[[nodiscard]] OpAwaitable<BufferOp> Send(Reactor& reactor, int fd, Buffer data, int flags = 0);
[[nodiscard]] OpAwaitable<RecvMsgOp> RecvMsg(Reactor& reactor, int fd, Buffer buffer,
                                             int flags = 0);
[[nodiscard]] OpAwaitable<SendMsgOp> SendMsg(Reactor& reactor, int fd, Buffer data,
                                             std::optional<SocketAddress> destination,
                                             int flags = 0);
[[nodiscard]] OpAwaitable<TimeoutOp> Sleep(Reactor& reactor, absl::Duration duration);
[[nodiscard]] OpAwaitable<TimeoutOp> SleepUntil(Reactor& reactor, MonoTime deadline);
[[nodiscard]] OpAwaitable<PollOp> Poll(Reactor& reactor, int fd, unsigned mask);
[[nodiscard]] OpAwaitable<WaitIdOp> WaitId(Reactor& reactor, int pidfd);
[[nodiscard]] OpAwaitable<CancelOp> Cancel(Reactor& reactor, OpId target);

// How a child ended.
struct ExitStatus {
  bool exited = false;  // true: exit code; false: killed by signal
  int code = 0;         // exit code, or signal number
  [[nodiscard]] bool success() const { return exited && code == 0; }
};
ExitStatus ExitStatusFromSiginfo(const siginfo_t& info);

// Waits for the child behind `pidfd` to exit and reaps it: IORING_OP_WAITID where the kernel
// has it, else POLL_ADD on the pidfd then waitid(P_PIDFD, WNOHANG).
Task<absl::StatusOr<ExitStatus>> WaitForExit(Reactor& reactor, int pidfd);

}  // namespace hotring::io

#endif  // HOTRING_IO_OPS_H_

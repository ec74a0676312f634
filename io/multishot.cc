#include "io/multishot.h"

#include <linux/sock_diag.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace hotring::io {
namespace {

constexpr size_t kControlSpace = CMSG_SPACE(sizeof(ucred));

// Suspends until the operation has a completion; unregisters itself if destroyed first.
class CompletionAwaiter {
 public:
  CompletionAwaiter(Reactor& reactor, OpId id) : reactor_(reactor), id_(id) {}
  CompletionAwaiter(const CompletionAwaiter&) = delete;
  CompletionAwaiter& operator=(const CompletionAwaiter&) = delete;
  ~CompletionAwaiter() {
    if (waiting_) reactor_.SetWaiter(id_, nullptr);
  }
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    waiting_ = true;
    reactor_.SetWaiter(id_, h);
  }
  void await_resume() noexcept { waiting_ = false; }

 private:
  Reactor& reactor_;
  OpId id_;
  bool waiting_ = false;
};

}  // namespace

MultishotRecvMsgOp::MultishotRecvMsgOp(int fd, std::shared_ptr<BufferRing> ring)
    : fd_(fd), ring_(std::move(ring)) {
  // Uevents reach a netlink socket as multicasts, which the kernel drops (ENOBUFS) rather
  // than block on when our queue is full: their sender never waits for us, so the reactor may
  // let them pile up for its batch window (Reactor::Options::batch_window).
  int domain = 0;
  socklen_t length = sizeof(domain);
  if (::getsockopt(fd_, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 && domain == AF_NETLINK) {
    set_batchable(true);
  }
}

void MultishotRecvMsgOp::Prepare(io_uring_sqe* sqe) {
  msg_ = msghdr{};
  msg_.msg_namelen = sizeof(sockaddr_storage);
  msg_.msg_controllen = kControlSpace;
  io_uring_prep_recvmsg_multishot(sqe, fd_, &msg_, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = ring_->group_id();
}

void MultishotRecvMsgOp::Discard(const Completion& completion) {
  if ((completion.flags & IORING_CQE_F_BUFFER) != 0) {
    ring_->MarkTaken();
    ring_->Recycle(static_cast<uint16_t>(completion.flags >> IORING_CQE_BUFFER_SHIFT));
  }
}

bool IsSocketOverrun(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && StatusErrno(status) == ENOBUFS;
}

bool MultishotReceiver::SocketDroppedSinceLastOverrun() {
  uint32_t meminfo[SK_MEMINFO_VARS] = {};
  socklen_t length = sizeof(meminfo);
  if (::getsockopt(fd_, SOL_SOCKET, SO_MEMINFO, meminfo, &length) != 0 ||
      length < (SK_MEMINFO_DROPS + 1) * sizeof(uint32_t)) {
    return false;  // cannot tell: treat as ring exhaustion, as before this check existed
  }
  const uint32_t drops = meminfo[SK_MEMINFO_DROPS];
  if (drops == drops_reported_) return false;
  drops_reported_ = drops;
  return true;
}

MultishotReceiver::~MultishotReceiver() {
  if (id_.valid()) reactor_.Abandon(id_);
}

void MultishotReceiver::Arm() {
  id_ = reactor_.Submit(std::make_unique<MultishotRecvMsgOp>(fd_, ring_), nullptr);
  ++arms_;
}

bool MultishotReceiver::ReleaseIdleMemory() {
  if (!reactor_.features().defer_taskrun || reactor_.has_unreaped_completions()) return false;
  if (id_.valid()) {
    const Operation* const op = reactor_.Lookup(id_);
    if (op != nullptr && op->has_completion()) return false;
  }
  return ring_->ReleaseMemory();
}

Task<absl::StatusOr<Datagram>> MultishotReceiver::Next() {
  absl::StatusOr<Datagram> result;
  while (!TryReceive(result)) co_await CompletionAwaiter(reactor_, id_);
  co_return result;
}

bool MultishotReceiver::TryReceive(absl::StatusOr<Datagram>& out) {
  // Each ring buffer receives a header, the peer address and the control data before the
  // payload; a ring of smaller buffers could never hold a datagram.
  constexpr size_t kOverhead =
      sizeof(io_uring_recvmsg_out) + sizeof(sockaddr_storage) + kControlSpace;
  if (ring_->buffer_size() <= kOverhead) {
    out = absl::InvalidArgumentError(absl::StrCat(
        "multishot recvmsg needs ring buffers larger than ", kOverhead, " bytes"));
    return true;
  }
  for (;;) {
    if (!id_.valid()) {
      if (ring_->available() == 0) {
        out = absl::ResourceExhaustedError(
            "multishot receive: every ring buffer is held by the consumer");
        return true;
      }
      Arm();
    }
    Operation* const op = reactor_.Lookup(id_);
    if (!op->has_completion()) return false;
    const Completion c = op->TakeCompletion();
    auto* const recv = static_cast<MultishotRecvMsgOp*>(op);
    const msghdr header = recv->header();
    if (op->finished() && !op->has_completion()) {
      (void)reactor_.Reclaim(std::exchange(id_, {}));  // re-armed on the next call
    }
    if (c.result == -ENOBUFS) {
      // Ring exhaustion or socket overrun: see the class comment.
      if (ring_->available() == 0 || !SocketDroppedSinceLastOverrun()) {
        ++ring_exhausted_;
        continue;
      }
      ++socket_overruns_;
      out = ErrnoStatus("recvmsg(multishot): receive queue overrun, datagrams were dropped",
                        ENOBUFS);
      return true;
    }
    if (c.result < 0) {
      out = ErrnoStatus("recvmsg(multishot)", -c.result);
      return true;
    }
    if ((c.flags & IORING_CQE_F_BUFFER) == 0) {
      out = absl::InternalError("multishot recvmsg completion without a buffer");
      return true;
    }
    const auto buffer_id = static_cast<uint16_t>(c.flags >> IORING_CQE_BUFFER_SHIFT);
    ring_->MarkTaken();
    // Filled in place: a Datagram holds a whole sockaddr_storage, so it is not copied around.
    out = Datagram();
    Datagram& datagram = *out;
    datagram.buffer = ProvidedBuffer(ring_, buffer_id, static_cast<size_t>(c.result));
    msghdr msg = header;
    char* const base = ring_->Data(buffer_id).data();
    io_uring_recvmsg_out* const received = io_uring_recvmsg_validate(base, c.result, &msg);
    if (received == nullptr) {
      out = absl::InternalError("multishot recvmsg: malformed buffer");
      return true;
    }
    const socklen_t name_len = std::min<socklen_t>(received->namelen, msg.msg_namelen);
    std::memcpy(&datagram.peer.storage, io_uring_recvmsg_name(received), name_len);
    datagram.peer.length = name_len;
    datagram.truncated = (received->flags & MSG_TRUNC) != 0;
    for (cmsghdr* cmsg = io_uring_recvmsg_cmsg_firsthdr(received, &msg); cmsg != nullptr;
         cmsg = io_uring_recvmsg_cmsg_nexthdr(received, &msg, cmsg)) {
      if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS &&
          cmsg->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(cmsg), sizeof(cred));
        datagram.credentials = cred;
      }
    }
    datagram.payload = absl::string_view(
        static_cast<const char*>(io_uring_recvmsg_payload(received, &msg)),
        io_uring_recvmsg_payload_length(received, c.result, &msg));
    return true;
  }
}

}  // namespace hotring::io

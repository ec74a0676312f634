#include "io/netlink.h"

#include <linux/capability.h>
#include <linux/sock_diag.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/task.h"
#include "gtest/gtest.h"
#include "io/buffer_ring.h"
#include "io/multishot.h"
#include "io/reactor.h"

namespace hotring::io {
namespace {

// The kernel's uevent wire format: "ACTION@DEVPATH\0" then "KEY=VALUE\0" pairs.
std::string KernelUevent(absl::string_view action, absl::string_view devpath, uint64_t seqnum) {
  std::string out = absl::StrCat(action, "@", devpath);
  out.push_back('\0');
  for (const std::string& kv :
       {absl::StrCat("ACTION=", action), absl::StrCat("DEVPATH=", devpath),
        std::string("SUBSYSTEM=hotring_test"), absl::StrCat("SEQNUM=", seqnum)}) {
    out += kv;
    out.push_back('\0');
  }
  return out;
}

// Every test that touches netlink runs in a private network namespace: injected events never
// reach the host's listeners. The host's own kernel uevents still arrive (the kernel multicasts
// device uevents to every network namespace of the initial user namespace), so the tests pick
// their datagrams out by a DEVPATH prefix no real device has.
constexpr absl::string_view kTestDevpath = "/devices/virtual/hotring_netlink_test/";

void EnterPrivateNetns() {
  static const bool entered = [] {
    const bool ok = ::unshare(CLONE_NEWNET) == 0;
    EXPECT_TRUE(ok) << "unshare(CLONE_NEWNET): " << strerror(errno);
    return ok;
  }();
  ASSERT_TRUE(entered);
}

bool IsOurs(absl::string_view payload) {
  const size_t at = payload.find('@');
  return at != absl::string_view::npos && absl::StartsWith(payload.substr(at + 1), kTestDevpath);
}

// Kills the test (instead of hanging it) if a receive never completes.
class Watchdog {
 public:
  explicit Watchdog(unsigned seconds) { ::alarm(seconds); }
  ~Watchdog() { ::alarm(0); }
};

uint32_t SocketMeminfo(int fd, int index) {
  uint32_t meminfo[SK_MEMINFO_VARS] = {};
  socklen_t length = sizeof(meminfo);
  EXPECT_EQ(::getsockopt(fd, SOL_SOCKET, SO_MEMINFO, meminfo, &length), 0) << strerror(errno);
  return meminfo[index];
}

uint32_t PortId(int fd) {
  sockaddr_nl nl{};
  socklen_t length = sizeof(nl);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&nl), &length), 0);
  return nl.nl_pid;
}

SocketAddress NetlinkPeer(uint32_t pid, sa_family_t family = AF_NETLINK) {
  sockaddr_nl nl{};
  nl.nl_family = family;
  nl.nl_pid = pid;
  nl.nl_groups = 1;
  SocketAddress address;
  std::memcpy(&address.storage, &nl, sizeof(nl));
  address.length = sizeof(nl);
  return address;
}

std::unique_ptr<Reactor> MakeReactor() {
  absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create();
  EXPECT_TRUE(reactor.ok()) << reactor.status();
  return reactor.ok() ? std::move(*reactor) : nullptr;
}

// --- The origin check (pure) ---

TEST(NetlinkOriginTest, KernelPortWithoutCredentialsIsKernel) {
  EXPECT_EQ(CheckNetlinkOrigin(NetlinkPeer(0), std::nullopt), NetlinkOrigin::kKernel);
}

TEST(NetlinkOriginTest, KernelPortWithRootCredentialsIsKernel) {
  EXPECT_EQ(CheckNetlinkOrigin(NetlinkPeer(0), ucred{.pid = 0, .uid = 0, .gid = 0}),
            NetlinkOrigin::kKernel);
}

TEST(NetlinkOriginTest, UserspacePortIsRejectedEvenAsRoot) {
  const NetlinkOrigin origin =
      CheckNetlinkOrigin(NetlinkPeer(4242), ucred{.pid = 4242, .uid = 0, .gid = 0});
  EXPECT_EQ(origin, NetlinkOrigin::kNotKernel);
  EXPECT_EQ(NetlinkDropReason(origin), "not_kernel");
}

TEST(NetlinkOriginTest, KernelPortWithNonRootCredentialsIsRejected) {
  const NetlinkOrigin origin =
      CheckNetlinkOrigin(NetlinkPeer(0), ucred{.pid = 77, .uid = 1000, .gid = 1000});
  EXPECT_EQ(origin, NetlinkOrigin::kNotRoot);
  EXPECT_EQ(NetlinkDropReason(origin), "not_root");
}

TEST(NetlinkOriginTest, NonNetlinkOrShortAddressIsRejected) {
  EXPECT_EQ(CheckNetlinkOrigin(NetlinkPeer(0, AF_UNIX), std::nullopt), NetlinkOrigin::kNotKernel);
  SocketAddress empty;  // recvmsg reported no address at all
  EXPECT_EQ(CheckNetlinkOrigin(empty, std::nullopt), NetlinkOrigin::kNotKernel);
  SocketAddress short_address = NetlinkPeer(0);
  short_address.length = sizeof(sa_family_t);
  EXPECT_EQ(CheckNetlinkOrigin(short_address, std::nullopt), NetlinkOrigin::kNotKernel);
  EXPECT_EQ(NetlinkDropReason(NetlinkOrigin::kKernel), "");
}

TEST(NetlinkTest, GroupsOutsideOneToThirtyTwoAreRejected) {
  EXPECT_TRUE(absl::IsInvalidArgument(UeventGroupAddress(0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(UeventGroupAddress(33).status()));
  absl::StatusOr<SocketAddress> address = UeventGroupAddress(32);
  ASSERT_TRUE(address.ok());
  sockaddr_nl nl;
  std::memcpy(&nl, &address->storage, sizeof(nl));
  EXPECT_EQ(nl.nl_groups, 1u << 31);
  EXPECT_EQ(nl.nl_pid, 0u);
  EXPECT_TRUE(absl::IsInvalidArgument(OpenUeventListener({.group = 0}).status()));
}

// --- Sockets ---

TEST(NetlinkTest, ListenerIsCloexecBoundAndGetsTheForcedBuffer) {
  EnterPrivateNetns();
  constexpr int kAsked = 64 << 20;  // far above net.core.rmem_max on a stock system
  absl::StatusOr<UeventListener> listener = OpenUeventListener({.receive_buffer = kAsked});
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_NE(listener->port_id, 0u);
  EXPECT_EQ(listener->port_id, PortId(listener->fd.get()));
  EXPECT_TRUE(::fcntl(listener->fd.get(), F_GETFD) & FD_CLOEXEC);
  // Root has CAP_NET_ADMIN: SO_RCVBUFFORCE works and the kernel doubles the request.
  EXPECT_TRUE(listener->receive_buffer_forced);
  EXPECT_GE(listener->receive_buffer, kAsked);
  int passcred = 0;
  socklen_t length = sizeof(passcred);
  ASSERT_EQ(::getsockopt(listener->fd.get(), SOL_SOCKET, SO_PASSCRED, &passcred, &length), 0);
  EXPECT_EQ(passcred, 1);
}

// An inherited listener is taken over as it is (its port, its buffer, what it queued), made
// close-on-exec with credentials on; anything else is refused with the reason.
TEST(NetlinkTest, AdoptedListenerKeepsItsPortAndBufferAndAnythingElseIsRefused) {
  EnterPrivateNetns();
  absl::StatusOr<UeventListener> opened =
      OpenUeventListener({.receive_buffer = 8 << 20, .pass_credentials = false});
  ASSERT_TRUE(opened.ok()) << opened.status();
  const int fd = opened->fd.get();
  ASSERT_EQ(::fcntl(fd, F_SETFD, 0), 0);  // as inherited across exec
  const uint32_t port = opened->port_id;
  const int buffer = opened->receive_buffer;
  absl::StatusOr<UeventListener> adopted = AdoptUeventListener(std::move(opened->fd));
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ(adopted->fd.get(), fd);
  EXPECT_EQ(adopted->port_id, port);
  EXPECT_EQ(adopted->receive_buffer, buffer);
  EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
  int passcred = 0;
  socklen_t length = sizeof(passcred);
  ASSERT_EQ(::getsockopt(fd, SOL_SOCKET, SO_PASSCRED, &passcred, &length), 0);
  EXPECT_EQ(passcred, 1);

  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  ::close(pair[1]);
  absl::StatusOr<UeventListener> unix_socket = AdoptUeventListener(UniqueFd(pair[0]));
  EXPECT_TRUE(absl::IsInvalidArgument(unix_socket.status())) << unix_socket.status();
  EXPECT_NE(unix_socket.status().message().find("not a NETLINK_KOBJECT_UEVENT socket"),
            std::string::npos);
  // Bound to group 2, not the kernel's group 1.
  absl::StatusOr<UeventListener> group2 = OpenUeventListener({.group = 2});
  ASSERT_TRUE(group2.ok()) << group2.status();
  absl::StatusOr<UeventListener> wrong_group = AdoptUeventListener(std::move(group2->fd));
  EXPECT_NE(wrong_group.status().message().find("not bound to uevent group 1"), std::string::npos)
      << wrong_group.status();
  UniqueFd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(absl::IsInvalidArgument(AdoptUeventListener(std::move(file)).status()));
}

// Without CAP_NET_ADMIN, SO_RCVBUFFORCE fails with EPERM and SO_RCVBUF is used, capped at
// net.core.rmem_max; the size reported is what the kernel really gave.
TEST(NetlinkTest, ReceiveBufferFallsBackToRcvbufWithoutCapNetAdmin) {
  EnterPrivateNetns();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    __user_cap_data_struct data[2] = {};
    if (::syscall(SYS_capget, &header, data) != 0) _exit(10);
    data[CAP_NET_ADMIN / 32].effective &= ~(1u << (CAP_NET_ADMIN % 32));
    if (::syscall(SYS_capset, &header, data) != 0) _exit(11);
    absl::StatusOr<UniqueFd> fd = OpenUeventSender();
    if (!fd.ok()) _exit(12);
    constexpr int kAsked = 1 << 30;
    absl::StatusOr<ReceiveBuffer> got = SetReceiveBuffer(fd->get(), kAsked);
    if (!got.ok()) _exit(13);
    if (got->forced) _exit(14);
    if (got->bytes >= kAsked) _exit(15);  // rmem_max caps it (4 MiB or so)
    if (got->bytes <= 0) _exit(16);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A userspace socket can multicast kernel-format uevents to group 1 (as root, in its own
// network namespace); the reactor's multishot receive delivers them with the sender's port id
// and credentials, and the origin check rejects every one.
TEST(NetlinkTest, ForgedUeventsArriveThroughTheReactorAndFailTheOriginCheck) {
  EnterPrivateNetns();
  Watchdog watchdog(60);
  auto reactor = MakeReactor();
  ASSERT_NE(reactor, nullptr);
  absl::StatusOr<UeventListener> listener = OpenUeventListener({.receive_buffer = 4 << 20});
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<UniqueFd> sender = OpenUeventSender();
  ASSERT_TRUE(sender.ok()) << sender.status();

  constexpr int kEvents = 200;
  std::vector<std::string> sent;
  for (int i = 0; i < kEvents; ++i) {
    sent.push_back(KernelUevent("add", absl::StrCat(kTestDevpath, "dev", i), 1000 + i));
    ASSERT_TRUE(SendToGroup(sender->get(), kUeventKernelGroup, sent.back()).ok());
  }
  const uint32_t sender_port = PortId(sender->get());
  ASSERT_NE(sender_port, 0u);

  absl::StatusOr<std::shared_ptr<BufferRing>> ring = BufferRing::Create(*reactor, 7, 64, 4096);
  ASSERT_TRUE(ring.ok()) << ring.status();
  struct Seen {
    std::string payload;
    uint32_t nl_pid;
    std::optional<ucred> credentials;
    NetlinkOrigin origin;
  };
  std::vector<Seen> seen;
  auto receive = [&]() -> Task<absl::Status> {
    MultishotReceiver receiver(*reactor, listener->fd.get(), *ring);
    while (seen.size() < static_cast<size_t>(kEvents)) {
      absl::StatusOr<Datagram> datagram = co_await receiver.Next();
      if (!datagram.ok()) co_return datagram.status();
      if (!IsOurs(datagram->payload)) continue;  // a real device event of the host
      sockaddr_nl nl;
      std::memcpy(&nl, &datagram->peer.storage, sizeof(nl));
      seen.push_back(Seen{std::string(datagram->payload), nl.nl_pid, datagram->credentials,
                          CheckNetlinkOrigin(datagram->peer, datagram->credentials)});
    }
    co_return absl::OkStatus();
  };
  ASSERT_TRUE(reactor->BlockOn(receive()).ok());
  ring->reset();

  ASSERT_EQ(seen.size(), sent.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].payload, sent[i]) << i;
    EXPECT_EQ(seen[i].nl_pid, sender_port) << i;
    ASSERT_TRUE(seen[i].credentials.has_value()) << i;
    EXPECT_EQ(seen[i].credentials->pid, ::getpid()) << i;
    EXPECT_EQ(seen[i].credentials->uid, 0u) << i;
    EXPECT_EQ(seen[i].origin, NetlinkOrigin::kNotKernel) << i;
  }
}

// A burst into a tiny receive buffer overruns the socket: the receiver reports it once as a
// distinct status (not as ring exhaustion), then delivers what the socket still held, then
// goes on receiving new datagrams.
TEST(NetlinkTest, OverrunIsReportedOnceAndReceivingContinues) {
  EnterPrivateNetns();
  Watchdog watchdog(60);
  auto reactor = MakeReactor();
  ASSERT_NE(reactor, nullptr);
  absl::StatusOr<UeventListener> listener = OpenUeventListener({.receive_buffer = 1});
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int fd = listener->fd.get();
  absl::StatusOr<UniqueFd> sender = OpenUeventSender();
  ASSERT_TRUE(sender.ok()) << sender.status();

  constexpr int kBurst = 500;
  std::vector<std::string> sent;
  for (int i = 0; i < kBurst; ++i) {
    sent.push_back(KernelUevent("change", absl::StrCat(kTestDevpath, "burst", i), i));
    ASSERT_TRUE(SendToGroup(sender->get(), kUeventKernelGroup, sent.back()).ok());
  }
  ASSERT_GT(SocketMeminfo(fd, SK_MEMINFO_DROPS), 0u) << "the burst did not overrun the socket";
  const std::string after = KernelUevent("change", absl::StrCat(kTestDevpath, "after"), 9999);

  absl::StatusOr<std::shared_ptr<BufferRing>> ring = BufferRing::Create(*reactor, 8, 64, 4096);
  ASSERT_TRUE(ring.ok()) << ring.status();
  std::vector<absl::Status> errors;
  std::vector<std::string> got;
  uint64_t overruns = 0;
  uint64_t exhausted = 0;
  auto receive = [&]() -> Task<absl::Status> {
    MultishotReceiver receiver(*reactor, fd, *ring);
    bool after_sent = false;
    for (;;) {
      // Netlink drops everything while the socket is congested, until its queue is empty
      // again; only then is a new datagram sure to be queued.
      if (!errors.empty() && !after_sent && SocketMeminfo(fd, SK_MEMINFO_RMEM_ALLOC) == 0) {
        HOTRING_CO_RETURN_IF_ERROR(SendToGroup(sender->get(), kUeventKernelGroup, after));
        after_sent = true;
      }
      absl::StatusOr<Datagram> datagram = co_await receiver.Next();
      if (!datagram.ok()) {
        errors.push_back(datagram.status());
        if (!IsSocketOverrun(datagram.status()) || errors.size() > 1) break;
        continue;
      }
      if (!IsOurs(datagram->payload)) continue;
      got.emplace_back(datagram->payload);
      if (got.back() == after) break;
    }
    overruns = receiver.socket_overruns();
    exhausted = receiver.ring_exhausted();
    co_return absl::OkStatus();
  };
  ASSERT_TRUE(reactor->BlockOn(receive()).ok());
  ring->reset();

  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(IsSocketOverrun(errors[0])) << errors[0];
  EXPECT_EQ(StatusErrno(errors[0]), ENOBUFS);
  EXPECT_EQ(overruns, 1u);
  ASSERT_GE(got.size(), 2u);  // at least the head of the burst, and the one sent afterwards
  EXPECT_EQ(got.back(), after);
  // What survived is the head of the burst, in order; everything after it was dropped.
  EXPECT_LT(got.size() - 1, sent.size());
  for (size_t i = 0; i + 1 < got.size(); ++i) EXPECT_EQ(got[i], sent[i]) << i;
  (void)exhausted;
}

// The other ENOBUFS: a ring smaller than the backlog runs empty while the consumer releases
// each buffer before asking for the next. That loses nothing and must not look like an
// overrun, although by the time the CQE is read the ring has free buffers again.
TEST(NetlinkTest, EmptyBufferRingIsNotAnOverrun) {
  EnterPrivateNetns();
  Watchdog watchdog(60);
  auto reactor = MakeReactor();
  ASSERT_NE(reactor, nullptr);
  absl::StatusOr<UeventListener> listener = OpenUeventListener({.receive_buffer = 4 << 20});
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<UniqueFd> sender = OpenUeventSender();
  ASSERT_TRUE(sender.ok()) << sender.status();
  constexpr int kEvents = 100;
  std::vector<std::string> sent;
  for (int i = 0; i < kEvents; ++i) {
    sent.push_back(KernelUevent("add", absl::StrCat(kTestDevpath, "ring", i), i));
    ASSERT_TRUE(SendToGroup(sender->get(), kUeventKernelGroup, sent.back()).ok());
  }
  ASSERT_EQ(SocketMeminfo(listener->fd.get(), SK_MEMINFO_DROPS), 0u);

  absl::StatusOr<std::shared_ptr<BufferRing>> ring = BufferRing::Create(*reactor, 9, 2, 4096);
  ASSERT_TRUE(ring.ok()) << ring.status();
  std::vector<std::string> got;
  uint64_t overruns = 0;
  uint64_t exhausted = 0;
  absl::Status held_status;
  auto receive = [&]() -> Task<absl::Status> {
    MultishotReceiver receiver(*reactor, listener->fd.get(), *ring);
    while (got.size() < sent.size()) {
      absl::StatusOr<Datagram> datagram = co_await receiver.Next();
      if (!datagram.ok()) co_return datagram.status();
      if (IsOurs(datagram->payload)) got.emplace_back(datagram->payload);
    }  // each Datagram (and its buffer) is released at the end of its iteration
    overruns = receiver.socket_overruns();
    exhausted = receiver.ring_exhausted();
    // Holding both buffers: nothing more can be received; that is ResourceExhausted too, but
    // not an overrun. (The third datagram makes the kernel try, and fail, to pick a buffer.)
    for (int i = 1; i <= 3; ++i) {
      HOTRING_CO_RETURN_IF_ERROR(SendToGroup(sender->get(), kUeventKernelGroup,
                                             KernelUevent("add", kTestDevpath, i)));
    }
    absl::StatusOr<Datagram> first = co_await receiver.Next();
    HOTRING_CO_RETURN_IF_ERROR(first.status());
    absl::StatusOr<Datagram> second = co_await receiver.Next();
    HOTRING_CO_RETURN_IF_ERROR(second.status());
    absl::StatusOr<Datagram> third = co_await receiver.Next();
    held_status = third.status();
    co_return absl::OkStatus();
  };
  const absl::Status status = reactor->BlockOn(receive());
  ring->reset();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(got, sent);
  EXPECT_EQ(overruns, 0u);
  EXPECT_GE(exhausted, 1u) << "a 2-buffer ring never ran empty under a 100-datagram backlog";
  EXPECT_TRUE(absl::IsResourceExhausted(held_status)) << held_status;
  EXPECT_FALSE(IsSocketOverrun(held_status)) << held_status;
}

}  // namespace
}  // namespace hotring::io

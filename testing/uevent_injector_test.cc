#include "testing/uevent_injector.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hotplug/event_parser.h"
#include "io/netlink.h"

namespace hotring::testing {
namespace {

constexpr absl::string_view kPrefix = "/devices/virtual/hotring_injector_test/";

struct Received {
  std::string payload;
  io::SocketAddress peer;
  std::optional<ucred> credentials;
};

// Blocking receive with a bound (a broken injector fails the test instead of hanging it).
std::optional<Received> ReceiveOne(int fd, int flags = 0) {
  Received received;
  std::string buffer(16384, '\0');
  iovec iov{buffer.data(), buffer.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  msghdr msg{};
  msg.msg_name = &received.peer.storage;
  msg.msg_namelen = sizeof(received.peer.storage);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(fd, &msg, flags);
  if (n < 0) return std::nullopt;
  received.peer.length = msg.msg_namelen;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
      received.credentials = cred;
    }
  }
  received.payload.assign(buffer.data(), static_cast<size_t>(n));
  return received;
}

// The next datagram whose DEVPATH is one of ours (real device events of the host reach this
// namespace too), or nullopt after the socket's receive timeout.
std::optional<Received> ReceiveOurs(int fd) {
  for (;;) {
    std::optional<Received> received = ReceiveOne(fd);
    if (!received.has_value()) return std::nullopt;
    if (absl::StrContains(received->payload, absl::StrCat("@", kPrefix))) return received;
  }
}

io::UeventListener Listen(int receive_buffer = 8 << 20) {
  absl::StatusOr<io::UeventListener> listener =
      io::OpenUeventListener({.receive_buffer = receive_buffer});
  EXPECT_TRUE(listener.ok()) << listener.status();
  timeval timeout{.tv_sec = 10, .tv_usec = 0};
  EXPECT_EQ(::setsockopt(listener->fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)),
            0);
  return std::move(*listener);
}

uint32_t PeerPort(const io::SocketAddress& peer) {
  sockaddr_nl nl;
  std::memcpy(&nl, &peer.storage, sizeof(nl));
  return nl.nl_pid;
}

// Runs first (declaration order): it needs a listener in the namespace the test started in.
TEST(UeventInjectorTest, InjectedEventsStayInThePrivateNamespace) {
  absl::StatusOr<uint64_t> before = NetworkNamespaceId();
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<io::UeventListener> outside = io::OpenUeventListener({.receive_buffer = 0});
  ASSERT_TRUE(outside.ok()) << outside.status();

  ASSERT_TRUE(EnterPrivateNetworkNamespace().ok());
  absl::StatusOr<uint64_t> after = NetworkNamespaceId();
  ASSERT_TRUE(after.ok());
  ASSERT_NE(*before, *after) << "this test must run before any other enters the namespace";
  ASSERT_TRUE(EnterPrivateNetworkNamespace().ok());  // idempotent
  EXPECT_EQ(*NetworkNamespaceId(), *after);

  io::UeventListener inside = Listen();
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create();
  ASSERT_TRUE(injector.ok()) << injector.status();
  absl::StatusOr<hotplug::Event> event =
      MakeUevent("add", absl::StrCat(kPrefix, "isolated"), "hotring_test", 1);
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_TRUE(injector->Send(*event).ok());
  ASSERT_TRUE(ReceiveOurs(inside.fd.get()).has_value());
  // Multicast delivery happens inside sendto: whatever the outside listener was going to get
  // is queued already. Nothing of ours is.
  while (std::optional<Received> leaked = ReceiveOne(outside->fd.get(), MSG_DONTWAIT)) {
    EXPECT_FALSE(absl::StrContains(leaked->payload, kPrefix)) << "leaked to the host namespace";
  }
}

TEST(UeventInjectorTest, MakeUeventUsesTheKernelOrderAndValidates) {
  absl::StatusOr<hotplug::Event> event = MakeUevent(
      "add", "/devices/virtual/misc/x", "misc", 42, {{"MAJOR", "10"}, {"MINOR", "1"}});
  ASSERT_TRUE(event.ok()) << event.status();
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(event->env, (Env{{"ACTION", "add"},
                             {"DEVPATH", "/devices/virtual/misc/x"},
                             {"SUBSYSTEM", "misc"},
                             {"MAJOR", "10"},
                             {"MINOR", "1"},
                             {"SEQNUM", "42"}}));
  EXPECT_EQ(event->seqnum, 42u);
  EXPECT_FALSE(MakeUevent("add", "relative/path", "misc", 1).ok());
  EXPECT_FALSE(MakeUevent("add", "/devices/x", "misc", 1, {{"BAD KEY", "v"}}).ok());
}

TEST(UeventInjectorTest, EventsArriveInKernelFormatFromAUserspacePort) {
  ASSERT_TRUE(EnterPrivateNetworkNamespace().ok());
  io::UeventListener listener = Listen();
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create();
  ASSERT_TRUE(injector.ok()) << injector.status();
  EXPECT_EQ(injector->port_id(), 0u);  // not bound until the first send
  absl::StatusOr<hotplug::Event> event = MakeUevent(
      "change", absl::StrCat(kPrefix, "sda"), "block", 77, {{"DEVNAME", "sda"}});
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(injector->Send(*event).ok());
  ASSERT_NE(injector->port_id(), 0u);
  std::optional<Received> received = ReceiveOurs(listener.fd.get());
  ASSERT_TRUE(received.has_value());
  EXPECT_EQ(PeerPort(received->peer), injector->port_id());
  EXPECT_EQ(io::CheckNetlinkOrigin(received->peer, received->credentials),
            io::NetlinkOrigin::kNotKernel);
  absl::StatusOr<hotplug::Event> parsed = hotplug::ParseKernelUevent(received->payload);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->env, event->env);
  // Raw bytes go out as they are.
  ASSERT_TRUE(injector->SendRaw(absl::StrCat("x@", kPrefix, "raw")).ok());
  received = ReceiveOurs(listener.fd.get());
  ASSERT_TRUE(received.has_value());
  EXPECT_EQ(received->payload, absl::StrCat("x@", kPrefix, "raw"));
}

TEST(UeventInjectorTest, BurstArrivesCompleteAndInOrderWithABigEnoughBuffer) {
  ASSERT_TRUE(EnterPrivateNetworkNamespace().ok());
  io::UeventListener listener = Listen(256 << 20);
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create();
  ASSERT_TRUE(injector.ok());
  constexpr size_t kCount = 20000;
  absl::StatusOr<size_t> sent = injector->SendBurst(kCount, [](size_t i) {
    return *MakeUevent("add", absl::StrCat(kPrefix, "burst", i), "hotring_test", i + 1);
  });
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, kCount);
  for (size_t i = 0; i < kCount; ++i) {
    std::optional<Received> received = ReceiveOurs(listener.fd.get());
    ASSERT_TRUE(received.has_value()) << "lost at " << i << ": " << strerror(errno);
    absl::StatusOr<hotplug::Event> parsed = hotplug::ParseKernelUevent(received->payload);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(parsed->seqnum, i + 1);
  }
}

TEST(UeventInjectorTest, OtherGroupsReachOnlyTheirListeners) {
  ASSERT_TRUE(EnterPrivateNetworkNamespace().ok());
  absl::StatusOr<io::UeventListener> group5 = io::OpenUeventListener({.group = 5});
  ASSERT_TRUE(group5.ok());
  io::UeventListener group1 = Listen();
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create(5);
  ASSERT_TRUE(injector.ok());
  EXPECT_EQ(injector->group(), 5u);
  EXPECT_FALSE(UeventInjector::Create(33).ok());
  ASSERT_TRUE(injector->SendRaw(absl::StrCat("add@", kPrefix, "g5")).ok());
  std::optional<Received> received = ReceiveOne(group5->fd.get(), MSG_DONTWAIT);
  ASSERT_TRUE(received.has_value());
  EXPECT_EQ(received->payload, absl::StrCat("add@", kPrefix, "g5"));
  while (std::optional<Received> other = ReceiveOne(group1.fd.get(), MSG_DONTWAIT)) {
    EXPECT_FALSE(absl::StrContains(other->payload, "g5"));
  }
}

// The one way to produce an event with the kernel's origin in a test. Uses up one number of
// the host's uevent sequence (see the header), so only one event.
TEST(UeventInjectorTest, ThroughTheKernelArrivesFromPortZeroWithASeqnum) {
  ASSERT_TRUE(EnterPrivateNetworkNamespace().ok());
  io::UeventListener listener = Listen();
  absl::StatusOr<UeventInjector> injector = UeventInjector::Create();
  ASSERT_TRUE(injector.ok());
  absl::StatusOr<hotplug::Event> with_seqnum =
      MakeUevent("add", absl::StrCat(kPrefix, "k"), "hotring_test", 5);
  EXPECT_TRUE(absl::IsInvalidArgument(injector->SendThroughKernel(*with_seqnum)));
  absl::StatusOr<hotplug::Event> event =
      MakeUevent("add", absl::StrCat(kPrefix, "kernel"), "hotring_test", std::nullopt);
  ASSERT_TRUE(event.ok());
  const absl::Status status = injector->SendThroughKernel(*event);
  ASSERT_TRUE(status.ok()) << status;
  std::optional<Received> received = ReceiveOurs(listener.fd.get());
  ASSERT_TRUE(received.has_value());
  EXPECT_EQ(PeerPort(received->peer), 0u);
  ASSERT_TRUE(received->credentials.has_value());
  EXPECT_EQ(received->credentials->uid, 0u);
  EXPECT_EQ(io::CheckNetlinkOrigin(received->peer, received->credentials),
            io::NetlinkOrigin::kKernel);
  absl::StatusOr<hotplug::Event> parsed = hotplug::ParseKernelUevent(received->payload);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->devpath, event->devpath);
  ASSERT_TRUE(parsed->seqnum.has_value());
  EXPECT_GT(*parsed->seqnum, 0u);
}

}  // namespace
}  // namespace hotring::testing

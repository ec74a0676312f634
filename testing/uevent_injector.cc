#include "testing/uevent_injector.h"

#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "hotplug/event_parser.h"
#include "io/netlink.h"

namespace hotring::testing {
namespace {

// How long SendThroughKernel waits for the kernel's acknowledgement (it answers from inside
// sendto, so the ack is already queued; the bound only guards against a kernel that never
// acknowledges).
constexpr int kAckTimeoutMs = 5000;

std::atomic<bool> entered_private_netns{false};

}  // namespace

absl::Status EnterPrivateNetworkNamespace() {
  if (entered_private_netns.load()) return absl::OkStatus();
  if (::unshare(CLONE_NEWNET) != 0) return ErrnoStatus("unshare(CLONE_NEWNET)");
  entered_private_netns.store(true);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> NetworkNamespaceId() {
  struct stat st;
  if (::stat("/proc/thread-self/ns/net", &st) != 0) return ErrnoStatus("stat(/proc/thread-self/ns/net)");
  return static_cast<uint64_t>(st.st_ino);
}

absl::StatusOr<hotplug::Event> MakeUevent(
    absl::string_view action, absl::string_view devpath, absl::string_view subsystem,
    std::optional<uint64_t> seqnum,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  hotplug::EnvVars env;
  env.reserve(4 + extra.size());
  env.emplace_back("ACTION", std::string(action));
  env.emplace_back("DEVPATH", std::string(devpath));
  env.emplace_back("SUBSYSTEM", std::string(subsystem));
  // The kernel puts SEQNUM last, after the device's own variables; so do we.
  env.insert(env.end(), extra.begin(), extra.end());
  if (seqnum.has_value()) env.emplace_back("SEQNUM", absl::StrCat(*seqnum));
  return hotplug::EventFromEnv(std::move(env), hotplug::EventSource::kKernel);
}

absl::StatusOr<UeventInjector> UeventInjector::Create(uint32_t group) {
  HOTRING_RETURN_IF_ERROR(io::UeventGroupAddress(group).status());
  HOTRING_ASSIGN_OR_RETURN(UniqueFd fd, io::OpenUeventSender());
  return UeventInjector(std::move(fd), group);
}

absl::Status UeventInjector::Send(const hotplug::Event& event) {
  return SendRaw(hotplug::EncodeKernelUevent(event));
}

absl::Status UeventInjector::SendRaw(absl::string_view datagram) {
  return io::SendToGroup(fd_.get(), group_, datagram);
}

uint32_t UeventInjector::port_id() const {
  sockaddr_nl nl{};
  socklen_t length = sizeof(nl);
  if (::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&nl), &length) != 0) return 0;
  return nl.nl_pid;
}

absl::Status UeventInjector::SendThroughKernel(const hotplug::Event& event) {
  if (event.seqnum.has_value() || event.Get("SEQNUM").has_value()) {
    return absl::InvalidArgumentError(
        "SendThroughKernel: the kernel appends SEQNUM itself; the event must not carry one");
  }
  return SendRawThroughKernel(hotplug::EncodeKernelUevent(event));
}

absl::Status UeventInjector::SendRawThroughKernel(absl::string_view payload) {
  const uint32_t seq = ++next_sequence_;
  nlmsghdr header{};
  header.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + payload.size());
  // The kernel's handler wants a request (NLM_F_REQUEST) of a non-control type; NLM_F_ACK
  // makes it report its verdict.
  header.nlmsg_type = NLMSG_MIN_TYPE;
  header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  header.nlmsg_seq = seq;
  std::string datagram(NLMSG_HDRLEN, '\0');
  std::memcpy(datagram.data(), &header, sizeof(header));
  datagram.append(payload.data(), payload.size());
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;  // port 0, no group: unicast to the kernel's uevent socket
  for (;;) {
    const ssize_t sent = ::sendto(fd_.get(), datagram.data(), datagram.size(), 0,
                                  reinterpret_cast<const sockaddr*>(&kernel), sizeof(kernel));
    if (sent >= 0) break;
    if (errno == EINTR) continue;
    return ErrnoStatus("sendto(netlink uevent kernel socket)");
  }
  // Read acknowledgements until ours (an earlier call's may be left if it timed out).
  for (;;) {
    pollfd pfd{.fd = fd_.get(), .events = POLLIN, .revents = 0};
    const int ready = ::poll(&pfd, 1, kAckTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return ErrnoStatus("poll(netlink ack)");
    if (ready == 0) {
      return absl::DeadlineExceededError(
          "SendThroughKernel: no acknowledgement from the kernel (older than Linux 4.18?)");
    }
    alignas(nlmsghdr) char buffer[8192];
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus("recv(netlink ack)");
    if (static_cast<size_t>(n) < NLMSG_HDRLEN + sizeof(nlmsgerr)) continue;
    nlmsghdr reply;
    std::memcpy(&reply, buffer, sizeof(reply));
    if (reply.nlmsg_type != NLMSG_ERROR || reply.nlmsg_seq != seq) continue;
    nlmsgerr error;
    std::memcpy(&error, buffer + NLMSG_HDRLEN, sizeof(error));
    if (error.error == 0) return absl::OkStatus();
    return ErrnoStatus("kernel uevent broadcast", -error.error);
  }
}

}  // namespace hotring::testing

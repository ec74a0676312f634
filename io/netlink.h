// Netlink uevent sockets (NETLINK_KOBJECT_UEVENT): a listener bound to a multicast group for the
// kernel's uevents, a sender for re-broadcasting handled events to another group (and for tests
// that inject events), and the origin check that keeps forged uevents out (CVE-2009-1185).
//
// Receiving goes through io::MultishotReceiver (io/multishot.h) on the listener's fd: the peer
// address it reports is a sockaddr_nl, and with SO_PASSCRED each datagram carries
// SCM_CREDENTIALS. A receive-queue overrun (the kernel dropped uevents) surfaces from
// MultishotReceiver::Next() as a status for which io::IsSocketOverrun() is true; the socket
// stays usable and the caller keeps calling Next().
#ifndef HOTRING_IO_NETLINK_H_
#define HOTRING_IO_NETLINK_H_

#include <linux/netlink.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"
#include "io/ops.h"

namespace hotring::io {

// The group the kernel multicasts uevents to. Groups 2..32 are free for re-broadcasting.
inline constexpr uint32_t kUeventKernelGroup = 1;
inline constexpr uint32_t kUeventMaxGroup = 32;

struct UeventListenerOptions {
  uint32_t group = kUeventKernelGroup;  // 1..32
  // Receive buffer to ask for, in bytes (the kernel doubles it for bookkeeping, as socket(7)
  // says). 0 keeps the system default.
  int receive_buffer = 128 << 20;
  // SO_PASSCRED: every datagram carries the sender's credentials (needed by the origin check).
  bool pass_credentials = true;
};

// A bound uevent listener: owns the socket; reports what the kernel actually granted.
struct UeventListener {
  UniqueFd fd;
  uint32_t port_id = 0;         // the nl_pid the kernel assigned to this socket
  int receive_buffer = 0;       // SO_RCVBUF read back after setting it
  bool receive_buffer_forced = false;  // SO_RCVBUFFORCE worked (else SO_RCVBUF, capped by
                                       // net.core.rmem_max)
};

// Opens a NETLINK_KOBJECT_UEVENT socket (close-on-exec), sets its receive buffer and
// SO_PASSCRED, and binds it to `options.group`. The fd is blocking; the reactor does not care.
absl::StatusOr<UeventListener> OpenUeventListener(const UeventListenerOptions& options);

// Takes over a listener someone else opened, as systemd-udevd takes its kernel socket from
// systemd: `fd` must be a NETLINK_KOBJECT_UEVENT socket bound to `group` (checked; else
// InvalidArgument, and the fd is closed). Sets close-on-exec and SO_PASSCRED (the origin check
// needs the credentials) and reports the receive buffer it has. Uevents queued in it before
// this call are kept: that is the point (a boot's init can start coldplug while the daemon
// is still starting).
absl::StatusOr<UeventListener> AdoptUeventListener(UniqueFd fd,
                                                   uint32_t group = kUeventKernelGroup);

// What SetReceiveBuffer obtained.
struct ReceiveBuffer {
  int bytes = 0;        // getsockopt(SO_RCVBUF)
  bool forced = false;  // SO_RCVBUFFORCE was accepted (CAP_NET_ADMIN)
};

// Asks for `bytes` of receive buffer with SO_RCVBUFFORCE, which ignores net.core.rmem_max but
// needs CAP_NET_ADMIN, falling back to SO_RCVBUF (silently capped at rmem_max). Reports the
// size the kernel reports back.
absl::StatusOr<ReceiveBuffer> SetReceiveBuffer(int fd, int bytes);

// An unbound NETLINK_KOBJECT_UEVENT socket for sending (close-on-exec). The kernel gives it a
// port id on the first send. Sending to a group needs CAP_NET_ADMIN (or root) in the socket's
// network namespace.
absl::StatusOr<UniqueFd> OpenUeventSender();

// The destination address of multicast group `group` (1..32), for SendToGroup or for an
// io::SendMsg through the reactor.
absl::StatusOr<SocketAddress> UeventGroupAddress(uint32_t group);

// Sends one datagram to every listener of `group` in the socket's network namespace (blocking
// sendto; a uevent is at most a few KiB). The kernel accepts it whether or not anyone listens.
absl::Status SendToGroup(int fd, uint32_t group, absl::string_view datagram);

// Who sent a datagram received on a uevent socket.
enum class NetlinkOrigin {
  kKernel,     // nl_pid 0 and, when credentials came with it, uid 0
  kNotKernel,  // a userspace socket sent it (nl_pid != 0), or the address is not netlink
  kNotRoot,    // nl_pid 0 but credentials with a uid other than 0
};

// The origin check, as a pure function of what recvmsg reported: only the kernel (port 0) may
// send uevents; with SO_PASSCRED the credentials must also say uid 0. Anything else must never
// reach a handler.
[[nodiscard]] NetlinkOrigin CheckNetlinkOrigin(const SocketAddress& peer,
                                               const std::optional<ucred>& credentials);

// The counter suffix for a rejected origin: "not_kernel", "not_root"; "" for kKernel.
[[nodiscard]] absl::string_view NetlinkDropReason(NetlinkOrigin origin);

}  // namespace hotring::io

#endif  // HOTRING_IO_NETLINK_H_

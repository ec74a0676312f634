// UeventInjector: puts kernel-format uevents on a NETLINK_KOBJECT_UEVENT multicast group from a
// test, for the daemon's forged-uevent, burst and overrun tests.
//
// Namespaces, first: inject only inside a private network namespace. Netlink multicast stays
// within one network namespace, so the events reach listeners in the test's namespace and
// never the host's udevd (or a hotring daemon running on the host). The daemon under test must
// run in the SAME namespace: a socket belongs to the namespace of the thread that created it,
// and a child process inherits its parent's. Two ways:
//   1. The whole test process enters a namespace before it starts anything (simplest):
//        int main(...) { CHECK_OK(EnterPrivateNetworkNamespace()); ... }   // or the first test
//      then spawns the daemon (the child inherits the namespace) and creates the injector.
//   2. A forked child calls EnterPrivateNetworkNamespace(), then starts the daemon and the
//      injector itself (e.g. a helper that exec()s `hotring daemon` after injecting).
// unshare(CLONE_NEWNET) needs CAP_SYS_ADMIN (the tests run as root, also under `bazel test`).
// It moves only the calling thread: call it before creating threads.
//
// What the test will also see: the kernel multicasts real device uevents to every network
// namespace owned by the initial user namespace, this private one included. A device plugged
// into the host during the test produces events here too; give injected events a DEVPATH no
// real device has ("/devices/virtual/hotring_test/...") and tolerate others.
//
// Origin: an injected event arrives with the injector's netlink port id (never 0) and its
// credentials, so a daemon that checks the origin (io/netlink.h CheckNetlinkOrigin) drops it as
// "not_kernel" unless started with --netlink-trust-userspace. SendThroughKernel() is the one way
// to have an event arrive as from the kernel (port 0); read its comment before using it.
#ifndef HOTRING_TESTING_UEVENT_INJECTOR_H_
#define HOTRING_TESTING_UEVENT_INJECTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"
#include "hotplug/event.h"

namespace hotring::testing {

// unshare(CLONE_NEWNET) for the calling thread (and every thread or process it creates
// afterwards). Idempotent per process: a second call is a no-op that returns OK.
absl::Status EnterPrivateNetworkNamespace();

// The inode of the calling thread's network namespace (/proc/thread-self/ns/net), to assert
// that a test really left the host's.
absl::StatusOr<uint64_t> NetworkNamespaceId();

// A uevent for injection: ACTION, DEVPATH, SUBSYSTEM, SEQNUM (when given), then `extra`, in
// the order the kernel uses; validated as the daemon will (hotplug EventFromEnv).
absl::StatusOr<hotplug::Event> MakeUevent(
    absl::string_view action, absl::string_view devpath, absl::string_view subsystem,
    std::optional<uint64_t> seqnum,
    const std::vector<std::pair<std::string, std::string>>& extra = {});

// Owns one unbound netlink uevent socket used for sending. Move-only.
class UeventInjector {
 public:
  // `group`: 1 (the kernel's) for the daemon's netlink source, 2..32 to test listeners of a
  // rebroadcast group.
  static absl::StatusOr<UeventInjector> Create(uint32_t group = 1);

  // Sends `event` in the kernel's wire format ("ACTION@DEVPATH\0KEY=VALUE\0...").
  absl::Status Send(const hotplug::Event& event);
  // Sends arbitrary bytes as one datagram (malformed-input tests).
  absl::Status SendRaw(absl::string_view datagram);
  // Sends `count` events as fast as one thread can, event i being make(i); stops at the first
  // error. Returns how many were sent. Multicast never blocks the sender: when a listener's
  // buffer is full the kernel drops the datagram for that listener (which sees ENOBUFS).
  template <typename MakeEvent>
  absl::StatusOr<size_t> SendBurst(size_t count, MakeEvent make);

  // The netlink port id listeners see as the sender (nl_pid); assigned at the first send,
  // 0 before it.
  [[nodiscard]] uint32_t port_id() const;
  [[nodiscard]] uint32_t group() const { return group_; }
  [[nodiscard]] int fd() const { return fd_.get(); }

  // Asks the kernel itself to broadcast `event` on group 1 of this namespace (the uevent
  // socket's receive path, Linux 4.18, needs CAP_SYS_ADMIN): listeners see port 0, as for a
  // real device event, and the kernel appends SEQNUM=<next global uevent number>, so `event`
  // must not carry a SEQNUM. Returns the kernel's verdict.
  // Side effect on the host: the kernel's uevent sequence number is global, so each call uses
  // up one number of the host's sequence; a host daemon that reorders by SEQNUM sees a gap
  // (systemd-udevd does not care; hotring waits --reorder-timeout once). Use sparingly: for the
  // "kernel events are accepted" half of an origin test, not for bursts.
  absl::Status SendThroughKernel(const hotplug::Event& event);
  // The same for any payload (malformed ones, libudev's format): the kernel copies it as it is
  // and appends "SEQNUM=<n>\0"; it must stay within the kernel's 2048-byte uevent buffer.
  absl::Status SendRawThroughKernel(absl::string_view payload);

 private:
  UeventInjector(UniqueFd fd, uint32_t group) : fd_(std::move(fd)), group_(group) {}
  UniqueFd fd_;
  uint32_t group_;
  uint32_t next_sequence_ = 0;  // nlmsg_seq of SendThroughKernel requests
};

template <typename MakeEvent>
absl::StatusOr<size_t> UeventInjector::SendBurst(size_t count, MakeEvent make) {
  for (size_t i = 0; i < count; ++i) {
    const absl::Status status = Send(make(i));
    if (!status.ok()) return status;
  }
  return count;
}

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_UEVENT_INJECTOR_H_

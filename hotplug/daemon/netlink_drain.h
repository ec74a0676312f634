// When the kernel's uevents have all been read: what a plain `settle` and udev's ping wait for
// before they answer. The kernel queues a uevent on the netlink socket inside the sysfs write
// that caused it (`trigger`), so it is there before the request that follows the write is; but
// the daemon may not have read it yet: the multishot receive drains a busy socket in rounds of a
// few dozen datagrams, and the request's completion can come between two rounds.
#ifndef HOTRING_HOTPLUG_DAEMON_NETLINK_DRAIN_H_
#define HOTRING_HOTPLUG_DAEMON_NETLINK_DRAIN_H_

#include "core/task.h"
#include "io/reactor.h"

namespace hotring::hotplug {

// Whether the socket `fd` holds datagrams nobody has read.
[[nodiscard]] bool NetlinkUnread(int fd);

// Two trips through the ring: the first lets the kernel run the receives it deferred to our next
// io_uring_enter, the second starts after the whole batch of the first was dispatched. After
// them, every completion the kernel had produced when this started has been handled.
Task<void> DispatchCompletions(io::Reactor& reactor);

// Resumes once every uevent the kernel queued on `fd` before the call has been read and handed
// to the event flow. While the socket is not empty (the receive re-arms, waits for ring
// buffers, or the flow is at --max-pending) it looks again after a pause of 1 ms, doubling up to
// 50 ms.
Task<void> AwaitNetlinkRead(io::Reactor& reactor, int fd);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_NETLINK_DRAIN_H_

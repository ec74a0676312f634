#include "hotplug/daemon/netlink_drain.h"

#include <poll.h>

#include <algorithm>

#include "absl/time/time.h"
#include "io/ops.h"

namespace hotring::hotplug {

bool NetlinkUnread(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

Task<void> DispatchCompletions(io::Reactor& reactor) {
  (void)co_await io::Nop(reactor);
  (void)co_await io::Nop(reactor);
}

Task<void> AwaitNetlinkRead(io::Reactor& reactor, int fd) {
  absl::Duration pause = absl::Milliseconds(1);
  for (;;) {
    co_await DispatchCompletions(reactor);
    if (!NetlinkUnread(fd)) co_return;
    (void)co_await io::Sleep(reactor, pause);
    pause = std::min(pause * 2, absl::Milliseconds(50));
  }
}

}  // namespace hotring::hotplug

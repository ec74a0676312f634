// `udevadm monitor`: the kernel's uevents (netlink group 1) and the handled events (group 2,
// libudev's format, sent by systemd-udevd or hotring's daemon), printed as 252 prints them.
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/unique_fd.h"
#include "hotplug/cli/udevadm/monitor_format.h"
#include "hotplug/cli/udevadm/verbs.h"
#include "hotplug/udev/monitor.h"
#include "io/netlink.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr char kMonitorHelp[] =
    "udevadm monitor [OPTIONS]\n"
    "\n"
    "Listen to kernel and udev events.\n"
    "\n"
    "  -h --help                                Show this help\n"
    "  -V --version                             Show package version\n"
    "  -p --property                            Print the event properties\n"
    "  -k --kernel                              Print kernel uevents\n"
    "  -u --udev                                Print udev events\n"
    "  -s --subsystem-match=SUBSYSTEM[/DEVTYPE] Filter events by subsystem\n"
    "  -t --tag-match=TAG                       Filter events by tag\n";

// One datagram and who sent it; nullopt when it is not one to print (forged or unreadable).
std::optional<std::string> Receive(int fd, bool kernel_group) {
  std::string buf(16384, '\0');
  sockaddr_nl from = {};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  iovec iov = {buf.data(), buf.size()};
  msghdr msg = {};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof from;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n <= 0 || (msg.msg_flags & MSG_TRUNC) != 0) return std::nullopt;
  const ucred* cred = nullptr;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
      cred = reinterpret_cast<const ucred*>(CMSG_DATA(c));
    }
  }
  // The kernel's messages come from port 0; a daemon's from its own port, as root.
  if (kernel_group && from.nl_pid != 0) return std::nullopt;
  if (!kernel_group && (from.nl_pid == 0 || cred == nullptr || cred->uid != 0)) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return buf;
}

}  // namespace

int MonitorVerb(const std::vector<std::string>& args) {
  bool help = false, properties = false, kernel = false, udev = false;
  MonitorFilter filter;
  FlagSet flags("monitor", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Bool("--property|-p|-e|--environment", &properties, "")
      .Bool("--kernel|-k", &kernel, "")
      .Bool("--udev|-u", &udev, "")
      .Value("--subsystem-match|-s", "SUBSYSTEM[/DEVTYPE]", "",
             [&](absl::string_view v) {
               const size_t slash = v.find('/');
               if (slash == absl::string_view::npos) {
                 filter.subsystems.emplace_back(std::string(v), std::nullopt);
               } else {
                 filter.subsystems.emplace_back(std::string(v.substr(0, slash)), std::string(v.substr(slash + 1)));
               }
               return absl::OkStatus();
             })
      .Strings("--tag-match|-t", "TAG", &filter.tags, "");
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kMonitorHelp, stdout);
    return 0;
  }
  if (!kernel && !udev) kernel = udev = true;

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd signals(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));

  std::optional<io::UeventListener> kernel_socket, udev_socket;
  if (kernel) {
    absl::StatusOr<io::UeventListener> l = io::OpenUeventListener({.group = io::kUeventKernelGroup});
    if (!l.ok()) return Fail("monitor", absl::StrCat("Failed to create netlink socket: ", l.status().message()));
    kernel_socket = std::move(*l);
  }
  if (udev) {
    absl::StatusOr<io::UeventListener> l = io::OpenUeventListener({.group = udev::kUdevMonitorGroup});
    if (!l.ok()) return Fail("monitor", absl::StrCat("Failed to create netlink socket: ", l.status().message()));
    udev_socket = std::move(*l);
  }
  std::fputs(MonitorHeader(udev, kernel).c_str(), stdout);
  std::fflush(stdout);

  for (;;) {
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = {signals.get(), POLLIN, 0};
    const int kernel_index = kernel_socket ? static_cast<int>(n) : -1;
    if (kernel_socket) fds[n++] = {kernel_socket->fd.get(), POLLIN, 0};
    const int udev_index = udev_socket ? static_cast<int>(n) : -1;
    if (udev_socket) fds[n++] = {udev_socket->fd.get(), POLLIN, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      return Fail("monitor", absl::StrCat("poll: ", strerror(errno)));
    }
    if (fds[0].revents != 0) return 0;
    for (int index : {kernel_index, udev_index}) {
      if (index < 0 || (fds[index].revents & POLLIN) == 0) continue;
      const bool is_kernel = index == kernel_index;
      std::optional<std::string> datagram = Receive(fds[index].fd, is_kernel);
      if (!datagram) continue;
      absl::StatusOr<std::vector<std::pair<std::string, std::string>>> props =
          is_kernel ? ParseKernelDatagram(*datagram) : udev::DecodeMonitorMessage(*datagram);
      if (!props.ok()) continue;
      absl::StatusOr<MonitorDevice> device = MonitorDeviceFromProperties(*props);
      if (!device.ok() || !filter.Passes(*device)) continue;
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      std::fputs(FormatMonitorEvent(*device, !is_kernel, now, properties).c_str(), stdout);
      std::fflush(stdout);
    }
  }
}

}  // namespace hotring::hotplug::udevadm

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
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/unique_fd.h"
#include "hotplug/cli/udevadm/monitor_device.h"
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

// One datagram, nullopt when sd-device's monitor would not take it from this sender: it
// trusts no unicast, on the kernel's group only the kernel (port 0), and on either group only a
// sender with root's credentials. Datagrams of any size are read whole, as 252 reads them.
std::optional<std::string> Receive(int fd, bool kernel_group) {
  const ssize_t size = recv(fd, nullptr, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  if (size <= 0) {
    if (size == 0) (void)recv(fd, nullptr, 0, MSG_DONTWAIT);  // an empty datagram: consume it
    return std::nullopt;
  }
  std::string buf(static_cast<size_t>(size), '\0');
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
  if (from.nl_groups == 0) return std::nullopt;
  if (kernel_group && from.nl_pid != 0) return std::nullopt;
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_CREDENTIALS) return std::nullopt;
  ucred cred;
  std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
  if (cred.uid != 0) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return buf;
}

// Whether /dev is a devtmpfs: the type of the last (topmost) mount on /dev.
bool DevIsDevtmpfs() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  bool devtmpfs = false;
  for (std::string line; std::getline(mountinfo, line);) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER"
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    const size_t dash = line.find(" - ");
    if (fields.size() < 5 || fields[4] != "/dev" || dash == std::string::npos) continue;
    devtmpfs = absl::StartsWith(absl::string_view(line).substr(dash + 3), "devtmpfs");
  }
  return devtmpfs;
}

// 252 listens to udev's group only where a udev seems to run (its control socket exists, or
// /dev is a devtmpfs), so that a container does not see the host's processed events.
bool UdevSeemsActive() { return access("/run/udev/control", F_OK) == 0 || DevIsDevtmpfs(); }

}  // namespace

int MonitorVerb(const std::vector<std::string>& args) {
  bool help = false, properties = false, kernel = false, udev = false;
  MonitorFilter filter;
  std::vector<std::string> ignored;  // 252 takes no arguments and ignores any given
  FlagSet flags("monitor", "");
  flags.AbbreviatedLongNames().Positionals(&ignored).Bool("--help|-h", &help, "")
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
  if (udev && UdevSeemsActive()) {
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
      if (!datagram || !filter.PassesSocketFilter(*datagram)) continue;
      absl::StatusOr<MonitorDevice> device = ParseMonitorDatagram(*datagram);
      if (!device.ok() || !filter.Passes(*device)) continue;
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      std::fputs(FormatMonitorEvent(*device, !is_kernel, now, properties).c_str(), stdout);
      std::fflush(stdout);
    }
  }
}

}  // namespace hotring::hotplug::udevadm

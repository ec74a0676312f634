#include "hotplug/daemon/udev_control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/log.h"
#include "core/status.h"
#include "hotplug/daemon/netlink_drain.h"
#include "io/ops.h"
#include "io/socket.h"

namespace hotring::hotplug {
namespace {

// udevadm sends everything at once and then waits: a connection silent this long is dropped
// (udevd 252 would keep it, and with it every later client, waiting).
constexpr absl::Duration kSilenceLimit = absl::Seconds(10);
// Clients that connect while one is served wait in the backlog (udevd serves one at a time too).
constexpr int kBacklog = 64;
// The children_max a message may set, as `hotring daemon --children-max` allows.
constexpr int32_t kMaxChildren = 4096;

}  // namespace

absl::StatusOr<std::unique_ptr<UdevControlServer>> UdevControlServer::Bind(
    io::Reactor& reactor, const std::string& path, EventFlow& flow) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--udev-control needs an absolute path: '", path, "'"));
  }
  const size_t slash = path.rfind('/');
  if (slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("mkdir(", dir, ")"));
    }
  }
  HOTRING_ASSIGN_OR_RETURN(UniqueFd fd, io::BindUnix(SOCK_SEQPACKET, path));
  // As udevd: credentials asked for on the listening socket already, so that what a client
  // sends before its connection is accepted carries them too.
  HOTRING_RETURN_IF_ERROR(io::EnablePassCred(fd.get()));
  // As udevd's socket: only root may connect (the uid is checked again on accept).
  ::chmod(path.c_str(), 0755);
  if (::listen(fd.get(), kBacklog) != 0) return ErrnoStatus(absl::StrCat("listen(", path, ")"));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoStatus("fcntl(O_NONBLOCK)");
  }
  return std::unique_ptr<UdevControlServer>(new UdevControlServer(reactor, std::move(fd), flow));
}

Task<void> UdevControlServer::Serve() {
  while (!exiting_) {
    absl::StatusOr<unsigned> ready = co_await io::Poll(reactor_, fd_.get(), POLLIN);
    if (!ready.ok()) {
      LogError("udev control socket: %s", ready.status().ToString());
      (void)co_await io::Sleep(reactor_, absl::Milliseconds(10));
      continue;
    }
    UniqueFd connection(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!connection.valid()) {
      if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors, say: the client waits in the backlog until we can take it.
      LogError("udev control socket: accept: %s", std::strerror(errno));
      (void)co_await io::Sleep(reactor_, absl::Milliseconds(10));
      continue;
    }
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (::getsockopt(connection.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
        peer.uid != 0) {
      ++refused_;
      LogWarning("udev control: connection from pid %d uid %d refused (root only)", peer.pid,
                 peer.uid);
      continue;
    }
    (void)io::EnablePassCred(connection.get());
    ++connections_;
    co_await Converse(std::move(connection));
  }
  // As udevd after EXIT: nobody is listening any more, a client's connect is refused.
  fd_.Reset();
}

Task<void> UdevControlServer::Converse(UniqueFd connection) {
  // udevd takes a connection only when no uevent waits to be read (its listening socket has
  // the lowest priority of its event loop): a ping then finds every earlier uevent queued.
  if (netlink_fd_ >= 0) co_await AwaitUeventsRead();
  for (;;) {
    io::ReceivedMessage received =
        co_await io::RecvMsg(reactor_, connection.get(),
                             io::Buffer(udev::kControlMessageSize + 64))
            .WithTimeout(kSilenceLimit);
    if (!received.bytes.ok()) {
      ++refused_;
      LogWarning("udev control: %s; hanging up", received.bytes.status().ToString());
      co_return;
    }
    if (*received.bytes == 0) co_return;  // the client went away
    // A message the client sent before its connection was accepted (and SO_PASSCRED set on
    // it) may come without credentials: the peer's, checked at accept, are root's then.
    if (received.credentials.has_value() && received.credentials->uid != 0) {
      ++refused_;
      LogWarning("udev control: a message with uid %d's credentials; hanging up",
                 received.credentials->uid);
      co_return;
    }
    absl::StatusOr<udev::ControlMessage> message =
        received.truncated()
            ? absl::InvalidArgumentError("udev control message longer than 280 bytes")
            : udev::ParseControlMessage(absl::string_view(received.buffer.data(),
                                                          *received.bytes));
    if (!message.ok()) {
      ++refused_;
      LogWarning("udev control: %s; hanging up", message.status().message());
      co_return;
    }
    if (message->type != static_cast<int32_t>(udev::ControlType::kEndMessages)) ++messages_;
    if (!Act(*message)) co_return;
  }
}

Task<void> UdevControlServer::AwaitUeventsRead() {
  absl::Duration pause = absl::Milliseconds(1);
  for (;;) {
    co_await AwaitNetlinkRead(reactor_, netlink_fd_);
    // At --max-pending the netlink source stops reading, but its multishot receive stays armed:
    // uevents the kernel has already moved into the receive ring no longer show on the socket,
    // and the flow takes them only once room frees. Until then they are unread too.
    if (!flow_.Full()) co_return;
    (void)co_await io::Sleep(reactor_, pause);
    pause = std::min(pause * 2, absl::Milliseconds(50));
  }
}

bool UdevControlServer::Act(const udev::ControlMessage& message) {
  using udev::ControlType;
  switch (static_cast<ControlType>(message.type)) {
    case ControlType::kEndMessages:
      return false;
    case ControlType::kSetLogLevel:
      if (message.intval < 0 || message.intval > 7) {
        LogWarning("udev control: log level %d is not a syslog priority; ignored",
                   message.intval);
        return true;
      }
      SetLogLevel(LogLevelFromSyslog(message.intval));
      LogInfo("udev control: log level %d", message.intval);
      return true;
    case ControlType::kStopExecQueue:
      flow_.SetExecQueueStopped(true);
      return true;
    case ControlType::kStartExecQueue:
      flow_.SetExecQueueStopped(false);
      return true;
    case ControlType::kReload: {
      const absl::Status reloaded = flow_.Reload();
      LogNotice("reload requested (udev control): %s", reloaded.ok() ? "ok" : reloaded.ToString());
      return true;
    }
    case ControlType::kSetEnv:
      SetEnv(message.text);
      return true;
    case ControlType::kSetChildrenMax:
      if (message.intval <= 0) {
        // udevd ignores these too (`udevadm control -m 0`).
        LogInfo("udev control: children_max %d ignored", message.intval);
        return true;
      }
      flow_.SetChildrenMax(static_cast<size_t>(std::min(message.intval, kMaxChildren)));
      return true;
    case ControlType::kPing:
      // Answered by the hang-up after END: the uevents before it were read when we accepted.
      LogDebug("udev control: ping");
      return true;
    case ControlType::kExit:
      exiting_ = true;
      flow_.RequestStop("udevadm control --exit", StopMode::kFinishRunning);
      return false;  // hang up now: udevadm returns while running events finish, as with udevd
  }
  LogDebug("udev control: unknown message type %d ignored", message.type);
  return true;
}

void UdevControlServer::SetEnv(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    LogWarning("udev control: property '%s' is not KEY=VALUE; ignored", assignment);
    return;
  }
  const absl::string_view key = absl::string_view(assignment).substr(0, eq);
  const absl::string_view value = absl::string_view(assignment).substr(eq + 1);
  // "KEY=" unsets, as udevd does.
  const absl::Status set =
      flow_.SetGlobalProperty(key, value.empty() ? std::nullopt
                                                 : std::optional<absl::string_view>(value));
  if (!set.ok()) LogWarning("udev control: property %s: %s", key, set.message());
}

void UdevControlServer::AppendStatus(
    std::vector<std::pair<std::string, std::string>>& fields) const {
  fields.emplace_back("udev_control_connections", absl::StrCat(connections_));
  fields.emplace_back("udev_control_messages", absl::StrCat(messages_));
  fields.emplace_back("udev_control_refused", absl::StrCat(refused_));
}

}  // namespace hotring::hotplug

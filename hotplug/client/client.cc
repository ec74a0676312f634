#include "hotplug/client/client.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/clock.h"
#include "core/status.h"
#include "hotplug/client/retry_schedule.h"
#include "io/ops.h"
#include "io/socket.h"

namespace hotring::hotplug {

uint32_t NewCookie() {
  uint32_t cookie = 0;
  while (cookie == 0) {
    // Never block for entropy: in an early-boot initramfs the pool may not be ready for a
    // second, and a cookie only pairs replies with requests (the sender is checked anyway).
    if (::getrandom(&cookie, sizeof(cookie), GRND_NONBLOCK) != sizeof(cookie)) {
      cookie = static_cast<uint32_t>(::getpid()) ^
               static_cast<uint32_t>(MonoNow().time_since_epoch().count());
    }
  }
  return cookie;
}

absl::StatusOr<ControlClient> ControlClient::Open(absl::string_view socket_name) {
  HOTRING_ASSIGN_OR_RETURN(const io::SocketAddress daemon, io::UnixAddress(socket_name));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd fd, io::UnixSocket(SOCK_DGRAM));
  // Autobind to a unique abstract name so the daemon has an address to reply to.
  const sa_family_t family = AF_UNIX;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&family), sizeof(family)) != 0) {
    return ErrnoStatus("bind(autobind)");
  }
  HOTRING_RETURN_IF_ERROR(io::EnablePassCred(fd.get()));
  return ControlClient(std::string(socket_name), daemon, std::move(fd));
}

absl::Status ControlClient::Send(const WireMessage& message) {
  const std::string bytes = EncodeWireMessage(message);
  if (::sendto(fd_.get(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
               daemon_.get(), daemon_.length) == static_cast<ssize_t>(bytes.size())) {
    return absl::OkStatus();
  }
  const int err = errno;
  if (err == EAGAIN) return absl::ResourceExhaustedError(absl::StrCat("daemon queue full on ", name_));
  if (err == ENOENT || err == ECONNREFUSED) {
    return absl::UnavailableError(absl::StrCat("no daemon listening on ", name_));
  }
  return ErrnoStatus(absl::StrCat("sendto(", name_, ")"), err);
}

absl::StatusOr<SendOutcome> OutcomeOf(const absl::Status& sent) {
  if (sent.ok()) return SendOutcome::kQueued;
  if (sent.code() == absl::StatusCode::kUnavailable) return SendOutcome::kNoDaemon;
  if (sent.code() == absl::StatusCode::kResourceExhausted) return SendOutcome::kQueueFull;
  return sent;
}

bool ControlClient::FromDaemon(const io::ReceivedMessage& message) const {
  if (message.peer.length != daemon_.length ||
      std::memcmp(&message.peer.storage, &daemon_.storage, daemon_.length) != 0) {
    return false;
  }
  if (!message.credentials.has_value()) return false;
  return message.credentials->uid == 0 || message.credentials->uid == ::getuid();
}

Task<absl::StatusOr<WireMessage>> ControlClient::Receive(io::Reactor& reactor, uint32_t cookie,
                                                         absl::Duration timeout) {
  const MonoTime deadline = MonoNow() + timeout;
  for (;;) {
    const absl::Duration left = Since(MonoNow(), deadline);
    if (left <= absl::ZeroDuration()) {
      co_return absl::DeadlineExceededError(absl::StrCat("no reply from ", name_));
    }
    io::ReceivedMessage received =
        co_await io::RecvMsg(reactor, fd_.get(), io::Buffer(kMaxWireBytes + 1)).WithTimeout(left);
    if (!received.bytes.ok()) {
      if (received.bytes.status().code() == absl::StatusCode::kDeadlineExceeded) {
        co_return absl::DeadlineExceededError(absl::StrCat("no reply from ", name_));
      }
      co_return received.bytes.status();
    }
    if (!FromDaemon(received)) continue;  // not the daemon: ignore, do not trust
    absl::StatusOr<WireMessage> message =
        ParseWireMessage(absl::string_view(received.buffer.data(), *received.bytes));
    if (!message.ok() || message->cookie != cookie) continue;
    co_return std::move(*message);
  }
}

Task<absl::StatusOr<WireMessage>> ControlClient::Request(io::Reactor& reactor,
                                                         WireMessage request,
                                                         absl::Duration timeout,
                                                         absl::Duration retransmit) {
  RetrySchedule schedule({.timeout = timeout, .retransmit = retransmit}, MonoNow());
  absl::Status last = absl::DeadlineExceededError(absl::StrCat("no reply from ", name_));
  for (;;) {
    if (schedule.Left(MonoNow()) <= absl::ZeroDuration()) co_return last;
    const absl::Status sent = Send(request);
    const absl::StatusOr<SendOutcome> outcome = OutcomeOf(sent);
    if (!outcome.ok()) co_return outcome.status();
    // What to report if the deadline passes before a reply: the last thing that went wrong.
    last = sent.ok() ? absl::DeadlineExceededError(absl::StrCat("no reply from ", name_)) : sent;
    const RetryStep step = schedule.After(*outcome, MonoNow());
    switch (step.kind) {
      case RetryStep::Kind::kGiveUp:
        co_return last;
      case RetryStep::Kind::kSleep:
        (void)co_await io::Sleep(reactor, step.wait);
        continue;
      case RetryStep::Kind::kAwaitReply:
        break;
    }
    absl::StatusOr<WireMessage> reply = co_await Receive(reactor, request.cookie, step.wait);
    if (reply.ok()) co_return reply;
    if (reply.status().code() != absl::StatusCode::kDeadlineExceeded) co_return reply.status();
  }
}

absl::StatusOr<ControlReply> Ask(absl::string_view socket, ControlRequest request,
                                 absl::Duration timeout) {
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<io::Reactor> reactor, io::Reactor::Create());
  HOTRING_ASSIGN_OR_RETURN(ControlClient client, ControlClient::Open(socket));
  request.cookie = NewCookie();
  // Every request is idempotent, so retransmitting is safe.
  HOTRING_ASSIGN_OR_RETURN(
      WireMessage reply,
      reactor->BlockOn(client.Request(*reactor, ControlRequestMessage(request), timeout,
                                      absl::Seconds(1))));
  return ControlReplyFromMessage(std::move(reply));
}

absl::Status Settle(absl::string_view socket, absl::Duration timeout) {
  ControlRequest request;
  request.command = ControlCommand::kSettle;
  absl::StatusOr<ControlReply> reply = Ask(socket, std::move(request), timeout);
  if (reply.ok()) {
    if (!reply->ok) return absl::UnavailableError(reply->message);
    return absl::OkStatus();
  }
  // Nothing can be pending in a daemon that does not exist.
  if (reply.status().code() == absl::StatusCode::kUnavailable) return absl::OkStatus();
  return reply.status();
}

absl::Status SettleFor(absl::string_view socket, const std::vector<std::string>& conditions,
                       absl::Duration timeout) {
  return SettleForDevices(socket, conditions, timeout).status();
}

absl::StatusOr<std::vector<std::string>> SettleForDevices(
    absl::string_view socket, const std::vector<std::string>& conditions, absl::Duration timeout) {
  ControlRequest request;
  request.command = ControlCommand::kSettle;
  for (const std::string& c : conditions) request.options.emplace_back("FOR", c);
  request.options.emplace_back("TIMEOUT_MS", absl::StrCat(absl::ToInt64Milliseconds(timeout)));
  HOTRING_ASSIGN_OR_RETURN(ControlReply reply, Ask(socket, std::move(request), timeout));
  if (!reply.ok) return absl::InvalidArgumentError(reply.message);
  std::vector<std::string> devnames;
  for (auto& [key, value] : reply.fields) {
    if (key == "devname") devnames.push_back(std::move(value));
  }
  if (devnames.size() != conditions.size()) {
    return absl::UnavailableError(absl::StrCat("the daemon named ", devnames.size(),
                                               " devices for ", conditions.size(),
                                               " conditions"));
  }
  return devnames;
}

absl::StatusOr<std::string> FetchTimelineLines(absl::string_view socket) {
  std::string text;
  uint64_t from = 0;
  for (int page = 0; page < 100000; ++page) {
    ControlRequest request;
    request.command = ControlCommand::kTimeline;
    request.options.emplace_back("FROM", absl::StrCat(from));
    HOTRING_ASSIGN_OR_RETURN(ControlReply reply, Ask(socket, std::move(request), absl::Seconds(5)));
    if (!reply.ok) return absl::UnavailableError(reply.message);
    uint64_t next = from;
    uint64_t total = 0;
    size_t lines = 0;
    for (const auto& [key, value] : reply.fields) {
      if (key == "next") (void)absl::SimpleAtoi(value, &next);
      if (key == "total") (void)absl::SimpleAtoi(value, &total);
      if (key == "line") {
        absl::StrAppend(&text, value, "\n");
        ++lines;
      }
    }
    if (lines == 0 || next >= total || next <= from) break;
    from = next;
  }
  return text;
}

}  // namespace hotring::hotplug

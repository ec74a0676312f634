// `hotring settle`, `hotring control`, `hotring monitor`: requests on the daemon's control
// socket.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/json.h"
#include "core/status.h"
#include "hotplug/cli/commands.h"
#include "hotplug/client/client.h"
#include "hotplug/daemon/handled_devices.h"
#include "hotplug/event_parser.h"
#include "hotplug/wire.h"
#include "io/buffer_ring.h"
#include "io/multishot.h"
#include "io/netlink.h"
#include "io/ops.h"
#include "io/reactor.h"

namespace hotring::hotplug {

int PrintPending(absl::string_view socket, std::FILE* out) {
  ControlRequest request;
  request.command = ControlCommand::kPending;
  absl::StatusOr<ControlReply> reply = Ask(socket, std::move(request), absl::Seconds(2));
  if (!reply.ok() || !reply->ok) {
    std::fprintf(out, "  (the daemon did not say what is pending: %s)\n",
                 reply.ok() ? reply->message.c_str() : std::string(reply.status().message()).c_str());
    return 0;
  }
  std::string counts;
  int events = 0;
  for (const auto& [key, value] : reply->fields) {
    if (key == "held" || key == "queued" || key == "running") {
      absl::StrAppend(&counts, counts.empty() ? "" : ", ", value, " ", key);
    } else if (key == "event") {
      std::fprintf(out, "  SEQNUM %s\n", value.c_str());
      ++events;
    } else if (key == "more") {
      std::fprintf(out, "  ... and %s more\n", value.c_str());
    }
  }
  std::fprintf(out, "  pending: %s\n", counts.c_str());
  return events;
}

int SettleCommand(const std::vector<std::string>& args) {
  std::string socket(kDefaultSocket);
  absl::Duration timeout = absl::Seconds(120);
  std::vector<std::string> conditions;
  FlagSet flags("settle",
                "usage: hotring settle [--for KEY=VALUE]... [--socket PATH|@NAME] [--timeout S]\n"
                "  exit 0 once nothing is held, queued or running; 1 after --timeout S (default "
                "120),\n"
                "  printing what is still pending and where (held behind a SEQNUM gap, queued "
                "behind\n"
                "  a related event, running: handler pid and for how long)");
  flags
      .Value("--for", "KEY=VALUE",
             "instead, exit 0 as soon as a device matching KEY=VALUE has been handled (or "
             "already had been), without waiting for the rest: any event property (DEVNAME=vda, "
             "SUBSYSTEM=net, DEVPATH=/devices/..) or a filesystem's LABEL=/UUID= (ID_FS_LABEL/"
             "ID_FS_UUID, else the superblock: ext2/3/4, vfat, btrfs, xfs, swap), or a "
             "partition's PARTUUID=/PARTLABEL= (ID_PART_ENTRY_*, PARTNAME, else the disk's GPT "
             "or MBR table). Repeatable: ALL must be met, each by some device (udevadm settle "
             "has no equivalent).",
             [&conditions](absl::string_view v) -> absl::Status {
               absl::StatusOr<SettleCondition> condition = ParseSettleCondition(v);
               if (!condition.ok()) {
                 // Its message names --for already; the flag table adds the name again.
                 absl::string_view message = condition.status().message();
                 absl::ConsumePrefix(&message, "--for");
                 absl::ConsumePrefix(&message, ":");
                 absl::ConsumePrefix(&message, " ");
                 return absl::Status(condition.status().code(), message);
               }
               conditions.push_back(condition->ToString());
               return absl::OkStatus();
             })
      .String("--socket", "PATH|@NAME", &socket, "daemon socket (default /run/hotring/control)")
      .Seconds("--timeout", "S", &timeout, "give up after S seconds (default 120)");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  absl::Status settled;
  if (conditions.empty()) {
    settled = Settle(socket, timeout);
  } else {
    settled = SettleFor(socket, conditions, timeout);
  }
  if (settled.ok()) return 0;
  if (settled.code() == absl::StatusCode::kDeadlineExceeded ||
      settled.code() == absl::StatusCode::kResourceExhausted) {
    std::fprintf(stderr, "hotring settle: timeout after %s: %s%s\n",
                 absl::FormatDuration(timeout).c_str(),
                 conditions.empty()
                     ? "events still pending"
                     : absl::StrCat("not every one of ", absl::StrJoin(conditions, ", "),
                                    " was met by a handled device")
                           .c_str(),
                 settled.code() == absl::StatusCode::kResourceExhausted
                     ? absl::StrCat(" (", settled.message(), "; the daemon is busy)").c_str()
                     : "");
    (void)PrintPending(socket, stderr);
    return 1;
  }
  return ReportError("settle", settled);
}

int ControlCommandMain(const std::vector<std::string>& args) {
  std::string socket(kDefaultSocket);
  absl::Duration timeout = absl::Seconds(5);
  bool json = false;
  std::optional<ControlCommand> command;
  std::vector<std::string> positionals;
  FlagSet flags("control",
                "usage: hotring control status|exit|reload|pending [--json] [--socket "
                "PATH|@NAME] [--timeout S]\n"
                "  pending: what is held, queued or running, and where");
  flags.Bool("--json", &json, "the reply as one JSON object")
      .String("--socket", "PATH|@NAME", &socket, "daemon socket (default /run/hotring/control)")
      .Seconds("--timeout", "S", &timeout, "give up after S seconds (default 5)")
      .Positionals(&positionals);
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  if (positionals.size() > 1) {
    return ReportError("control", flags.Error(absl::StrCat("unknown argument '", positionals[1],
                                                           "' (try --help)")));
  }
  if (!positionals.empty()) {
    command = ControlCommandFromName(positionals[0]);
    if (!command.has_value() || *command == ControlCommand::kSettle ||
        *command == ControlCommand::kMonitor || *command == ControlCommand::kUnmonitor ||
        *command == ControlCommand::kTimeline) {
      return ReportError("control",
                         flags.Error(absl::StrCat("unknown command '", positionals[0],
                                                  "' (status, exit, reload or pending)")));
    }
  }
  if (!command.has_value()) {
    return ReportError("control", absl::InvalidArgumentError("status, exit or reload?"));
  }
  ControlRequest request;
  request.command = *command;
  absl::StatusOr<ControlReply> reply = Ask(socket, std::move(request), timeout);
  if (!reply.ok()) return ReportError("control", reply.status());
  if (!reply->ok) {
    std::fprintf(stderr, "hotring control: %s\n", reply->message.c_str());
    return 1;
  }
  if (json) {
    std::vector<std::string> parts;
    for (const auto& [key, value] : reply->fields) {
      // Counters are numbers; `pending` describes events in text.
      const bool number = !value.empty() && std::all_of(value.begin(), value.end(),
                                                         [](char c) { return c >= '0' && c <= '9'; });
      parts.push_back(absl::StrCat(JsonQuote(key), ": ", number ? value : JsonQuote(value)));
    }
    if (!reply->message.empty()) parts.push_back(absl::StrCat("\"message\": ", JsonQuote(reply->message)));
    std::printf("{%s}\n", absl::StrJoin(parts, ", ").c_str());
  } else {
    for (const auto& [key, value] : reply->fields) {
      std::printf("%s %s\n", key.c_str(), value.c_str());
    }
    if (!reply->message.empty() && reply->fields.empty()) std::printf("%s\n", reply->message.c_str());
  }
  return 0;
}

namespace {

struct MonitorOptions {
  std::string socket = std::string(kDefaultSocket);
  bool env = false;
  bool kernel = false;
  int64_t count = -1;  // stop after this many events (-1: never)
};

void PrintEnv(const Event& event) {
  for (const auto& [key, value] : event.env) std::printf("%s=%s\n", key.c_str(), value.c_str());
  std::printf("\n");
}

// Handled events from the daemon, re-subscribing every few seconds so a restarted daemon
// picks the monitor up again.
Task<absl::Status> MonitorDaemon(io::Reactor& reactor, const MonitorOptions& options) {
  HOTRING_CO_ASSIGN_OR_RETURN(ControlClient client, ControlClient::Open(options.socket));
  ControlRequest subscribe;
  subscribe.command = ControlCommand::kMonitor;
  subscribe.cookie = NewCookie();
  const WireMessage request = ControlRequestMessage(subscribe);
  HOTRING_CO_ASSIGN_OR_RETURN(
      WireMessage first,
      co_await client.Request(reactor, request, absl::Seconds(5), absl::Seconds(1)));
  HOTRING_CO_ASSIGN_OR_RETURN(ControlReply reply, ControlReplyFromMessage(std::move(first)));
  if (!reply.ok) co_return absl::UnavailableError(reply.message);
  std::fprintf(stderr, "monitoring handled events on %s\n", options.socket.c_str());
  std::fflush(stderr);
  int64_t seen = 0;
  MonoTime renew = MonoNow() + absl::Seconds(5);
  while (options.count < 0 || seen < options.count) {
    absl::StatusOr<WireMessage> message =
        co_await client.Receive(reactor, subscribe.cookie, Since(MonoNow(), renew));
    if (!message.ok()) {
      if (message.status().code() != absl::StatusCode::kDeadlineExceeded) co_return message.status();
      (void)client.Send(request);  // renew; the reply is ignored
      renew = MonoNow() + absl::Seconds(5);
      continue;
    }
    if (message->type != WireType::kMonitorEvent) continue;
    absl::StatusOr<MonitorEvent> event = MonitorEventFromMessage(std::move(*message));
    if (!event.ok()) continue;
    const Event& e = event->event;
    std::printf("%s %s %s (%s) %s %.3fms\n",
                e.seqnum.has_value() ? absl::StrCat(*e.seqnum).c_str() : "-", e.action.c_str(),
                e.devpath.c_str(), e.subsystem.c_str(),
                std::string(EventResultName(event->result)).c_str(),
                static_cast<double>(event->duration_us) / 1000.0);
    if (options.env) PrintEnv(e);
    std::fflush(stdout);
    ++seen;
  }
  ControlRequest unsubscribe;
  unsubscribe.command = ControlCommand::kUnmonitor;
  unsubscribe.cookie = subscribe.cookie;
  (void)client.Send(ControlRequestMessage(unsubscribe));
  co_return absl::OkStatus();
}

// Raw kernel uevents from netlink group 1, as they arrive (before any handling).
Task<absl::Status> MonitorKernel(io::Reactor& reactor, const MonitorOptions& options) {
  io::UeventListenerOptions listen;
  HOTRING_CO_ASSIGN_OR_RETURN(io::UeventListener listener, io::OpenUeventListener(listen));
  HOTRING_CO_ASSIGN_OR_RETURN(std::shared_ptr<io::BufferRing> ring,
                              io::BufferRing::Create(reactor, 1, 64, 4096));
  io::MultishotReceiver receiver(reactor, listener.fd.get(), ring);
  std::fprintf(stderr, "monitoring kernel uevents\n");
  std::fflush(stderr);
  int64_t seen = 0;
  while (options.count < 0 || seen < options.count) {
    absl::StatusOr<io::Datagram> datagram = co_await receiver.Next();
    if (!datagram.ok()) {
      if (io::IsSocketOverrun(datagram.status())) {
        std::printf("KERNEL overrun: uevents were lost\n");
        continue;
      }
      co_return datagram.status();
    }
    const io::NetlinkOrigin origin = io::CheckNetlinkOrigin(datagram->peer, datagram->credentials);
    absl::StatusOr<Event> event = ParseKernelUevent(datagram->payload);
    if (!event.ok()) continue;
    timespec now;
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    std::printf("KERNEL[%ld.%06ld] %s %s (%s)%s\n", static_cast<long>(now.tv_sec),
                now.tv_nsec / 1000, event->action.c_str(), event->devpath.c_str(),
                event->subsystem.c_str(),
                origin == io::NetlinkOrigin::kKernel ? "" : " [not from the kernel]");
    if (options.env) PrintEnv(*event);
    std::fflush(stdout);
    ++seen;
  }
  co_return absl::OkStatus();
}

}  // namespace

int MonitorCommand(const std::vector<std::string>& args) {
  MonitorOptions options;
  FlagSet flags("monitor",
                "usage: hotring monitor [--env] [--kernel] [--count N] [--socket PATH|@NAME]\n"
                "  handled events from the daemon: SEQNUM ACTION DEVPATH (SUBSYSTEM) result "
                "duration");
  flags.Bool("--env", &options.env, "print each event's variables after it")
      .Bool("--kernel", &options.kernel, "raw kernel uevents from netlink as they arrive")
      .Int("--count", "N", &options.count, 1, INT64_MAX, "stop after N events")
      .String("--socket", "PATH|@NAME", &options.socket,
              "daemon socket (default /run/hotring/control)");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  if (!reactor.ok()) return ReportError("monitor", reactor.status());
  const absl::Status run =
      options.kernel ? (*reactor)->BlockOn(MonitorKernel(**reactor, options))
                     : (*reactor)->BlockOn(MonitorDaemon(**reactor, options));
  if (!run.ok()) return ReportError("monitor", run);
  return 0;
}

}  // namespace hotring::hotplug

// `udevadm control` and `udevadm settle`. Both speak systemd-udevd 252's control protocol on
// /run/udev/control (control_protocol.h), which hotring's daemon serves too; with only
// hotring's own control socket, they ask that one (exit, reload, ping; settle).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hotplug/cli/udevadm/deadline.h"
#include "hotplug/cli/udevadm/control_protocol.h"
#include "hotplug/cli/udevadm/verbs.h"
#include "hotplug/client/client.h"
#include "hotplug/udevrules/rule_files.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr char kControlHelp[] =
    "udevadm control OPTION\n"
    "\n"
    "Control the udev daemon.\n"
    "\n"
    "  -h --help                Show this help\n"
    "  -V --version             Show package version\n"
    "  -e --exit                Instruct the daemon to cleanup and exit\n"
    "  -l --log-level=LEVEL     Set the udev log level for the daemon\n"
    "  -s --stop-exec-queue     Do not execute events, queue only\n"
    "  -S --start-exec-queue    Execute events, flush queue\n"
    "  -R --reload              Reload rules and databases\n"
    "  -p --property=KEY=VALUE  Set a global property for all events\n"
    "  -m --children-max=N      Maximum number of children\n"
    "     --ping                Wait for udev to respond to a ping message\n"
    "  -t --timeout=SECONDS     Maximum time to block for a reply\n";

constexpr char kSettleHelp[] =
    "udevadm settle [OPTIONS]\n"
    "\n"
    "Wait for pending udev events.\n"
    "\n"
    "  -h --help                 Show this help\n"
    "  -V --version              Show package version\n"
    "  -t --timeout=SEC          Maximum time to wait for events\n"
    "  -E --exit-if-exists=FILE  Stop waiting if file exists\n";

std::optional<int> LogLevel(absl::string_view text) {
  constexpr const char* kNames[] = {"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"};
  for (int i = 0; i < 8; ++i) {
    if (text == kNames[i]) return i;
  }
  int n = 0;
  if (absl::SimpleAtoi(text, &n) && n >= 0 && n <= 7) return n;
  return std::nullopt;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The same requests through hotring's own control socket, for a daemon that serves only
// that one.
int ControlThroughHotring(const std::vector<UdevControlMessage>& messages, absl::Duration timeout) {
  for (const UdevControlMessage& m : messages) {
    ControlRequest request;
    switch (m.type) {
      case UdevControlType::kExit:
        request.command = ControlCommand::kExit;
        break;
      case UdevControlType::kReload:
        request.command = ControlCommand::kReload;
        break;
      case UdevControlType::kPing:
        request.command = ControlCommand::kStatus;
        break;
      default:
        return Fail("control", "Failed to send request: hotring's control socket takes only "
                               "--exit, --reload and --ping (no /run/udev/control)");
    }
    absl::StatusOr<ControlReply> reply = Ask(kDefaultSocket, std::move(request), timeout);
    if (!reply.ok()) {
      return Fail("control", absl::StrCat("Failed to wait for daemon to reply: ", reply.status().message()));
    }
    if (!reply->ok) return Fail("control", absl::StrCat("The daemon refused: ", reply->message));
  }
  return 0;
}

}  // namespace

int ControlVerb(const std::vector<std::string>& args) {
  if (args.empty()) return Fail("control", "This command expects one or more options.");
  std::vector<UdevControlMessage> messages;
  absl::Duration timeout = absl::Seconds(60);
  bool help = false;
  bool exit_sent = false;
  std::vector<std::string> positionals;
  FlagSet flags("control", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Switch("--exit|-e", "",
              [&] {
                if (exit_sent) {
                  std::fprintf(stderr, "Cannot specify --exit after --exit, ignoring.\n");
                } else {
                  messages.push_back({.type = UdevControlType::kExit});
                  exit_sent = true;
                }
                return absl::OkStatus();
              })
      .Value("--log-level|-l", "LEVEL", "",
             [&](absl::string_view v) {
               std::optional<int> level = LogLevel(v);
               if (!level) {
                 return absl::InvalidArgumentError(absl::StrCat("Failed to parse log level '", v, "': Invalid argument"));
               }
               messages.push_back({.type = UdevControlType::kSetLogLevel, .intval = *level});
               return absl::OkStatus();
             })
      .Switch("--stop-exec-queue|-s", "",
              [&] {
                messages.push_back({.type = UdevControlType::kStopExecQueue});
                return absl::OkStatus();
              })
      .Switch("--start-exec-queue|-S", "",
              [&] {
                messages.push_back({.type = UdevControlType::kStartExecQueue});
                return absl::OkStatus();
              })
      .Switch("--reload|-R|--reload-rules", "",
              [&] {
                messages.push_back({.type = UdevControlType::kReload});
                return absl::OkStatus();
              })
      .Value("--property|-p|--env", "KEY=VALUE", "",
             [&](absl::string_view v) {
               if (v.find('=') == absl::string_view::npos) {
                 return absl::InvalidArgumentError(absl::StrCat("expect <KEY>=<value> instead of '", v, "'"));
               }
               if (v.size() >= 256) return absl::InvalidArgumentError("property too long");
               messages.push_back({.type = UdevControlType::kSetEnv, .text = std::string(v)});
               return absl::OkStatus();
             })
      .Value("--children-max|-m", "N", "",
             [&](absl::string_view v) {
               unsigned n = 0;
               if (!absl::SimpleAtoi(v, &n) || v.empty() || v[0] == '-' || v[0] == '+') {
                 return absl::InvalidArgumentError(
                     absl::StrCat("Failed to parse maximum number of children '", v, "': Invalid argument"));
               }
               messages.push_back({.type = UdevControlType::kSetChildrenMax, .intval = static_cast<int32_t>(n)});
               return absl::OkStatus();
             })
      .Switch("--ping", "",
              [&] {
                messages.push_back({.type = UdevControlType::kPing});
                return absl::OkStatus();
              })
      .Value("--timeout|-t", "SECONDS", "",
             [&](absl::string_view v) {
               if (!udevrules::ParseSeconds(v, &timeout)) {
                 return absl::InvalidArgumentError(absl::StrCat("Failed to parse timeout value '", v, "': Invalid argument"));
               }
               return absl::OkStatus();
             })
      .Positionals(&positionals);
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kControlHelp, stdout);
    return 0;
  }
  if (!positionals.empty()) return Fail("control", absl::StrCat("Extraneous argument: ", positionals[0]));
  if (messages.empty()) {
    // Only -t: 252 connects, sends nothing but the end marker and waits.
  }
  const Roots roots = Roots::FromEnvironment();
  const std::string socket = roots.Map("/run/udev/control");
  absl::Status s = SendUdevControl(socket, messages, timeout);
  if (absl::IsUnavailable(s) && Exists(std::string(kDefaultSocket))) {
    return ControlThroughHotring(messages, timeout);
  }
  if (absl::IsUnavailable(s)) {
    return Fail("control", "Failed to send request: No such file or directory");
  }
  if (!s.ok()) return Fail("control", absl::StrCat("Failed to wait for daemon to reply: ", s.message()));
  return 0;
}

int SettleVerb(const std::vector<std::string>& args) {
  absl::Duration timeout = absl::Seconds(120);
  std::string exit_if_exists;
  bool help = false;
  FlagSet flags("settle", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Value("--timeout|-t", "SEC", "",
             [&](absl::string_view v) {
               if (!udevrules::ParseSeconds(v, &timeout)) {
                 return absl::InvalidArgumentError(absl::StrCat("Failed to parse timeout value '", v, "': Invalid argument"));
               }
               return absl::OkStatus();
             })
      .String("--exit-if-exists|-E", "FILE", &exit_if_exists, "")
      // Old options 252 still takes and ignores.
      .Value("--seq-start|-s", "SEQ", "", [](absl::string_view) { return absl::OkStatus(); })
      .Value("--seq-end|-e", "SEQ", "", [](absl::string_view) { return absl::OkStatus(); })
      .Switch("--quiet|-q", "", [] { return absl::OkStatus(); });
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kSettleHelp, stdout);
    return 0;
  }
  const Roots roots = Roots::FromEnvironment();
  const Deadline deadline(timeout);
  const bool hotring = Exists(std::string(kDefaultSocket));
  if (!hotring) {
    // systemd-udevd: make sure it is not still reading its rules, then watch its queue file.
    absl::Status ping = PingUdevControl(roots.Map("/run/udev/control"),
                                        std::max(absl::Seconds(5), timeout));
    if (absl::IsUnavailable(ping)) return 0;  // no daemon: nothing is pending
    if (!ping.ok()) return Fail("settle", absl::StrCat("Failed to wait for daemon to reply: ", ping.message()));
  }
  for (;;) {
    if (!exit_if_exists.empty() && Exists(exit_if_exists)) return 0;
    bool empty = false;
    if (hotring) {
      // In slices, so that --exit-if-exists is looked at while waiting.
      const absl::Duration slice =
          exit_if_exists.empty() ? deadline.Left() : std::min(absl::Milliseconds(100), deadline.Left());
      absl::Status s = Settle(kDefaultSocket, slice);
      if (s.ok()) {
        empty = true;
      } else if (!absl::IsDeadlineExceeded(s)) {
        return Fail("settle", absl::StrCat("Failed to wait for the daemon: ", s.message()));
      }
    } else {
      empty = !Exists(roots.Map("/run/udev/queue"));
    }
    if (empty) return 0;
    if (deadline.Passed()) {
      std::fprintf(stderr, "Timeout waiting for udev queue being empty.\n");
      return 1;
    }
    if (!hotring) absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace hotring::hotplug::udevadm

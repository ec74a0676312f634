// `hotring send`: one event to the daemon, from the environment (the kernel's uevent-helper
// convention) or from --env arguments; with --wait, retransmitted until the daemon acks that
// it was handled. With --autostart (the default as `hotring-send`) a missing daemon is started,
// as udevsend did.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/cli/commands.h"
#include "hotplug/client/client.h"
#include "hotplug/client/retry_schedule.h"
#include "hotplug/wire.h"
#include "io/ops.h"
#include "io/reactor.h"

extern char** environ;

namespace hotring::hotplug {
namespace {

// Shell and login variables that are not part of an event.
bool IsShellVariable(absl::string_view key) {
  static constexpr absl::string_view kSkip[] = {
      "HOME", "PATH", "PWD", "OLDPWD", "SHLVL", "_", "TERM", "LANG", "LANGUAGE", "HOSTNAME",
      "USER", "LOGNAME", "SHELL", "MAIL", "COLUMNS", "LINES", "TZ", "SSH_CLIENT",
      "SSH_CONNECTION", "SSH_TTY", "DISPLAY", "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "MOTD_SHOWN"};
  for (const absl::string_view skip : kSkip) {
    if (key == skip) return true;
  }
  return absl::StartsWith(key, "LC_") || absl::StartsWith(key, "HOTRING_") ||
         absl::StartsWith(key, "TEST_") || absl::StartsWith(key, "BAZEL_") ||
         absl::StartsWith(key, "RUNFILES_") || absl::StartsWith(key, "GTEST_");
}

struct SendOptions {
  std::string socket = std::string(kDefaultSocket);
  EnvVars env;
  bool env_given = false;
  std::string subsystem;
  bool wait = false;
  absl::Duration wait_timeout = absl::Seconds(30);
  absl::Duration connect_timeout = absl::Seconds(5);
  bool autostart = false;
  std::vector<std::string> daemon_args;
};

// Parses `args` into `options` (after the environment's defaults); kHelpShown once --help was
// printed.
absl::StatusOr<FlagsParsed> ParseSendOptions(const std::vector<std::string>& args,
                                             SendOptions& options) {
  // As the kernel's uevent helper there are no options to pass: the environment carries them.
  if (const char* socket = std::getenv("HOTRING_SOCKET"); socket != nullptr && *socket != '\0') {
    options.socket = socket;
  }
  if (const char* extra = std::getenv("HOTRING_DAEMON_ARGS"); extra != nullptr) {
    for (const absl::string_view arg : absl::StrSplit(extra, ' ', absl::SkipEmpty())) {
      options.daemon_args.emplace_back(arg);
    }
  }
  std::vector<std::string> positionals;
  FlagSet flags("send", "usage: hotring send [SUBSYSTEM] [options]");
  flags
      .Value("--env", "KEY=VALUE",
             "an event variable (repeatable); without any, the environment is the event "
             "(ACTION, DEVPATH, SEQNUM, SUBSYSTEM, ...)",
             [&options](absl::string_view kv) {
               const size_t eq = kv.find('=');
               if (eq == absl::string_view::npos || eq == 0) {
                 return absl::InvalidArgumentError(absl::StrCat("needs KEY=VALUE, got '", kv, "'"));
               }
               options.env.emplace_back(std::string(kv.substr(0, eq)),
                                        std::string(kv.substr(eq + 1)));
               options.env_given = true;
               return absl::OkStatus();
             })
      .String("--socket", "PATH|@NAME", &options.socket,
              "daemon socket (default /run/hotring/control)")
      .OptionalValue("--wait", "S",
                     "wait until the event was handled (default 30 s), retransmitting",
                     [&options](std::optional<absl::string_view> v) {
                       options.wait = true;
                       if (!v.has_value()) return absl::OkStatus();
                       double seconds;
                       if (!absl::SimpleAtod(*v, &seconds) || seconds <= 0) {
                         return absl::InvalidArgumentError(
                             absl::StrCat("needs seconds > 0, got '", *v, "'"));
                       }
                       options.wait_timeout = absl::Seconds(seconds);
                       return absl::OkStatus();
                     })
      .Seconds("--timeout", "S", &options.connect_timeout,
               "give up reaching a daemon after S seconds (default 5)")
      .Bool("--autostart", &options.autostart, "start the daemon if none listens")
      .Strings("--daemon-arg", "ARG", &options.daemon_args,
               "extra argument for the autostarted daemon (repeatable)")
      .Text("environment: HOTRING_SOCKET (default socket), HOTRING_DAEMON_ARGS (space-separated")
      .Text("daemon arguments for --autostart); both work when invoked as hotring-send.")
      .Positionals(&positionals);
  HOTRING_ASSIGN_OR_RETURN(const FlagsParsed parsed, flags.Parse(args));
  if (parsed == FlagsParsed::kHelpShown) return parsed;
  if (positionals.size() > 1) {
    return flags.Error(absl::StrCat("unknown argument '", positionals[1], "' (try --help)"));
  }
  if (!positionals.empty()) options.subsystem = positionals[0];
  if (!options.env_given) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const absl::string_view kv(*e);
      const size_t eq = kv.find('=');
      if (eq == absl::string_view::npos || eq == 0) continue;
      const absl::string_view key = kv.substr(0, eq);
      if (IsShellVariable(key)) continue;
      options.env.emplace_back(std::string(key), std::string(kv.substr(eq + 1)));
    }
  }
  // The uevent helper gets SUBSYSTEM in argv[1] as well; add it if the env lacks it.
  if (!options.subsystem.empty()) {
    bool has = false;
    for (const auto& [key, value] : options.env) has |= key == "SUBSYSTEM";
    if (!has) options.env.emplace_back("SUBSYSTEM", options.subsystem);
  }
  return FlagsParsed::kRun;
}

// Starts `hotring daemon --socket S --ready-fd N ARGS...` detached (double fork, new session),
// so it outlives this sender (often a short-lived kernel helper). Returns the read end of its
// readiness pipe: a newline once the daemon serves, end of file if it gave up (another daemon
// won the race for the socket, or it failed and said why on stderr).
absl::StatusOr<UniqueFd> StartDaemon(const SendOptions& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  UniqueFd ready_read(pipe_fds[0]);
  UniqueFd ready_write(pipe_fds[1]);
  std::vector<std::string> argv = {"hotring",    "daemon", "--socket", options.socket,
                                   "--ready-fd", absl::StrCat(ready_write.get())};
  argv.insert(argv.end(), options.daemon_args.begin(), options.daemon_args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      // stderr stays: under a kernel helper it is already /dev/null; a shell sees the log.
    }
    ::fcntl(ready_write.get(), F_SETFD, 0);  // the one fd the daemon inherits on purpose
    ::execv("/proc/self/exe", cargv.data());
    ::_exit(127);
  }
  ready_write.Reset();  // only the daemon holds it now, so its exit reads as end of file
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ready_read;
}

// Exit code: 0 handled (or a duplicate of a handled event), 1 failed or no daemon.
Task<int> Send(io::Reactor& reactor, ControlClient& client, const SendOptions& options,
               const Event& event) {
  const uint32_t cookie = NewCookie();
  const std::string label = event.seqnum.has_value()
                                ? absl::StrCat("SEQNUM=", *event.seqnum, " ", event.devpath)
                                : event.devpath;
  const WireMessage message = EventMessage(event, cookie, options.wait);
  // Acks are retransmitted for: waits start at 500 ms and double up to 4 s, since a handler
  // may legitimately take long. A send that reached no daemon is retried after 1 ms, doubling
  // up to 50 ms (RetrySchedule), so a daemon that is starting is reached as soon as it binds.
  RetrySchedule schedule(
      {.timeout = options.wait ? std::max(options.wait_timeout, options.connect_timeout)
                               : options.connect_timeout,
       .retransmit = absl::Milliseconds(500),
       .max_retransmit = absl::Seconds(4)},
      MonoNow());
  bool started = false;
  bool queue_full = false;  // the last send found the daemon's queue full
  for (;;) {
    if (schedule.Left(MonoNow()) <= absl::ZeroDuration()) break;
    const absl::Status sent = client.Send(message);
    const absl::StatusOr<SendOutcome> outcome = OutcomeOf(sent);
    if (!outcome.ok()) {
      std::fprintf(stderr, "hotring send: %s\n", std::string(sent.message()).c_str());
      co_return 1;
    }
    queue_full = *outcome == SendOutcome::kQueueFull;
    if (*outcome == SendOutcome::kNoDaemon && options.autostart && !started) {
      started = true;
      absl::StatusOr<UniqueFd> ready = StartDaemon(options);
      if (!ready.ok()) {
        std::fprintf(stderr, "hotring send: cannot start daemon: %s\n",
                     std::string(ready.status().message()).c_str());
      } else {
        // Its word, not a poll of its socket: then send at once (or retry as usual if it gave
        // up; a daemon started by a concurrent sender may be the one that answers).
        (void)co_await io::Poll(reactor, ready->get(), POLLIN)
            .WithTimeout(std::max(schedule.Left(MonoNow()), absl::Milliseconds(1)));
        continue;
      }
    }
    if (*outcome == SendOutcome::kQueued && !options.wait) co_return 0;
    const RetryStep step = schedule.After(*outcome, MonoNow());
    if (step.kind == RetryStep::Kind::kGiveUp) break;
    if (step.kind == RetryStep::Kind::kSleep) {
      (void)co_await io::Sleep(reactor, step.wait);
      continue;
    }
    absl::StatusOr<WireMessage> reply = co_await client.Receive(reactor, cookie, step.wait);
    if (!reply.ok()) {
      if (reply.status().code() != absl::StatusCode::kDeadlineExceeded) {
        std::fprintf(stderr, "hotring send: %s\n", std::string(reply.status().message()).c_str());
        co_return 1;
      }
      continue;  // retransmit: the daemon drops the copy by SEQNUM but acks it
    }
    absl::StatusOr<Ack> ack = AckFromMessage(*reply);
    if (!ack.ok()) continue;
    switch (ack->result) {
      case EventResult::kHandled:
      case EventResult::kDuplicate:
        co_return 0;
      case EventResult::kFailed:
      case EventResult::kTimedOut:
        std::fprintf(stderr, "hotring send: %s: %s\n", label.c_str(),
                     std::string(EventResultName(ack->result)).c_str());
        co_return 1;
    }
  }
  std::fprintf(stderr, "hotring send: %s: %s from %s\n", label.c_str(),
               queue_full ? "daemon queue still full"
               : options.wait ? "no ack"
                              : "no daemon listening",
               options.socket.c_str());
  co_return 1;
}

}  // namespace

int SendCommand(const std::vector<std::string>& args) {
  SendOptions options;
  absl::StatusOr<FlagsParsed> parsed = ParseSendOptions(args, options);
  if (!parsed.ok()) return ReportError("send", parsed.status());
  if (*parsed == FlagsParsed::kHelpShown) return 0;
  absl::StatusOr<Event> event = EventFromFields(std::move(options.env), EventSource::kSend);
  if (!event.ok()) {
    return ReportError("send", absl::InvalidArgumentError(absl::StrCat(
                                   "not a valid event: ", event.status().message())));
  }
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  if (!reactor.ok()) return ReportError("send", reactor.status());
  absl::StatusOr<ControlClient> client = ControlClient::Open(options.socket);
  if (!client.ok()) return ReportError("send", client.status());
  absl::StatusOr<int> code = (*reactor)->BlockOn(Send(**reactor, *client, options, *event));
  if (!code.ok()) return ReportError("send", code.status());
  return *code;
}

int UeventHelperCommand(const std::vector<std::string>& args) {
  std::vector<std::string> send_args = {"--autostart"};
  send_args.insert(send_args.end(), args.begin(), args.end());
  return SendCommand(send_args);
}

}  // namespace hotring::hotplug

#include "hotplug/daemon/launch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hotplug/daemon/readiness.h"

namespace hotring::hotplug {
namespace {

int ExitCode(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

// "NAME: message" on stderr (a message that already names the command is not prefixed again).
void Say(absl::string_view name, const absl::Status& status) {
  absl::string_view message = status.message();
  const std::string prefix = absl::StrCat(name, ": ");
  if (absl::StartsWith(message, prefix)) message.remove_prefix(prefix.size());
  std::fprintf(stderr, "%s: %s\n", std::string(name).c_str(), std::string(message).c_str());
}

void DetachStdio(bool stdout, bool stderr) {
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return;
  ::dup2(null_fd, STDIN_FILENO);
  if (stdout) ::dup2(null_fd, STDOUT_FILENO);
  if (stderr) ::dup2(null_fd, STDERR_FILENO);
  ::close(null_fd);
}

}  // namespace

int LaunchDaemon(DaemonOptions options, LaunchOptions launch) {
  absl::StatusOr<ReadinessNotifier> readiness =
      ReadinessNotifier::Create(launch.ready_fd, launch.notify_socket);
  if (!readiness.ok()) {
    Say(launch.name, readiness.status());
    return ExitCode(readiness.status());
  }
  if (launch.daemonize) {
    // Before anything starts threads or creates an io_uring: only the child goes on.
    absl::StatusOr<std::optional<int>> parent_exit = readiness->Daemonize(launch.name);
    if (!parent_exit.ok()) {
      Say(launch.name, parent_exit.status());
      return ExitCode(parent_exit.status());
    }
    if (parent_exit->has_value()) return **parent_exit;
  }
  // A start-up error goes to whoever waits for readiness: the --daemonize parent prints it.
  auto fail = [&](const absl::Status& status) {
    readiness->Failed(status.message());
    if (!launch.daemonize) Say(launch.name, status);
    return ExitCode(status);
  };
  if (launch.setup) {
    if (absl::Status set_up = launch.setup(); !set_up.ok()) return fail(set_up);
  }
  std::unique_ptr<Handler> handler;
  if (launch.make_handler) {
    absl::StatusOr<std::unique_ptr<Handler>> made = launch.make_handler();
    if (!made.ok()) return fail(made.status());
    handler = *std::move(made);
  } else {
    handler = std::make_unique<NullHandler>();
  }
  const bool detach = launch.daemonize;
  options.on_ready = [&readiness, detach, &launch] {
    // From now on nobody reads what the caller's terminal would show; and let go of its streams
    // before the word that ends the caller's process, so that a `$(...)` or a pipe around the
    // caller ends with it.
    if (detach) DetachStdio(launch.detach_stdout, launch.detach_stderr);
    readiness->Ready();
  };
  absl::StatusOr<std::unique_ptr<Daemon>> daemon =
      Daemon::Create(std::move(options), std::move(handler));
  if (!daemon.ok()) return fail(daemon.status());
  if (launch.before_ready) launch.before_ready();
  const absl::Status run = (*daemon)->Run();
  if (!run.ok()) {
    Say(launch.name, run);
    return 1;
  }
  return 0;
}

}  // namespace hotring::hotplug

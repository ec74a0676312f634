// LaunchDaemon: the one way a daemon starts in this process, whichever command asks for it
// (`hotring daemon`, `mdev -d`, and through them `hotring init`, `hotring-send --autostart`
// and the benchmarks, which start `hotring daemon` as a child). In order:
//   readiness (--ready-fd, NOTIFY_SOCKET) -> [--daemonize: fork; the caller waits for the word]
//   -> set-up in the serving process (logging) -> the handler chain -> bind (Daemon::Create)
//   -> a step between bind and ready (mdev -d's scan) -> ready -> serve.
// A failure before ready is said once, by the waiting parent when there is one.
#ifndef HOTRING_HOTPLUG_DAEMON_LAUNCH_H_
#define HOTRING_HOTPLUG_DAEMON_LAUNCH_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "hotplug/daemon/daemon.h"
#include "hotplug/handler.h"

namespace hotring::hotplug {

struct LaunchOptions {
  // How errors start: "hotring daemon", "mdev".
  std::string name = "hotring daemon";
  // Fork; the caller's process exits 0 once the daemon serves, or with its error.
  bool daemonize = false;
  std::optional<int> ready_fd;  // --ready-fd
  std::string notify_socket;    // NOTIFY_SOCKET's value; empty: none
  // In the process that will serve, before anything else (logging, a scan of an empty /dev).
  // An error ends the start (said to the caller, as any start-up error).
  std::function<absl::Status()> setup;
  // The handler chain, made in the process that will serve.
  std::function<absl::StatusOr<std::unique_ptr<Handler>>()> make_handler;
  // Once the sockets are bound, before the daemon says it is ready (mdev -d's scan).
  std::function<void()> before_ready;
  // When daemonized and ready, stdin goes to /dev/null, and stdout and stderr unless these say
  // otherwise (busybox's `mdev -d -S` keeps them), so that the caller's pipes and $(...) see
  // their end once the caller's process exits.
  bool detach_stdout = true;
  bool detach_stderr = true;
};

// Runs a daemon as `launch` says until it stops; returns the process's exit code (0, 1 for a
// failure, 2 for a bad argument), in the parent of a --daemonize fork too.
int LaunchDaemon(DaemonOptions options, LaunchOptions launch);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_LAUNCH_H_

// Readiness: how `hotring daemon` tells whoever started it that it serves, so that nobody has
// to poll its socket. Ready means the control socket (and the netlink socket, when on) is
// bound and the reactor is about to serve: a request sent from then on is queued and answered.
//  - `--ready-fd N`: a newline on fd N, which is then closed (s6's and mdevd's convention).
//  - NOTIFY_SOCKET in the environment: `READY=1` sent there (systemd's sd_notify protocol; a
//    path, or an abstract name starting with '@').
//  - `--daemonize`: the parent waits on a pipe for the child's word and exits 0 once the child
//    serves, or with the child's exit code after printing its error.
#ifndef HOTRING_HOTPLUG_DAEMON_READINESS_H_
#define HOTRING_HOTPLUG_DAEMON_READINESS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"

namespace hotring::hotplug {

// Owns the descriptors to tell (the --ready-fd, the --daemonize pipe) and the notify socket's
// name. Tells them once: Ready() or Failed(), whichever comes first.
class ReadinessNotifier {
 public:
  // `ready_fd`: --ready-fd, which must be open (it is made close-on-exec here, so no handler
  // inherits it). `notify_socket`: NOTIFY_SOCKET's value, empty for none.
  static absl::StatusOr<ReadinessNotifier> Create(std::optional<int> ready_fd,
                                                  std::string notify_socket);

  ReadinessNotifier(ReadinessNotifier&&) = default;
  ReadinessNotifier& operator=(ReadinessNotifier&&) = default;

  // The daemon serves: a newline to the ready fd and the --daemonize pipe (both then closed),
  // READY=1 to the notify socket. A reader that went away is not an error of ours: logged.
  void Ready();
  // Start-up failed: the --daemonize parent gets `message` (and exits with the child's code);
  // the ready fd is closed without a newline, which its reader sees as end of file.
  void Failed(absl::string_view message);

  // --daemonize: forks. Returns, in the parent, the exit code to exit with once the child has
  // said it is ready (0) or has failed (its code, after printing its message to stderr as
  // "NAME: ..."); in the child (a new session; its standard streams are the caller's until the
  // launcher detaches them), nullopt, with the pipe to the parent now owned here. Call it
  // before anything starts threads or creates an io_uring.
  absl::StatusOr<std::optional<int>> Daemonize(absl::string_view name = "hotring daemon");

 private:
  ReadinessNotifier() = default;
  UniqueFd ready_fd_;
  UniqueFd parent_pipe_;  // --daemonize: to the waiting parent
  std::string notify_socket_;
  bool told_ = false;
};

// Sends `state` (e.g. "READY=1") to the sd_notify socket `name` ("/path" or "@abstract").
absl::Status SendNotify(absl::string_view name, absl::string_view state);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_READINESS_H_

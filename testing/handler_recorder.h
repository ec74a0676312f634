// HandlerRecorder: a temp dir holding a copy of testing/record_handler, for `daemon --exec`
// tests; Runs() parses what the handler recorded (which events ran, when, with which fds and
// environment). ControlSender: puts events and control requests on a daemon's control socket
// without a process per message.
#ifndef HOTRING_TESTING_HANDLER_RECORDER_H_
#define HOTRING_TESTING_HANDLER_RECORDER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/unique_fd.h"
#include "hotplug/event_parser.h"
#include "hotplug/wire.h"
#include "io/ops.h"

namespace hotring::testing {

// One line of record.log (see testing/record_handler.cc).
struct HandlerRun {
  std::string seqnum;  // "-" when the event had none
  std::string devpath;
  std::string action;
  std::string subsystem;  // argv[1]
  int64_t start = 0;      // CLOCK_MONOTONIC ns
  int64_t end = -1;       // -1: crashed
  std::string fds;        // "0,1,2"
  std::string env_keys;   // sorted, comma-separated
};

// Owns the temp dir with the handler copy and its record.log.
class HandlerRecorder {
 public:
  HandlerRecorder();
  // The program to pass to `daemon --exec`.
  [[nodiscard]] const std::string& handler() const { return handler_; }
  // The temp dir (record.log, and room for a test's gate files).
  [[nodiscard]] const std::string& dir() const { return dir_; }
  [[nodiscard]] std::vector<HandlerRun> Runs() const;
  // Runs whose DEVPATH starts with `prefix` (tests with netlink also see host devices).
  [[nodiscard]] std::vector<HandlerRun> RunsUnder(absl::string_view prefix) const;

 private:
  std::string dir_;
  std::string handler_;
};

// Owns a datagram socket (bound to an autobound abstract name, so that replies can come back)
// aimed at a daemon's control socket.
class ControlSender {
 public:
  explicit ControlSender(const std::string& socket);
  bool SendBytes(absl::string_view bytes);
  // Validates `env` as an event and sends it (no ack requested).
  bool SendEvent(const hotplug::EnvVars& env);
  // Sends a control request at once, without waiting for its reply: once this returns true,
  // the request is queued on the daemon's socket (also while the daemon is stopped), ahead of
  // whatever is sent after it.
  bool SendRequest(const hotplug::ControlRequest& request);
  // The reply with `cookie` (other datagrams are dropped), waiting up to `timeout`.
  absl::StatusOr<hotplug::ControlReply> ReceiveReply(uint32_t cookie, absl::Duration timeout);

 private:
  io::SocketAddress address_;
  UniqueFd fd_;
};

// ACTION=add, DEVPATH, SUBSYSTEM=test, SEQNUM, then `extra`.
hotplug::EnvVars TestEvent(uint64_t seqnum, const std::string& devpath,
                           hotplug::EnvVars extra = {});

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_HANDLER_RECORDER_H_

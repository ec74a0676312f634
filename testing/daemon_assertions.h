// GoogleTest helpers shared by the daemon's end-to-end fault tests: its counters, one event sent
// and settled, and the SEQNUMs of the handler runs a HandlerRecorder saw.
#ifndef HOTRING_TESTING_DAEMON_ASSERTIONS_H_
#define HOTRING_TESTING_DAEMON_ASSERTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hotplug/event.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"

namespace hotring::testing {

// `control status` as numbers; empty (and a failed expectation) when it could not be read.
inline std::map<std::string, uint64_t> Counters(const DaemonProcess& daemon) {
  auto status = daemon.Status();
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : std::map<std::string, uint64_t>{};
}

// Sends one event over the control socket and waits until the daemon has settled.
inline void SendAndSettle(const DaemonProcess& daemon, const hotplug::EnvVars& env) {
  ControlSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(env));
  ASSERT_TRUE(daemon.Settle().ok()) << daemon.Log();
}

inline std::vector<std::string> Seqnums(const std::vector<HandlerRun>& runs) {
  std::vector<std::string> out;
  for (const HandlerRun& run : runs) out.push_back(run.seqnum);
  return out;
}

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_DAEMON_ASSERTIONS_H_

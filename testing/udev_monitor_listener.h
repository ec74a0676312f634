// UdevMonitorListener: a socket on libudev's netlink group 2, as
// udev_monitor_new_from_netlink(udev, "udev") listens, for the tests of what the udev stages
// announce. Multicast reaches only sockets already bound: open it before the announcement, in
// the network namespace the stage sends in (testing/uevent_injector.h,
// EnterPrivateNetworkNamespace).
#ifndef HOTRING_TESTING_UDEV_MONITOR_LISTENER_H_
#define HOTRING_TESTING_UDEV_MONITOR_LISTENER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/unique_fd.h"

namespace hotring::testing {

// Owns the bound socket and every datagram it received. Move-only.
class UdevMonitorListener {
 public:
  static absl::StatusOr<UdevMonitorListener> Open();

  // The datagrams that arrived since the last call, in order, without waiting.
  std::vector<std::string> Receive();
  // Receive(), each decoded as libudev reads it (its properties by name); an error when one
  // does not decode.
  absl::StatusOr<std::vector<std::map<std::string, std::string>>> ReceiveAnnouncements();
  // Every datagram received so far, undecoded (the header's hashes and bloom filter).
  [[nodiscard]] const std::vector<std::string>& received() const { return received_; }

 private:
  explicit UdevMonitorListener(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  std::vector<std::string> received_;
};

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_UDEV_MONITOR_LISTENER_H_

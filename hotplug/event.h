// Event: one uevent, from the kernel's netlink group, from `hotring send`, or synthesized from
// sysfs. Owns its strings; the environment keeps arrival order.
#ifndef HOTRING_HOTPLUG_EVENT_H_
#define HOTRING_HOTPLUG_EVENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace hotring::hotplug {

// Where an event came from.
enum class EventSource { kKernel, kSend, kResync };

struct Event {
  std::string action;     // ACTION: add, remove, change, move, online, offline, bind, unbind
  std::string devpath;    // DEVPATH, always starting with '/'
  std::string subsystem;  // SUBSYSTEM (may be empty)
  std::optional<uint64_t> seqnum;
  std::string devname;    // DEVNAME, MAJOR, MINOR, MODALIAS when present
  std::string major;
  std::string minor;
  std::string modalias;
  // Every KEY=VALUE in arrival order, including the ones copied into the fields above.
  std::vector<std::pair<std::string, std::string>> env;
  EventSource source = EventSource::kKernel;

  // The value of `key` in env, or nullopt.
  [[nodiscard]] std::optional<absl::string_view> Get(absl::string_view key) const {
    for (const auto& [k, v] : env) {
      if (k == key) return absl::string_view(v);
    }
    return std::nullopt;
  }
};

// "SEQNUM=12 ACTION=add DEVPATH=/devices/x" (SEQNUM omitted when absent): how logs name events.
[[nodiscard]] std::string EventLabel(const Event& event);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_EVENT_H_

// What `hotring settle --for KEY=VALUE` waits for, and the daemon's bounded memory of the
// devices it has handled (by DEVPATH, with their properties), so a settle that comes after the
// device was handled still returns at once. Pure logic: no fds, no clock; filesystem identities
// come from the caller (fs_probe.h).
#ifndef HOTRING_HOTPLUG_HANDLED_DEVICES_H_
#define HOTRING_HOTPLUG_HANDLED_DEVICES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/event.h"
#include "hotplug/fs_probe.h"

namespace hotring::hotplug {

// One `--for KEY=VALUE`. Owns its strings.
struct SettleCondition {
  std::string key;
  std::string value;
  // LABEL and UUID name a filesystem: ID_FS_LABEL/ID_FS_UUID, or the superblock.
  [[nodiscard]] bool names_filesystem() const { return key == "LABEL" || key == "UUID"; }
  [[nodiscard]] std::string ToString() const { return key + "=" + value; }
};

// "KEY=VALUE": KEY non-empty, printable, no space; DEVNAME=/dev/vda is read as DEVNAME=vda
// (DEVNAME is relative to /dev in uevents). InvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<SettleCondition> ParseSettleCondition(absl::string_view text);

// A device as it was last handled. Owns the event and what a probe found.
struct HandledDevice {
  Event event;
  bool probed = false;              // the superblock was read (once per handling)
  std::optional<FsIdentity> fs;     // what it said (nullopt: nothing known, or not probed)
  uint64_t generation = 0;          // HandledDevices' insertion number
};

// True when `device` satisfies `condition`: an event property with that exact value; for
// LABEL/UUID, ID_FS_LABEL/ID_FS_UUID when the event has them, else the probed identity.
[[nodiscard]] bool Satisfies(const HandledDevice& device, const SettleCondition& condition);

// Whether a probe could tell more about `condition` on `device`: a LABEL/UUID condition on a
// block device with a DEVNAME that carries no ID_FS_* of its own and was not probed yet.
[[nodiscard]] bool WantsProbe(const HandledDevice& device, const SettleCondition& condition);

// The last handled event of each DEVPATH, at most `max_devices` of them (the oldest go first).
// A handled `remove` forgets the device. Owns the events.
class HandledDevices {
 public:
  explicit HandledDevices(size_t max_devices) : max_devices_(max_devices < 1 ? 1 : max_devices) {}

  // Records a handled event (moved in) and returns its entry; nullptr for `remove`.
  HandledDevice* Record(Event&& event);
  // Calls `visit` on every recorded device until it returns true.
  void ForEach(absl::FunctionRef<bool(HandledDevice&)> visit);
  [[nodiscard]] size_t size() const { return devices_.size(); }

 private:
  size_t max_devices_;
  uint64_t next_generation_ = 1;
  absl::flat_hash_map<std::string, HandledDevice> devices_;
  // (DEVPATH, generation) in recording order; stale pairs (re-recorded devices) are skipped when
  // evicting and trimmed once they outnumber the live ones.
  std::deque<std::pair<std::string, uint64_t>> order_;
};

// The conditions of one `settle --for` request and which of them a handled device has met.
// Every condition must be met, each by some device (not necessarily the same one).
class SettleWaiter {
 public:
  explicit SettleWaiter(std::vector<SettleCondition> conditions)
      : conditions_(std::move(conditions)), met_(conditions_.size(), false) {}
  // Marks the conditions `device` satisfies; true once all are met.
  bool Offer(const HandledDevice& device);
  [[nodiscard]] bool done() const;
  // The conditions not met yet, e.g. "LABEL=root, SUBSYSTEM=net".
  [[nodiscard]] std::string Unmet() const;
  [[nodiscard]] const std::vector<SettleCondition>& conditions() const { return conditions_; }
  [[nodiscard]] bool met(size_t i) const { return met_[i]; }

 private:
  std::vector<SettleCondition> conditions_;
  std::vector<bool> met_;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_HANDLED_DEVICES_H_

// What `hotring settle --for KEY=VALUE` waits for, and the daemon's bounded memory of the
// devices it has handled (by DEVPATH, with their properties), so a settle that comes after the
// device was handled still returns at once. Pure logic: no fds, no clock; filesystem identities
// come from the caller (fs_probe.h).
#ifndef HOTRING_HOTPLUG_DAEMON_HANDLED_DEVICES_H_
#define HOTRING_HOTPLUG_DAEMON_HANDLED_DEVICES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/event.h"
#include "hotplug/probe/fs_probe.h"

namespace hotring::hotplug {

// One `--for KEY=VALUE`. Owns its strings.
struct SettleCondition {
  std::string key;
  std::string value;
  // LABEL and UUID name a filesystem: ID_FS_LABEL/ID_FS_UUID, or the superblock.
  [[nodiscard]] bool names_filesystem() const { return key == "LABEL" || key == "UUID"; }
  // PARTUUID and PARTLABEL name a partition table entry (as the kernel's root= and blkid read
  // them): ID_PART_ENTRY_UUID/ID_PART_ENTRY_NAME, the uevent's PARTNAME, or the parent disk's
  // table.
  [[nodiscard]] bool names_partition() const { return key == "PARTUUID" || key == "PARTLABEL"; }
  [[nodiscard]] std::string ToString() const { return key + "=" + value; }
};

// "KEY=VALUE": KEY non-empty, printable, no space; DEVNAME=/dev/vda is read as DEVNAME=vda
// (DEVNAME is relative to /dev in uevents). InvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<SettleCondition> ParseSettleCondition(absl::string_view text);

// What settle --for asks of a handled event (DEVPATH, SUBSYSTEM, DEVNAME, every variable)
// packed into one string, each piece as a 16-bit length and its bytes. A remembered device
// costs one allocation about the size of its uevent; the Event itself (eight strings and a
// pair of strings per variable, ~850 bytes for a four-variable event) made 4,096 remembered
// devices 3.4 MB of the daemon's heap after a burst. The DEVPATH, SUBSYSTEM and DEVNAME
// variables are not packed a second time when they say what the pieces say (a flag byte
// tells that they were there): DEVPATH is the longest piece of most uevents; the names of
// common variables (ACTION, SEQNUM, MAJOR, ...) are packed as a number. The bytes are one
// block behind one pointer (a string's 32 bytes were a quarter of a remembered device).
// Owns the block.
class DeviceProperties {
 public:
  DeviceProperties() = default;
  explicit DeviceProperties(const Event& event);
  DeviceProperties(DeviceProperties&&) = default;
  DeviceProperties& operator=(DeviceProperties&&) = default;
  [[nodiscard]] absl::string_view devpath() const { return Piece(0); }
  [[nodiscard]] absl::string_view subsystem() const { return Piece(1); }
  [[nodiscard]] absl::string_view devname() const { return Piece(2); }
  // The value of variable `key`, or nullopt.
  [[nodiscard]] std::optional<absl::string_view> Get(absl::string_view key) const;
  [[nodiscard]] bool empty() const { return packed_ == nullptr; }
  // The packed bytes, the length before them included (what a remembered device costs
  // besides its slot).
  [[nodiscard]] size_t bytes() const;

 private:
  // The flag byte and the pieces (after the length).
  [[nodiscard]] absl::string_view Packed() const;
  // The n-th piece (0: DEVPATH, 1: SUBSYSTEM, 2: DEVNAME, then KEY, VALUE, KEY, ...).
  [[nodiscard]] absl::string_view Piece(size_t n) const;
  // The length of the rest (LEB128), the flag byte, then the pieces; null when empty.
  std::unique_ptr<char[]> packed_;
};

// A partition's entry in its disk's table: GPT's partition GUID and name, or MBR's
// "<disk id>-<number>" (no name). Owns its strings.
struct PartitionIdentity {
  std::string uuid;
  std::string label;
};

// What a probe of a handled block device found (nothing, when both are unset). Owns it.
struct ProbeResult {
  std::optional<probe::FsIdentity> fs;
  std::optional<PartitionIdentity> partition;
};

// A device as it was last handled: its properties and what a probe found. Owns them.
struct HandledDevice {
  DeviceProperties properties;
  // Set once the superblock (and a partition's table) was read, once per handling. A pointer:
  // few devices are probed, and every remembered device pays for what is inline here.
  std::unique_ptr<ProbeResult> probe;
  [[nodiscard]] bool probed() const { return probe != nullptr; }
  [[nodiscard]] bool empty() const { return properties.empty(); }
};

// True when `device` satisfies `condition`: an event property with that exact value; for
// LABEL/UUID, ID_FS_LABEL/ID_FS_UUID when the event has them, else the probed identity; for
// PARTUUID/PARTLABEL, ID_PART_ENTRY_UUID/ID_PART_ENTRY_NAME or PARTNAME, else the probed entry.
[[nodiscard]] bool Satisfies(const HandledDevice& device, const SettleCondition& condition);

// Whether a probe could tell more about `condition` on `device`: a LABEL/UUID condition on a
// block device with a DEVNAME that carries no ID_FS_* of its own and was not probed yet, or a
// PARTUUID/PARTLABEL condition on such a partition (PARTN set) without ID_PART_ENTRY_*.
[[nodiscard]] bool WantsProbe(const HandledDevice& device, const SettleCondition& condition);

// The last handled state of each DEVPATH among the last `max_events` handled events: a ring of
// slots, one per handled event; a device handled again moves to the newest slot, a handled
// `remove` forgets it. Events are packed (DeviceProperties), and memory is bounded. Slots are
// made as events arrive, not up front: a daemon that starts pays nothing for the ring (4,096
// empty slots were 1.6 MB to construct, most of its start-up time), and a deque keeps every
// slot where it is, so the index's keys stay valid.
// Owns the slots.
class HandledDevices {
 public:
  explicit HandledDevices(size_t max_events)
      : max_(std::clamp<size_t>(max_events, 1, std::numeric_limits<uint32_t>::max())) {}
  HandledDevices(const HandledDevices&) = delete;
  HandledDevices& operator=(const HandledDevices&) = delete;

  // Records a handled event (moved in) and returns its entry (valid until the next Record);
  // nullptr for `remove`.
  HandledDevice* Record(Event&& event);
  // The device last handled at `devpath`, or nullptr.
  [[nodiscard]] const HandledDevice* Find(absl::string_view devpath) const;
  // Calls `visit` on every recorded device until it returns true.
  void ForEach(absl::FunctionRef<bool(HandledDevice&)> visit);
  [[nodiscard]] size_t size() const { return index_.size(); }

 private:
  void Forget(absl::string_view devpath);

  // The index holds slot numbers and hashes and compares them by their slot's DEVPATH (a
  // DEVPATH looks one up): 4 bytes an entry where a view and a number were 24, 160 KiB of
  // a full record's 4,096.
  struct SlotHash {
    using is_transparent = void;
    const std::deque<HandledDevice>* slots;
    size_t operator()(uint32_t slot) const;
    size_t operator()(absl::string_view devpath) const;
  };
  struct SlotEq {
    using is_transparent = void;
    const std::deque<HandledDevice>* slots;
    [[nodiscard]] absl::string_view Key(uint32_t slot) const;
    [[nodiscard]] absl::string_view Key(absl::string_view devpath) const { return devpath; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Key(a) == Key(b);
    }
  };

  size_t max_;                      // slots at most
  std::deque<HandledDevice> slots_;  // grows to max_, then is reused as a ring
  size_t next_ = 0;                  // the slot the next event takes once slots_ is full
  // Live slots, found by DEVPATH.
  absl::flat_hash_set<uint32_t, SlotHash, SlotEq> index_{0, SlotHash{&slots_}, SlotEq{&slots_}};
};

// The conditions of one `settle --for` request and which of them a handled device has met.
// Every condition must be met, each by some device (not necessarily the same one).
class SettleWaiter {
 public:
  explicit SettleWaiter(std::vector<SettleCondition> conditions)
      : conditions_(std::move(conditions)),
        met_(conditions_.size(), false),
        met_by_(conditions_.size()) {}
  // Marks the conditions `device` satisfies; true once all are met.
  bool Offer(const HandledDevice& device);
  [[nodiscard]] bool done() const;
  // The conditions not met yet, e.g. "LABEL=root, SUBSYSTEM=net".
  [[nodiscard]] std::string Unmet() const;
  [[nodiscard]] const std::vector<SettleCondition>& conditions() const { return conditions_; }
  [[nodiscard]] bool met(size_t i) const { return met_[i]; }
  // The DEVNAME of the first device that met condition `i` ("" when unmet or it has none):
  // what `hotring init` mounts for root=LABEL=... or root=UUID=...
  [[nodiscard]] const std::string& met_by(size_t i) const { return met_by_[i]; }

 private:
  std::vector<SettleCondition> conditions_;
  std::vector<bool> met_;
  std::vector<std::string> met_by_;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_HANDLED_DEVICES_H_

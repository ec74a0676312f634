#include "hotplug/daemon/handled_devices.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hotring::hotplug {

absl::StatusOr<SettleCondition> ParseSettleCondition(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--for wants KEY=VALUE (DEVNAME=vda, SUBSYSTEM=net, LABEL=root), not '",
                     text, "'"));
  }
  SettleCondition condition{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  for (const char c : condition.key) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat("--for: bad key '", condition.key, "'"));
    }
  }
  if (condition.key == "DEVNAME" && absl::StartsWith(condition.value, "/dev/")) {
    condition.value.erase(0, 5);
  }
  return condition;
}

namespace {

// Pieces longer than this are cut (no uevent has one: the kernel's whole environment is 2 KiB,
// a sent event's datagram 8 KiB).
constexpr size_t kMaxPiece = 0xffff;

void AppendPiece(std::string& packed, absl::string_view piece) {
  piece = piece.substr(0, kMaxPiece);
  packed.push_back(static_cast<char>(piece.size() & 0xff));
  packed.push_back(static_cast<char>(piece.size() >> 8));
  packed.append(piece.data(), piece.size());
}

// Reads the piece at `at` and moves `at` past it; false at the end.
bool NextPiece(absl::string_view packed, size_t& at, absl::string_view& piece) {
  if (at + 2 > packed.size()) return false;
  const size_t length = static_cast<unsigned char>(packed[at]) |
                        (static_cast<size_t>(static_cast<unsigned char>(packed[at + 1])) << 8);
  piece = packed.substr(at + 2, length);
  at += 2 + length;
  return true;
}

std::optional<absl::string_view> FsProperty(const HandledDevice& device, absl::string_view key) {
  return device.properties.Get(key == "LABEL" ? "ID_FS_LABEL" : "ID_FS_UUID");
}

// What the event itself says of its partition entry: udev's properties, or for PARTLABEL the
// kernel's own PARTNAME (GPT names are in the uevent).
std::optional<absl::string_view> PartitionProperty(const HandledDevice& device,
                                                   absl::string_view key) {
  if (key == "PARTUUID") return device.properties.Get("ID_PART_ENTRY_UUID");
  if (std::optional<absl::string_view> name = device.properties.Get("ID_PART_ENTRY_NAME")) {
    return name;
  }
  return device.properties.Get("PARTNAME");
}

}  // namespace

DeviceProperties::DeviceProperties(const Event& event) {
  size_t bytes = 6 + event.devpath.size() + event.subsystem.size() + event.devname.size();
  for (const auto& [key, value] : event.env) bytes += 4 + key.size() + value.size();
  packed_.reserve(bytes);
  AppendPiece(packed_, event.devpath);
  AppendPiece(packed_, event.subsystem);
  AppendPiece(packed_, event.devname);
  for (const auto& [key, value] : event.env) {
    AppendPiece(packed_, key);
    AppendPiece(packed_, value);
  }
}

absl::string_view DeviceProperties::Piece(size_t n) const {
  size_t at = 0;
  absl::string_view piece;
  for (size_t i = 0; i <= n; ++i) {
    if (!NextPiece(packed_, at, piece)) return absl::string_view();
  }
  return piece;
}

std::optional<absl::string_view> DeviceProperties::Get(absl::string_view key) const {
  size_t at = 0;
  absl::string_view piece;
  for (int i = 0; i < 3; ++i) {
    if (!NextPiece(packed_, at, piece)) return std::nullopt;
  }
  absl::string_view k, v;
  while (NextPiece(packed_, at, k) && NextPiece(packed_, at, v)) {
    if (k == key) return v;
  }
  return std::nullopt;
}

bool Satisfies(const HandledDevice& device, const SettleCondition& condition) {
  if (condition.names_partition()) {
    const bool uuid = condition.key == "PARTUUID";
    std::optional<absl::string_view> v = PartitionProperty(device, condition.key);
    if (!v.has_value() && device.partition != nullptr) {
      v = uuid ? device.partition->uuid : device.partition->label;
    }
    if (!v.has_value() || v->empty()) return false;
    // The kernel compares root=PARTUUID= without regard to case; a label is exact.
    return uuid ? absl::EqualsIgnoreCase(*v, condition.value) : *v == condition.value;
  }
  if (condition.names_filesystem()) {
    if (const std::optional<absl::string_view> v = FsProperty(device, condition.key)) {
      return *v == condition.value;
    }
    if (device.fs == nullptr) return false;
    const std::string& v = condition.key == "LABEL" ? device.fs->label : device.fs->uuid;
    // blkid prints vfat ids in upper case and the rest in lower case; people type either.
    return !v.empty() && (condition.key == "UUID" ? absl::EqualsIgnoreCase(v, condition.value)
                                                   : v == condition.value);
  }
  const std::optional<absl::string_view> v = device.properties.Get(condition.key);
  return v.has_value() && *v == condition.value;
}

bool WantsProbe(const HandledDevice& device, const SettleCondition& condition) {
  if (device.probed || device.properties.subsystem() != "block" ||
      device.properties.devname().empty()) {
    return false;
  }
  if (condition.names_partition()) {
    return device.properties.Get("PARTN").has_value() &&
           !PartitionProperty(device, condition.key).has_value();
  }
  return condition.names_filesystem() && !FsProperty(device, condition.key).has_value();
}

const HandledDevice* HandledDevices::Find(absl::string_view devpath) const {
  const auto it = index_.find(devpath);
  return it == index_.end() ? nullptr : &slots_[it->second];
}

void HandledDevices::Forget(absl::string_view devpath) {
  const auto it = index_.find(devpath);
  if (it == index_.end()) return;
  const size_t slot = it->second;
  index_.erase(it);  // before the slot changes: the key views the slot's DEVPATH
  slots_[slot] = HandledDevice();
}

HandledDevice* HandledDevices::Record(Event&& event) {
  Forget(event.devpath);
  if (event.action == "remove") return nullptr;
  size_t at;
  if (slots_.size() < max_) {
    at = slots_.size();
    slots_.emplace_back();  // a deque: the slots before it stay where they are
  } else {
    at = next_;
    next_ = (next_ + 1) % max_;
  }
  HandledDevice& slot = slots_[at];
  if (!slot.empty()) Forget(slot.properties.devpath());  // the oldest device falls out
  slot.properties = DeviceProperties(event);
  slot.probed = false;
  slot.fs.reset();
  slot.partition.reset();
  // Keyed by the slot's own string (a short one lives inside it, so view it only now).
  index_.emplace(slot.properties.devpath(), at);
  return &slot;
}

void HandledDevices::ForEach(absl::FunctionRef<bool(HandledDevice&)> visit) {
  for (HandledDevice& device : slots_) {
    if (!device.empty() && visit(device)) return;
  }
}

bool SettleWaiter::Offer(const HandledDevice& device) {
  for (size_t i = 0; i < conditions_.size(); ++i) {
    if (!met_[i] && Satisfies(device, conditions_[i])) {
      met_[i] = true;
      met_by_[i] = std::string(device.properties.devname());
    }
  }
  return done();
}

bool SettleWaiter::done() const {
  for (const bool m : met_) {
    if (!m) return false;
  }
  return true;
}

std::string SettleWaiter::Unmet() const {
  std::vector<std::string> unmet;
  for (size_t i = 0; i < conditions_.size(); ++i) {
    if (!met_[i]) unmet.push_back(conditions_[i].ToString());
  }
  return absl::StrJoin(unmet, ", ");
}

}  // namespace hotring::hotplug

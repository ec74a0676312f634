#include "hotplug/daemon/handled_devices.h"

#include <cstring>
#include <iterator>
#include <memory>

#include "absl/hash/hash.h"
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

// The pieces before the variables, and the variables that say the same.
constexpr int kFieldCount = 3;
constexpr absl::string_view kFieldKeys[kFieldCount] = {"DEVPATH", "SUBSYSTEM", "DEVNAME"};

// Variables most uevents carry, packed as a number in place of their name: a key piece whose
// length field is kKeyCodeBase + the name's index here, with no bytes after it.
constexpr absl::string_view kCommonKeys[] = {
    "ACTION", "SEQNUM",   "MAJOR",     "MINOR",   "DEVTYPE", "DISKSEQ", "PARTN", "PARTNAME",
    "MODALIAS", "DRIVER", "INTERFACE", "IFINDEX", "PRODUCT", "TYPE",    "BUSNUM", "DEVNUM"};
constexpr size_t kKeyCodeBase = 0xff00;

void AppendKey(std::string& packed, absl::string_view key) {
  for (size_t i = 0; i < std::size(kCommonKeys); ++i) {
    if (key != kCommonKeys[i]) continue;
    const size_t code = kKeyCodeBase + i;
    packed.push_back(static_cast<char>(code & 0xff));
    packed.push_back(static_cast<char>(code >> 8));
    return;
  }
  // Below the codes (no uevent has a name of 65,280 bytes).
  AppendPiece(packed, key.substr(0, kKeyCodeBase - 1));
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

// Reads the key at `at` (a name, or a common one's code) and moves `at` past it; false at the
// end.
bool NextKey(absl::string_view packed, size_t& at, absl::string_view& key) {
  if (at + 2 > packed.size()) return false;
  const size_t length = static_cast<unsigned char>(packed[at]) |
                        (static_cast<size_t>(static_cast<unsigned char>(packed[at + 1])) << 8);
  if (length < kKeyCodeBase) return NextPiece(packed, at, key);
  if (length - kKeyCodeBase >= std::size(kCommonKeys)) return false;
  key = kCommonKeys[length - kKeyCodeBase];
  at += 2;
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
  // The first DEVPATH, SUBSYSTEM and DEVNAME variables, when they say what the pieces say,
  // are only flagged (Get answers them from the pieces).
  const absl::string_view fields[kFieldCount] = {event.devpath, event.subsystem, event.devname};
  uint8_t seen = 0;
  uint8_t elided = 0;
  std::vector<bool> skip(event.env.size(), false);
  for (size_t i = 0; i < event.env.size(); ++i) {
    const auto& [key, value] = event.env[i];
    for (int f = 0; f < kFieldCount; ++f) {
      if (key != kFieldKeys[f] || (seen & (1u << f)) != 0) continue;
      seen |= 1u << f;
      if (value == fields[f]) {
        elided |= 1u << f;
        skip[i] = true;
      }
    }
  }
  size_t bytes = 7 + event.devpath.size() + event.subsystem.size() + event.devname.size();
  for (size_t i = 0; i < event.env.size(); ++i) {
    if (!skip[i]) bytes += 4 + event.env[i].first.size() + event.env[i].second.size();
  }
  std::string packed;
  packed.reserve(bytes);
  packed.push_back(static_cast<char>(elided));
  for (const absl::string_view field : fields) AppendPiece(packed, field);
  for (size_t i = 0; i < event.env.size(); ++i) {
    if (skip[i]) continue;
    AppendKey(packed, event.env[i].first);
    AppendPiece(packed, event.env[i].second);
  }
  char length[10];
  size_t length_bytes = 0;
  for (size_t v = packed.size();; v >>= 7) {
    length[length_bytes++] = static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  packed_ = std::make_unique_for_overwrite<char[]>(length_bytes + packed.size());
  std::memcpy(packed_.get(), length, length_bytes);
  std::memcpy(packed_.get() + length_bytes, packed.data(), packed.size());
}

absl::string_view DeviceProperties::Packed() const {
  if (packed_ == nullptr) return absl::string_view();
  size_t length = 0;
  size_t at = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(packed_[at++]);
    length |= static_cast<size_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  return absl::string_view(packed_.get() + at, length);
}

size_t DeviceProperties::bytes() const {
  if (packed_ == nullptr) return 0;
  const absl::string_view packed = Packed();
  return static_cast<size_t>(packed.data() - packed_.get()) + packed.size();
}

absl::string_view DeviceProperties::Piece(size_t n) const {
  const absl::string_view packed = Packed();
  size_t at = 1;
  absl::string_view piece;
  for (size_t i = 0; i <= n; ++i) {
    if (!NextPiece(packed, at, piece)) return absl::string_view();
  }
  return piece;
}

std::optional<absl::string_view> DeviceProperties::Get(absl::string_view key) const {
  const absl::string_view packed = Packed();
  if (packed.empty()) return std::nullopt;
  const uint8_t elided = static_cast<uint8_t>(packed[0]);
  for (int f = 0; f < kFieldCount; ++f) {
    // The elided variable was the first of its name: it is the answer.
    if (key == kFieldKeys[f] && (elided & (1u << f)) != 0) return Piece(static_cast<size_t>(f));
  }
  size_t at = 1;
  absl::string_view piece;
  for (int i = 0; i < kFieldCount; ++i) {
    if (!NextPiece(packed, at, piece)) return std::nullopt;
  }
  absl::string_view k, v;
  while (NextKey(packed, at, k) && NextPiece(packed, at, v)) {
    if (k == key) return v;
  }
  return std::nullopt;
}

bool Satisfies(const HandledDevice& device, const SettleCondition& condition) {
  if (condition.names_partition()) {
    const bool uuid = condition.key == "PARTUUID";
    std::optional<absl::string_view> v = PartitionProperty(device, condition.key);
    if (!v.has_value() && device.probed() && device.probe->partition.has_value()) {
      v = uuid ? device.probe->partition->uuid : device.probe->partition->label;
    }
    if (!v.has_value() || v->empty()) return false;
    // The kernel compares root=PARTUUID= without regard to case; a label is exact.
    return uuid ? absl::EqualsIgnoreCase(*v, condition.value) : *v == condition.value;
  }
  if (condition.names_filesystem()) {
    if (const std::optional<absl::string_view> v = FsProperty(device, condition.key)) {
      return *v == condition.value;
    }
    if (!device.probed() || !device.probe->fs.has_value()) return false;
    const probe::FsIdentity& fs = *device.probe->fs;
    const std::string& v = condition.key == "LABEL" ? fs.label : fs.uuid;
    // blkid prints vfat ids in upper case and the rest in lower case; people type either.
    return !v.empty() && (condition.key == "UUID" ? absl::EqualsIgnoreCase(v, condition.value)
                                                   : v == condition.value);
  }
  const std::optional<absl::string_view> v = device.properties.Get(condition.key);
  return v.has_value() && *v == condition.value;
}

bool WantsProbe(const HandledDevice& device, const SettleCondition& condition) {
  if (device.probed() || device.properties.subsystem() != "block" ||
      device.properties.devname().empty()) {
    return false;
  }
  if (condition.names_partition()) {
    return device.properties.Get("PARTN").has_value() &&
           !PartitionProperty(device, condition.key).has_value();
  }
  return condition.names_filesystem() && !FsProperty(device, condition.key).has_value();
}

size_t HandledDevices::SlotHash::operator()(uint32_t slot) const {
  return (*this)((*slots)[slot].properties.devpath());
}

size_t HandledDevices::SlotHash::operator()(absl::string_view devpath) const {
  return absl::Hash<absl::string_view>()(devpath);
}

absl::string_view HandledDevices::SlotEq::Key(uint32_t slot) const {
  return (*slots)[slot].properties.devpath();
}

const HandledDevice* HandledDevices::Find(absl::string_view devpath) const {
  const auto it = index_.find(devpath);
  return it == index_.end() ? nullptr : &slots_[*it];
}

void HandledDevices::Forget(absl::string_view devpath) {
  const auto it = index_.find(devpath);
  if (it == index_.end()) return;
  const uint32_t slot = *it;
  index_.erase(it);  // before the slot changes: the entry is hashed by the slot's DEVPATH
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
  slot.probe.reset();
  index_.insert(static_cast<uint32_t>(at));  // hashed by the DEVPATH just packed
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

#include "hotplug/udev/monitor.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug::udev {
namespace {

void PutBe32(std::string& out, size_t at, uint32_t v) {
  const uint32_t be = htonl(v);
  std::memcpy(out.data() + at, &be, 4);
}

uint32_t GetBe32(absl::string_view in, size_t at) {
  uint32_t be;
  std::memcpy(&be, in.data() + at, 4);
  return ntohl(be);
}

// Header layout (struct monitor_netlink_header): prefix[8], then 8 unsigned ints.
constexpr size_t kMagicAt = 8;
constexpr size_t kHeaderSizeAt = 12;
constexpr size_t kPropertiesOffAt = 16;
constexpr size_t kPropertiesLenAt = 20;
constexpr size_t kSubsystemHashAt = 24;
constexpr size_t kDevtypeHashAt = 28;
constexpr size_t kBloomHiAt = 32;
constexpr size_t kBloomLoAt = 36;

}  // namespace

uint32_t MurmurHash2(absl::string_view key) {
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  size_t len = key.size();
  uint32_t h = static_cast<uint32_t>(len);  // seed 0 ^ len
  const unsigned char* data = reinterpret_cast<const unsigned char*>(key.data());
  while (len >= 4) {
    uint32_t k;
    std::memcpy(&k, data, 4);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
    data += 4;
    len -= 4;
  }
  switch (len) {
    case 3:
      h ^= static_cast<uint32_t>(data[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(data[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= data[0];
      h *= m;
      break;
    default:
      break;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

uint64_t TagBloomBits(absl::string_view tag) {
  const uint32_t hash = MurmurHash2(tag);
  uint64_t bits = 0;
  bits |= uint64_t{1} << (hash & 63);
  bits |= uint64_t{1} << ((hash >> 6) & 63);
  bits |= uint64_t{1} << ((hash >> 12) & 63);
  bits |= uint64_t{1} << ((hash >> 18) & 63);
  return bits;
}

absl::StatusOr<std::string> EncodeMonitorMessage(const MonitorMessage& message) {
  bool action = false, devpath = false, subsystem = false, seqnum = false;
  std::string props;
  for (const auto& [key, value] : message.properties) {
    if (key.empty() || absl::StrContains(key, '=') || absl::StrContains(key, '\0') ||
        absl::StrContains(value, '\0') || absl::StrContains(value, '\n')) {
      return absl::InvalidArgumentError(absl::StrCat("property '", key, "' cannot be sent"));
    }
    action |= key == "ACTION";
    devpath |= key == "DEVPATH";
    subsystem |= key == "SUBSYSTEM";
    seqnum |= key == "SEQNUM" && value != "0" && !value.empty();
    absl::StrAppend(&props, key, "=", value);
    props.push_back('\0');
  }
  if (!action || !devpath || !subsystem || !seqnum) {
    return absl::InvalidArgumentError("libudev needs ACTION, DEVPATH, SUBSYSTEM and a SEQNUM");
  }
  if (kMonitorHeaderSize + props.size() > kMaxMonitorMessage) {
    return absl::InvalidArgumentError(
        absl::StrCat("message of ", kMonitorHeaderSize + props.size(), " bytes exceeds libudev's ",
                     kMaxMonitorMessage));
  }
  std::string out(kMonitorHeaderSize, '\0');
  std::memcpy(out.data(), "libudev", 8);  // with its NUL
  PutBe32(out, kMagicAt, kUdevMonitorMagic);
  // header_size and the offsets are in host order (libudev compares them unconverted).
  const uint32_t header_size = kMonitorHeaderSize;
  const uint32_t off = kMonitorHeaderSize;
  const uint32_t len = static_cast<uint32_t>(props.size());
  std::memcpy(out.data() + kHeaderSizeAt, &header_size, 4);
  std::memcpy(out.data() + kPropertiesOffAt, &off, 4);
  std::memcpy(out.data() + kPropertiesLenAt, &len, 4);
  PutBe32(out, kSubsystemHashAt, MurmurHash2(message.subsystem));
  if (!message.devtype.empty()) PutBe32(out, kDevtypeHashAt, MurmurHash2(message.devtype));
  uint64_t bloom = 0;
  for (const std::string& tag : message.tags) bloom |= TagBloomBits(tag);
  if (bloom != 0) {
    PutBe32(out, kBloomHiAt, static_cast<uint32_t>(bloom >> 32));
    PutBe32(out, kBloomLoAt, static_cast<uint32_t>(bloom & 0xffffffff));
  }
  out += props;
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> DecodeMonitorMessage(
    absl::string_view datagram) {
  if (datagram.size() < 32 || datagram.substr(0, 8) != absl::string_view("libudev\0", 8)) {
    return absl::InvalidArgumentError("not a libudev message");
  }
  if (GetBe32(datagram, kMagicAt) != kUdevMonitorMagic) return absl::InvalidArgumentError("bad magic");
  uint32_t off, len;
  std::memcpy(&off, datagram.data() + kPropertiesOffAt, 4);
  std::memcpy(&len, datagram.data() + kPropertiesLenAt, 4);
  if (static_cast<uint64_t>(off) + 32 > datagram.size() || off > datagram.size() ||
      static_cast<uint64_t>(off) + len > datagram.size()) {
    return absl::InvalidArgumentError("properties outside the message");
  }
  std::vector<std::pair<std::string, std::string>> out;
  absl::string_view rest = datagram.substr(off, len);
  while (!rest.empty()) {
    const size_t nul = rest.find('\0');
    if (nul == absl::string_view::npos) return absl::InvalidArgumentError("unterminated property");
    const absl::string_view kv = rest.substr(0, nul);
    rest.remove_prefix(nul + 1);
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) return absl::InvalidArgumentError("property without '='");
    out.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return out;
}

}  // namespace hotring::hotplug::udev

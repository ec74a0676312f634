#include "hotplug/udev/control_message.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hotring::hotplug::udev {
namespace {

constexpr size_t kMagicOffset = kControlVersionSize;
constexpr size_t kTypeOffset = kMagicOffset + 4;
constexpr size_t kValueOffset = kTypeOffset + 4;

template <typename T>
T Load(absl::string_view packet, size_t offset) {
  T value;
  std::memcpy(&value, packet.data() + offset, sizeof(T));
  return value;
}

}  // namespace

absl::string_view ControlTypeName(int32_t type) {
  switch (static_cast<ControlType>(type)) {
    case ControlType::kEndMessages:
      return "END_MESSAGES";
    case ControlType::kSetLogLevel:
      return "SET_LOG_LEVEL";
    case ControlType::kStopExecQueue:
      return "STOP_EXEC_QUEUE";
    case ControlType::kStartExecQueue:
      return "START_EXEC_QUEUE";
    case ControlType::kReload:
      return "RELOAD";
    case ControlType::kSetEnv:
      return "SET_ENV";
    case ControlType::kSetChildrenMax:
      return "SET_CHILDREN_MAX";
    case ControlType::kPing:
      return "PING";
    case ControlType::kExit:
      return "EXIT";
  }
  return "UNKNOWN";
}

absl::StatusOr<ControlMessage> ParseControlMessage(absl::string_view packet) {
  if (packet.size() != kControlMessageSize) {
    return absl::InvalidArgumentError(absl::StrCat("udev control message of ", packet.size(),
                                                   " bytes (want ", kControlMessageSize, ")"));
  }
  const uint32_t magic = Load<uint32_t>(packet, kMagicOffset);
  if (magic != kControlMagic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("udev control message magic 0x%08x (want 0x%08x)", magic, kControlMagic));
  }
  ControlMessage message;
  message.type = Load<int32_t>(packet, kTypeOffset);
  message.intval = Load<int32_t>(packet, kValueOffset);
  const absl::string_view buf = packet.substr(kValueOffset, kControlBufSize - 1);
  message.text = std::string(buf.substr(0, std::min(buf.find('\0'), buf.size())));
  return message;
}

std::string EncodeControlMessage(ControlType type, int32_t intval, absl::string_view text) {
  std::string packet(kControlMessageSize, '\0');
  std::memcpy(packet.data(), kControlVersion.data(), kControlVersion.size());
  const uint32_t magic = kControlMagic;
  std::memcpy(packet.data() + kMagicOffset, &magic, 4);
  const int32_t type_number = static_cast<int32_t>(type);
  std::memcpy(packet.data() + kTypeOffset, &type_number, 4);
  if (!text.empty()) {
    text = text.substr(0, kControlBufSize - 1);
    std::memcpy(packet.data() + kValueOffset, text.data(), text.size());
  } else {
    std::memcpy(packet.data() + kValueOffset, &intval, 4);
  }
  return packet;
}

}  // namespace hotring::hotplug::udev

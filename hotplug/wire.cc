#include "hotplug/wire.h"

#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug {
namespace {

constexpr uint16_t kKnownFlags = kWireFlagWantAck;

void PutLe16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}

void PutLe32(std::string& out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t GetLe(absl::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = bytes.size(); i > 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(bytes[i - 1]);
  }
  return v;
}

std::optional<WireType> WireTypeFromByte(uint8_t b) {
  switch (b) {
    case static_cast<uint8_t>(WireType::kEvent): return WireType::kEvent;
    case static_cast<uint8_t>(WireType::kAck): return WireType::kAck;
    case static_cast<uint8_t>(WireType::kControlRequest): return WireType::kControlRequest;
    case static_cast<uint8_t>(WireType::kControlReply): return WireType::kControlReply;
    case static_cast<uint8_t>(WireType::kMonitorEvent): return WireType::kMonitorEvent;
    default: return std::nullopt;
  }
}

absl::Status ExpectType(const WireMessage& message, WireType want) {
  if (message.type == want) return absl::OkStatus();
  return DropError(DropReason::kBadType, absl::StrCat("expected a ", WireTypeName(want),
                                                      " message, got ",
                                                      WireTypeName(message.type)));
}

// The value of the field at `index` if its key is `key`.
std::optional<absl::string_view> FieldAt(const WireMessage& message, size_t index,
                                         absl::string_view key) {
  if (index >= message.fields.size() || message.fields[index].first != key) return std::nullopt;
  return absl::string_view(message.fields[index].second);
}

absl::StatusOr<EventResult> ResultField(std::optional<absl::string_view> value) {
  if (!value.has_value()) return DropError(DropReason::kBadField, "RESULT missing");
  const std::optional<EventResult> result = EventResultFromName(*value);
  if (!result.has_value()) {
    return DropError(DropReason::kBadField,
                     absl::StrCat("RESULT ", QuoteForLog(*value), " is not handled, failed, "
                                                                  "duplicate or timed_out"));
  }
  return *result;
}

}  // namespace

absl::string_view WireTypeName(WireType type) {
  switch (type) {
    case WireType::kEvent: return "event";
    case WireType::kAck: return "ack";
    case WireType::kControlRequest: return "control_request";
    case WireType::kControlReply: return "control_reply";
    case WireType::kMonitorEvent: return "monitor_event";
  }
  return "unknown";
}

std::optional<absl::string_view> WireMessage::Get(absl::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return absl::string_view(v);
  }
  return std::nullopt;
}

std::string EncodeWireMessage(const WireMessage& message) {
  size_t env_bytes = 0;
  for (const auto& [key, value] : message.fields) env_bytes += key.size() + value.size() + 2;
  std::string out;
  out.reserve(kWireHeaderBytes + env_bytes);
  out.append(kWireMagic.data(), kWireMagic.size());
  out.push_back(static_cast<char>(kWireVersion));
  out.push_back(static_cast<char>(message.type));
  PutLe16(out, message.flags);
  PutLe32(out, message.cookie);
  PutLe32(out, static_cast<uint32_t>(env_bytes));
  for (const auto& [key, value] : message.fields) {
    absl::StrAppend(&out, key, "=", value);
    out.push_back('\0');
  }
  return out;
}

absl::StatusOr<WireMessage> ParseWireMessage(absl::string_view datagram) {
  if (datagram.size() < kWireHeaderBytes) {
    return DropError(DropReason::kTruncated, absl::StrCat("datagram of ", datagram.size(),
                                                          " bytes is shorter than the ",
                                                          kWireHeaderBytes, "-byte header"));
  }
  if (datagram.size() > kMaxWireBytes) {
    return DropError(DropReason::kOversize, absl::StrCat("datagram of ", datagram.size(),
                                                         " bytes, at most ", kMaxWireBytes));
  }
  if (datagram.substr(0, 4) != kWireMagic) {
    return DropError(DropReason::kBadMagic,
                     absl::StrCat("magic ", QuoteForLog(datagram.substr(0, 4)), " is not 'HRNG'"));
  }
  const uint8_t version = static_cast<uint8_t>(datagram[4]);
  if (version != kWireVersion) {
    return DropError(DropReason::kBadVersion, absl::StrCat("protocol version ", version,
                                                           ", this side speaks ", kWireVersion));
  }
  const std::optional<WireType> type = WireTypeFromByte(static_cast<uint8_t>(datagram[5]));
  if (!type.has_value()) {
    return DropError(DropReason::kBadType,
                     absl::StrCat("unknown message type ", static_cast<uint8_t>(datagram[5])));
  }
  WireMessage message;
  message.type = *type;
  message.flags = static_cast<uint16_t>(GetLe(datagram.substr(6, 2)));
  message.cookie = GetLe(datagram.substr(8, 4));
  if ((message.flags & ~kKnownFlags) != 0) {
    return DropError(DropReason::kBadFlags, absl::StrCat("unknown flag bits 0x",
                                                         absl::Hex(message.flags & ~kKnownFlags)));
  }
  if ((message.flags & kWireFlagWantAck) != 0 && message.type != WireType::kEvent) {
    return DropError(DropReason::kBadFlags,
                     absl::StrCat("want-ack flag on a ", WireTypeName(message.type), " message"));
  }
  const uint32_t length = GetLe(datagram.substr(12, 4));
  absl::string_view block = datagram.substr(kWireHeaderBytes);
  if (block.size() < length) {
    return DropError(DropReason::kTruncated, absl::StrCat("header declares ", length,
                                                          " env bytes, datagram has ",
                                                          block.size()));
  }
  if (block.size() > length) {
    return DropError(DropReason::kTrailingData,
                     absl::StrCat(block.size() - length, " bytes after the declared ", length,
                                  " env bytes"));
  }
  if (!block.empty() && block.back() != '\0') {
    const size_t last = block.rfind('\0');
    const absl::string_view tail = last == absl::string_view::npos ? block : block.substr(last + 1);
    return DropError(DropReason::kTruncated,
                     absl::StrCat("last field ", QuoteForLog(tail), " is not NUL-terminated"));
  }
  // Split and check first, then build the owned strings into a vector of the exact size: a
  // growing vector of string pairs would move every field again on each doubling.
  absl::InlinedVector<std::pair<absl::string_view, absl::string_view>, 32> split;
  size_t offset = kWireHeaderBytes;
  while (!block.empty()) {
    // Found: the block ends with NUL.
    const auto* const nul = static_cast<const char*>(std::memchr(block.data(), '\0', block.size()));
    const size_t end = static_cast<size_t>(nul - block.data());
    const absl::string_view entry = block.substr(0, end);
    block.remove_prefix(end + 1);
    if (entry.empty()) {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("empty field (NUL inside the env block at offset ", offset,
                                    ")"));
    }
    offset += end + 1;
    if (split.size() == kMaxWireFields) {
      return DropError(DropReason::kTooManyVariables,
                       absl::StrCat("more than ", kMaxWireFields, " fields"));
    }
    const auto* const eq = static_cast<const char*>(std::memchr(entry.data(), '=', entry.size()));
    if (eq == nullptr) {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("field ", QuoteForLog(entry), " has no '='"));
    }
    const size_t key_size = static_cast<size_t>(eq - entry.data());
    if (key_size == 0) {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("field ", QuoteForLog(entry), " has an empty key"));
    }
    const absl::string_view key = entry.substr(0, key_size);
    if (absl::Status s = ValidateEnvKey(key); !s.ok()) return s;
    split.emplace_back(key, entry.substr(key_size + 1));
  }
  message.fields.reserve(split.size());
  for (const auto& [key, value] : split) {
    message.fields.emplace_back(std::piecewise_construct, std::forward_as_tuple(key.data(), key.size()),
                                std::forward_as_tuple(value.data(), value.size()));
  }
  return message;
}

// ---- Events ----

absl::StatusOr<Event> EventFromFields(EnvVars fields, EventSource source) {
  return EventFromEnv(std::move(fields), source);
}

EnvVars FieldsFromEvent(const Event& event) { return event.env; }

WireMessage EventMessage(const Event& event, uint32_t cookie, bool want_ack) {
  WireMessage message;
  message.type = WireType::kEvent;
  message.flags = want_ack ? kWireFlagWantAck : 0;
  message.cookie = cookie;
  message.fields = FieldsFromEvent(event);
  return message;
}

absl::StatusOr<Event> EventFromMessage(WireMessage message) {
  if (absl::Status s = ExpectType(message, WireType::kEvent); !s.ok()) return s;
  return EventFromFields(std::move(message.fields), EventSource::kSend);
}

// ---- Acks and monitor events ----

absl::string_view EventResultName(EventResult result) {
  switch (result) {
    case EventResult::kHandled: return "handled";
    case EventResult::kFailed: return "failed";
    case EventResult::kDuplicate: return "duplicate";
    case EventResult::kTimedOut: return "timed_out";
  }
  return "unknown";
}

std::optional<EventResult> EventResultFromName(absl::string_view name) {
  for (const EventResult r : {EventResult::kHandled, EventResult::kFailed, EventResult::kDuplicate,
                              EventResult::kTimedOut}) {
    if (EventResultName(r) == name) return r;
  }
  return std::nullopt;
}

WireMessage AckMessage(const Ack& ack) {
  WireMessage message;
  message.type = WireType::kAck;
  message.cookie = ack.cookie;
  message.fields.emplace_back("RESULT", std::string(EventResultName(ack.result)));
  if (ack.seqnum.has_value()) message.fields.emplace_back("SEQNUM", absl::StrCat(*ack.seqnum));
  return message;
}

absl::StatusOr<Ack> AckFromMessage(const WireMessage& message) {
  if (absl::Status s = ExpectType(message, WireType::kAck); !s.ok()) return s;
  Ack ack;
  ack.cookie = message.cookie;
  const absl::StatusOr<EventResult> result = ResultField(message.Get("RESULT"));
  if (!result.ok()) return result.status();
  ack.result = *result;
  if (const std::optional<absl::string_view> seqnum = message.Get("SEQNUM"); seqnum.has_value()) {
    ack.seqnum = ParseDecimalU64(*seqnum);
    if (!ack.seqnum.has_value()) {
      return DropError(DropReason::kBadField,
                       absl::StrCat("ack SEQNUM ", QuoteForLog(*seqnum), " is not a number"));
    }
  }
  return ack;
}

WireMessage MonitorEventMessage(const MonitorEvent& monitor_event, uint32_t cookie) {
  WireMessage message;
  message.type = WireType::kMonitorEvent;
  message.cookie = cookie;
  message.fields.reserve(monitor_event.event.env.size() + 2);
  message.fields.emplace_back("RESULT", std::string(EventResultName(monitor_event.result)));
  message.fields.emplace_back("DURATION_US", absl::StrCat(monitor_event.duration_us));
  message.fields.insert(message.fields.end(), monitor_event.event.env.begin(),
                        monitor_event.event.env.end());
  return message;
}

absl::StatusOr<MonitorEvent> MonitorEventFromMessage(WireMessage message) {
  if (absl::Status s = ExpectType(message, WireType::kMonitorEvent); !s.ok()) return s;
  MonitorEvent out;
  absl::StatusOr<EventResult> result = ResultField(FieldAt(message, 0, "RESULT"));
  if (!result.ok()) return result.status();
  out.result = *result;
  const std::optional<absl::string_view> duration = FieldAt(message, 1, "DURATION_US");
  const std::optional<uint64_t> duration_us =
      duration.has_value() ? ParseDecimalU64(*duration) : std::nullopt;
  if (!duration_us.has_value()) {
    return DropError(DropReason::kBadField, "second field is not DURATION_US=<decimal>");
  }
  out.duration_us = *duration_us;
  message.fields.erase(message.fields.begin(), message.fields.begin() + 2);
  absl::StatusOr<Event> event = EventFromFields(std::move(message.fields), EventSource::kSend);
  if (!event.ok()) return event.status();
  out.event = *std::move(event);
  return out;
}

// ---- Control ----

absl::string_view ControlCommandName(ControlCommand command) {
  switch (command) {
    case ControlCommand::kStatus: return "status";
    case ControlCommand::kExit: return "exit";
    case ControlCommand::kReload: return "reload";
    case ControlCommand::kSettle: return "settle";
    case ControlCommand::kMonitor: return "monitor";
    case ControlCommand::kUnmonitor: return "unmonitor";
    case ControlCommand::kPending: return "pending";
    case ControlCommand::kTimeline: return "timeline";
  }
  return "unknown";
}

std::optional<ControlCommand> ControlCommandFromName(absl::string_view name) {
  for (const ControlCommand c : {ControlCommand::kStatus, ControlCommand::kExit,
                                 ControlCommand::kReload, ControlCommand::kSettle,
                                 ControlCommand::kMonitor, ControlCommand::kUnmonitor,
                                 ControlCommand::kPending, ControlCommand::kTimeline}) {
    if (ControlCommandName(c) == name) return c;
  }
  return std::nullopt;
}

WireMessage ControlRequestMessage(const ControlRequest& request) {
  WireMessage message;
  message.type = WireType::kControlRequest;
  message.cookie = request.cookie;
  message.fields.reserve(request.options.size() + 1);
  message.fields.emplace_back("COMMAND", std::string(ControlCommandName(request.command)));
  message.fields.insert(message.fields.end(), request.options.begin(), request.options.end());
  return message;
}

absl::StatusOr<ControlRequest> ControlRequestFromMessage(WireMessage message) {
  if (absl::Status s = ExpectType(message, WireType::kControlRequest); !s.ok()) return s;
  const std::optional<absl::string_view> name = FieldAt(message, 0, "COMMAND");
  if (!name.has_value()) return DropError(DropReason::kBadField, "first field is not COMMAND");
  const std::optional<ControlCommand> command = ControlCommandFromName(*name);
  if (!command.has_value()) {
    return DropError(DropReason::kBadField,
                     absl::StrCat("unknown COMMAND ", QuoteForLog(*name)));
  }
  ControlRequest request;
  request.cookie = message.cookie;
  request.command = *command;
  message.fields.erase(message.fields.begin());
  request.options = std::move(message.fields);
  return request;
}

WireMessage ControlReplyMessage(const ControlReply& reply) {
  WireMessage message;
  message.type = WireType::kControlReply;
  message.cookie = reply.cookie;
  message.fields.reserve(reply.fields.size() + 2);
  message.fields.emplace_back("STATUS", reply.ok ? "ok" : "error");
  // The second field is the MESSAGE when it is named so: an empty one is written too when the
  // first data field is named MESSAGE, or the receiver would take that datum for the message.
  const bool data_named_message = !reply.fields.empty() && reply.fields.front().first == "MESSAGE";
  if (!reply.message.empty() || data_named_message) {
    message.fields.emplace_back("MESSAGE", reply.message);
  }
  message.fields.insert(message.fields.end(), reply.fields.begin(), reply.fields.end());
  return message;
}

absl::StatusOr<ControlReply> ControlReplyFromMessage(WireMessage message) {
  if (absl::Status s = ExpectType(message, WireType::kControlReply); !s.ok()) return s;
  const std::optional<absl::string_view> status = FieldAt(message, 0, "STATUS");
  if (!status.has_value() || (*status != "ok" && *status != "error")) {
    return DropError(DropReason::kBadField, "first field is not STATUS=ok|error");
  }
  ControlReply reply;
  reply.cookie = message.cookie;
  reply.ok = *status == "ok";
  size_t data_start = 1;
  if (const std::optional<absl::string_view> text = FieldAt(message, 1, "MESSAGE");
      text.has_value()) {
    reply.message = std::string(*text);
    data_start = 2;
  }
  message.fields.erase(message.fields.begin(), message.fields.begin() + data_start);
  reply.fields = std::move(message.fields);
  return reply;
}

}  // namespace hotring::hotplug

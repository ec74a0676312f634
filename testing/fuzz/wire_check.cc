#include "testing/fuzz/wire_check.h"

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "hotplug/drop_reason.h"
#include "hotplug/event.h"
#include "hotplug/wire.h"
#include "testing/fuzz/fuzz_check.h"

namespace hotring::fuzz {
namespace {

using hotplug::WireMessage;
using hotplug::WireType;

// Encodes and parses again: every message a decoder builds must cross the wire.
WireMessage Reparse(const WireMessage& message) {
  const std::string datagram = hotplug::EncodeWireMessage(message);
  Require(datagram.size() <= hotplug::kMaxWireBytes, "a decoded message re-encodes within bounds");
  absl::StatusOr<WireMessage> parsed = hotplug::ParseWireMessage(datagram);
  Require(parsed.ok(), "a decoded message re-encodes to a valid datagram");
  return *std::move(parsed);
}

// `result` came from a decoder that is not the one for the message's type.
template <typename T>
void RequireBadType(const absl::StatusOr<T>& result) {
  Require(!result.ok(), "only the decoder of the message's type accepts it");
  RequireDropError(result.status());
  Require(hotplug::DropReasonOf(result.status()) == hotplug::DropReason::kBadType,
          "another type's decoder says bad_type");
}

void CheckEvent(const WireMessage& message) {
  absl::StatusOr<hotplug::Event> event = hotplug::EventFromMessage(message);
  if (message.type != WireType::kEvent) return RequireBadType(event);
  if (!event.ok()) return RequireDropError(event.status());
  RequireValidEvent(*event);
  const bool want_ack = (message.flags & hotplug::kWireFlagWantAck) != 0;
  // The env is kept as sent, so the event re-encodes to the very same message.
  const WireMessage again = hotplug::EventMessage(*event, message.cookie, want_ack);
  Require(again.fields == message.fields && again.flags == message.flags,
          "an event message is rebuilt exactly from its event");
}

void CheckAck(const WireMessage& message) {
  const absl::StatusOr<hotplug::Ack> ack = hotplug::AckFromMessage(message);
  if (message.type != WireType::kAck) return RequireBadType(ack);
  if (!ack.ok()) return RequireDropError(ack.status());
  const absl::StatusOr<hotplug::Ack> again =
      hotplug::AckFromMessage(Reparse(hotplug::AckMessage(*ack)));
  Require(again.ok() && again->cookie == ack->cookie && again->seqnum == ack->seqnum &&
              again->result == ack->result,
          "an ack round-trips");
}

void CheckMonitorEvent(const WireMessage& message) {
  const absl::StatusOr<hotplug::MonitorEvent> seen = hotplug::MonitorEventFromMessage(message);
  if (message.type != WireType::kMonitorEvent) return RequireBadType(seen);
  if (!seen.ok()) return RequireDropError(seen.status());
  RequireValidEvent(seen->event);
  const absl::StatusOr<hotplug::MonitorEvent> again = hotplug::MonitorEventFromMessage(
      Reparse(hotplug::MonitorEventMessage(*seen, message.cookie)));
  Require(again.ok() && SameEvent(again->event, seen->event) && again->result == seen->result &&
              again->duration_us == seen->duration_us,
          "a monitor event round-trips");
}

void CheckControlRequest(const WireMessage& message) {
  const absl::StatusOr<hotplug::ControlRequest> request =
      hotplug::ControlRequestFromMessage(message);
  if (message.type != WireType::kControlRequest) return RequireBadType(request);
  if (!request.ok()) return RequireDropError(request.status());
  Require(hotplug::ControlCommandFromName(hotplug::ControlCommandName(request->command)) ==
              request->command,
          "command names round-trip");
  const absl::StatusOr<hotplug::ControlRequest> again =
      hotplug::ControlRequestFromMessage(Reparse(hotplug::ControlRequestMessage(*request)));
  Require(again.ok() && again->cookie == request->cookie && again->command == request->command &&
              again->options == request->options,
          "a control request round-trips");
}

void CheckControlReply(const WireMessage& message) {
  const absl::StatusOr<hotplug::ControlReply> reply = hotplug::ControlReplyFromMessage(message);
  if (message.type != WireType::kControlReply) return RequireBadType(reply);
  if (!reply.ok()) return RequireDropError(reply.status());
  const absl::StatusOr<hotplug::ControlReply> again =
      hotplug::ControlReplyFromMessage(Reparse(hotplug::ControlReplyMessage(*reply)));
  Require(again.ok() && again->cookie == reply->cookie && again->ok == reply->ok &&
              again->message == reply->message && again->fields == reply->fields,
          "a control reply round-trips");
}

}  // namespace

void CheckWireDatagram(absl::string_view datagram) {
  const absl::StatusOr<WireMessage> message = hotplug::ParseWireMessage(datagram);
  if (!message.ok()) return RequireDropError(message.status());
  Require(message->fields.size() <= hotplug::kMaxWireFields, "field bound");
  Require(hotplug::EncodeWireMessage(*message) == datagram,
          "a parsed message encodes back to the same bytes");
  CheckEvent(*message);
  CheckAck(*message);
  CheckMonitorEvent(*message);
  CheckControlRequest(*message);
  CheckControlReply(*message);
}

}  // namespace hotring::fuzz

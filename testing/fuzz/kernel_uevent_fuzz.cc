// Fuzzes ParseKernelUevent with raw netlink datagrams. Beyond "no crash": every rejection is a
// DropError with its reason; every accepted event keeps EventFromEnv's invariants, encodes back
// to a datagram that parses to the same event, and travels unchanged through the wire protocol
// (as `send` and as a monitor event), which every valid event must fit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hotplug/event.h"
#include "hotplug/event_parser.h"
#include "hotplug/wire.h"
#include "testing/fuzz/fuzz_check.h"

namespace hotring::fuzz {
namespace {

using hotplug::Event;

void CheckWireRoundTrip(const Event& event) {
  const std::string datagram = hotplug::EncodeWireMessage(hotplug::EventMessage(event, 42, true));
  Require(datagram.size() <= hotplug::kMaxWireBytes, "a valid event fits in one wire message");
  absl::StatusOr<hotplug::WireMessage> message = hotplug::ParseWireMessage(datagram);
  Require(message.ok(), "the wire parser takes an encoded event");
  Require(message->cookie == 42 && (message->flags & hotplug::kWireFlagWantAck) != 0,
          "cookie and want-ack survive");
  const absl::StatusOr<Event> sent = hotplug::EventFromMessage(std::move(*message));
  Require(sent.ok() && SameEvent(*sent, event), "the event survives the wire");
  Require(sent->source == hotplug::EventSource::kSend, "wire events are from send");

  const hotplug::MonitorEvent seen{event, hotplug::EventResult::kTimedOut, 123};
  const std::string monitor =
      hotplug::EncodeWireMessage(hotplug::MonitorEventMessage(seen, 7));
  Require(monitor.size() <= hotplug::kMaxWireBytes, "a valid event fits in a monitor message");
  absl::StatusOr<hotplug::WireMessage> monitor_message = hotplug::ParseWireMessage(monitor);
  Require(monitor_message.ok(), "the wire parser takes a monitor event");
  const absl::StatusOr<hotplug::MonitorEvent> back =
      hotplug::MonitorEventFromMessage(std::move(*monitor_message));
  Require(back.ok() && SameEvent(back->event, event) &&
              back->result == hotplug::EventResult::kTimedOut && back->duration_us == 123,
          "the event survives a monitor message");
}

}  // namespace
}  // namespace hotring::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hotring::fuzz;
  const absl::string_view datagram = AsText(data, size);
  const absl::StatusOr<hotring::hotplug::Event> event = hotring::hotplug::ParseKernelUevent(datagram);
  if (!event.ok()) {
    RequireDropError(event.status());
    return 0;
  }
  RequireValidEvent(*event);
  Require(event->source == hotring::hotplug::EventSource::kKernel, "kernel events are from the kernel");
  Require(event->env.size() <= hotring::hotplug::kMaxEventVariables, "variable bound");
  for (const auto& [key, value] : event->env) {
    Require(value.find_first_of("\r\n") == std::string::npos, "values are cut at a newline");
  }
  const std::string encoded = hotring::hotplug::EncodeKernelUevent(*event);
  Require(encoded.size() <= datagram.size(), "re-encoding never grows the datagram");
  const absl::StatusOr<hotring::hotplug::Event> again = hotring::hotplug::ParseKernelUevent(encoded);
  Require(again.ok() && SameEvent(*again, *event), "encode then parse gives the same event");
  CheckWireRoundTrip(*event);
  return 0;
}

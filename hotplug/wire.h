// Our datagram protocol on the daemon's Unix control socket, spoken by `hotring send`, `settle`,
// `control` and `monitor`. Pure encode/decode: no fds, no clock. The full description, with
// examples, is docs/protocol.md; keep the two in step.
//
// Layout (all integers little-endian; one message per datagram, at most kMaxWireBytes):
//
//   offset size field
//   0      4    magic    "HRNG" (0x48 0x52 0x4e 0x47)
//   4      1    version  kWireVersion (1)
//   5      1    type     WireType
//   6      2    flags    kWireFlag* bits; unknown bits are rejected
//   8      4    cookie   chosen by the requester; every reply echoes it
//   12     4    length   bytes of the env block that follows (datagram size - 16)
//   16     ...  env      "KEY=VALUE\0" repeated; every entry NUL-terminated; may be empty
//
// Fields per type (order matters where it says "first"):
//   kEvent           the event's env (ACTION, DEVPATH, SEQNUM, ...). Flag kWireFlagWantAck:
//                    reply with a kAck once the event was handled (or found a duplicate).
//   kAck             RESULT=handled|failed|duplicate|timed_out, SEQNUM=N when the event had one;
//                    cookie = the event message's cookie.
//   kControlRequest  first COMMAND=status|exit|reload|settle|monitor|unmonitor|pending|timeline,
//                    then options
//                    (free-form KEY=VALUE, meaning defined by the command).
//   kControlReply    first STATUS=ok|error, then optionally MESSAGE=text, then data fields in
//                    order (for `status`: one field per counter, e.g. received=12).
//   kMonitorEvent    first RESULT=..., then DURATION_US=N, then the handled event's env.
// Positional "first" fields keep a reply's data or an event's env free to use any key.
//
// Errors: ParseWireMessage and the *FromMessage decoders fail with a DropError (drop_reason.h),
// the same reasons as the kernel parser plus bad_magic, bad_version, bad_type, bad_flags,
// trailing_data and bad_field.
#ifndef HOTRING_HOTPLUG_WIRE_H_
#define HOTRING_HOTPLUG_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/drop_reason.h"
#include "hotplug/event.h"
#include "hotplug/event_parser.h"

namespace hotring::hotplug {

inline constexpr absl::string_view kWireMagic = "HRNG";
inline constexpr uint8_t kWireVersion = 1;
inline constexpr size_t kWireHeaderBytes = 16;
// Whole datagram, header included (the same 8 KiB as the kernel format).
inline constexpr size_t kMaxWireBytes = kMaxDatagramBytes;
// Fields per message; control replies carry one per counter, events at most kMaxEventVariables
// (+2 for a monitor event).
inline constexpr size_t kMaxWireFields = 256;

// kEvent only: the sender waits for a kAck.
inline constexpr uint16_t kWireFlagWantAck = 0x0001;

enum class WireType : uint8_t {
  kEvent = 1,
  kAck = 2,
  kControlRequest = 3,
  kControlReply = 4,
  kMonitorEvent = 5,
};
[[nodiscard]] absl::string_view WireTypeName(WireType type);  // "event", "ack", ...

// One decoded datagram: header values and the env block as ordered KEY=VALUE pairs. Owns them.
struct WireMessage {
  WireType type = WireType::kEvent;
  uint16_t flags = 0;
  uint32_t cookie = 0;
  EnvVars fields;

  // The first value of `key`, or nullopt.
  [[nodiscard]] std::optional<absl::string_view> Get(absl::string_view key) const;
};

// Header + env block. Precondition: keys non-empty without '=' or NUL, values without NUL, and
// the result at most kMaxWireBytes (otherwise the receiver drops it as bad_variable/oversize).
// Every message built by the *Message functions below from validated data satisfies it; in
// particular any Event accepted by EventFromEnv fits, also inside a kMonitorEvent.
[[nodiscard]] std::string EncodeWireMessage(const WireMessage& message);

// Checks the header (size, magic, version, type, flags, length) and splits the env block; key
// rules as in EventFromEnv (non-empty, printable, no '='), at most kMaxWireFields. Type-specific
// content (is it a valid event, a known COMMAND, ...) is checked by the decoders below, so an
// event is validated once.
[[nodiscard]] absl::StatusOr<WireMessage> ParseWireMessage(absl::string_view datagram);

// ---- Events ----

// EventFromEnv with source kSend: the same validation as the kernel parser.
[[nodiscard]] absl::StatusOr<Event> EventFromFields(EnvVars fields,
                                                    EventSource source = EventSource::kSend);
// The event's env, in order (the named fields are derived from it).
[[nodiscard]] EnvVars FieldsFromEvent(const Event& event);

[[nodiscard]] WireMessage EventMessage(const Event& event, uint32_t cookie, bool want_ack);
// A kEvent message's event (bad_type for another type).
[[nodiscard]] absl::StatusOr<Event> EventFromMessage(WireMessage message);

// ---- Acks and monitor events ----

// What became of an event.
enum class EventResult { kHandled, kFailed, kDuplicate, kTimedOut };
[[nodiscard]] absl::string_view EventResultName(EventResult result);  // "handled", "timed_out"
[[nodiscard]] std::optional<EventResult> EventResultFromName(absl::string_view name);

// Reply to a kEvent sent with kWireFlagWantAck.
struct Ack {
  uint32_t cookie = 0;             // the event message's cookie
  std::optional<uint64_t> seqnum;  // the event's SEQNUM, when it had one
  EventResult result = EventResult::kHandled;
};
[[nodiscard]] WireMessage AckMessage(const Ack& ack);
// bad_type for another type; bad_field for a missing/unknown RESULT or a bad SEQNUM.
[[nodiscard]] absl::StatusOr<Ack> AckFromMessage(const WireMessage& message);

// One handled event as a monitor sees it. Owns the event.
struct MonitorEvent {
  Event event;
  EventResult result = EventResult::kHandled;
  uint64_t duration_us = 0;  // from release to the end of handling
};
// `cookie`: the cookie of the monitor's `monitor` request, so it can tell subscriptions apart.
[[nodiscard]] WireMessage MonitorEventMessage(const MonitorEvent& monitor_event, uint32_t cookie);
// bad_type / bad_field as above; the event part is validated like EventFromFields.
[[nodiscard]] absl::StatusOr<MonitorEvent> MonitorEventFromMessage(WireMessage message);

// ---- Control ----

enum class ControlCommand {
  kStatus,
  kExit,
  kReload,
  kSettle,     // options: FOR=KEY=VALUE (repeatable): only until matching devices are handled
  kMonitor,
  kUnmonitor,
  kPending,    // what is held, queued or running, and where (bounded)
  kTimeline,   // kept timeline lines; option FROM=N (line number to start at)
};
[[nodiscard]] absl::string_view ControlCommandName(ControlCommand command);  // "status", ...
[[nodiscard]] std::optional<ControlCommand> ControlCommandFromName(absl::string_view name);

// A request from `hotring control|settle|monitor`. Owns its options.
struct ControlRequest {
  uint32_t cookie = 0;
  ControlCommand command = ControlCommand::kStatus;
  EnvVars options;  // free-form, e.g. TIMEOUT_MS=5000 for settle
};
[[nodiscard]] WireMessage ControlRequestMessage(const ControlRequest& request);
// bad_type; bad_field when the first field is not a known COMMAND.
[[nodiscard]] absl::StatusOr<ControlRequest> ControlRequestFromMessage(WireMessage message);

// The daemon's answer to a ControlRequest. Owns its fields.
struct ControlReply {
  uint32_t cookie = 0;  // the request's cookie
  bool ok = true;       // STATUS=ok|error
  std::string message;  // MESSAGE, omitted from the wire when empty (unless the first
                        // data field is itself named MESSAGE)
  EnvVars fields;       // data in order, e.g. counters for `status`
};
[[nodiscard]] WireMessage ControlReplyMessage(const ControlReply& reply);
// bad_type; bad_field when the first field is not STATUS=ok|error.
[[nodiscard]] absl::StatusOr<ControlReply> ControlReplyFromMessage(WireMessage message);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_WIRE_H_

// DropReason: why an incoming datagram (kernel uevent or our wire protocol) was dropped. Every
// parse error of event_parser.h and wire.h carries exactly one DropReason, so the daemon can
// count `dropped_<name>` per reason without matching message text.
//
// How the reason travels: the parsers return an absl::Status (code kInvalidArgument) whose
// message is "<name>: <detail>" and which carries a payload under kDropReasonPayloadUrl holding
// the reason's name. DropReasonOf(status) reads it back. A Status was chosen over a custom error
// type so the parsers compose with HOTRING_ASSIGN_OR_RETURN and every other StatusOr caller.
#ifndef HOTRING_HOTPLUG_DROP_REASON_H_
#define HOTRING_HOTPLUG_DROP_REASON_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hotring::hotplug {

// Names (DropReasonName) are stable: they appear in `hotring control status` as
// `dropped_<name>` and in logs. Append new reasons; never rename or reuse one.
enum class DropReason {
  // Produced by the parsers (both formats unless noted).
  kOversize,          // oversize: datagram over 8 KiB, or env block over its limit
  kTruncated,         // truncated: empty, shorter than a header, or last string not NUL-terminated
  kLibudevHeader,     // libudev_header: kernel socket got a libudev ("libudev\0") message
  kBadHeader,         // bad_header: kernel "ACTION@DEVPATH" header malformed
  kHeaderMismatch,    // header_mismatch: kernel header disagrees with ACTION/DEVPATH in env
  kBadAction,         // bad_action: ACTION missing, empty or with invalid characters
  kBadDevpath,        // bad_devpath: DEVPATH missing or not a canonical absolute path
  kBadSeqnum,         // bad_seqnum: SEQNUM not a decimal number that fits 64 bits
  kBadVariable,       // bad_variable: no '=', empty key, NUL inside, bad key byte, duplicate key
  kTooManyVariables,  // too_many_variables: more than 64 event variables (256 wire fields)
  kBadMagic,          // bad_magic: wire header magic is not "HRNG"
  kBadVersion,        // bad_version: wire protocol version we do not speak
  kBadType,           // bad_type: unknown wire message type
  kBadFlags,          // bad_flags: flag bits unknown or not allowed for the message type
  kTrailingData,      // trailing_data: bytes after the length the wire header declares
  kBadField,          // bad_field: a required wire field (RESULT, COMMAND, ...) missing or invalid
  // Not produced by the parsers: the daemon's own drop points, listed here so every
  // `dropped_<reason>` counter comes from one enum.
  kUnprivileged,   // unprivileged: sender's uid is neither 0 nor the daemon's
  kNoCredentials,  // no_credentials: datagram without SCM_CREDENTIALS
  kDuplicate,      // duplicate: SEQNUM already released or held by the reorderer
  kQueueFull,      // queue_full: the daemon's queue bound was reached
};

// The stable snake_case name, e.g. "bad_seqnum".
[[nodiscard]] absl::string_view DropReasonName(DropReason reason);

// The reason named `name`, or nullopt.
[[nodiscard]] std::optional<DropReason> DropReasonFromName(absl::string_view name);

// Every reason, in declaration order (for counter tables).
[[nodiscard]] absl::Span<const DropReason> AllDropReasons();

// The Status payload type URL under which a parse error carries its reason's name.
inline constexpr absl::string_view kDropReasonPayloadUrl = "hotring.hotplug.DropReason";

// An InvalidArgument Status "<name>: <detail>" carrying `reason` as payload.
[[nodiscard]] absl::Status DropError(DropReason reason, absl::string_view detail);

// The reason carried by `status`, or nullopt when it is OK or did not come from DropError.
[[nodiscard]] std::optional<DropReason> DropReasonOf(const absl::Status& status);

// `bytes` made safe for one log line: C-escaped and cut to `max_bytes` input bytes ("..." when
// cut). Parse errors quote untrusted input through this.
[[nodiscard]] std::string QuoteForLog(absl::string_view bytes, size_t max_bytes = 64);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DROP_REASON_H_

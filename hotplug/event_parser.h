// The kernel's uevent netlink format, and the validation every Event goes through whatever its
// source (kernel netlink, our wire protocol, sysfs resync). Pure functions: no fds, no clock.
//
// Kernel format (lib/kobject_uevent.c), one datagram per event:
//   "ACTION@DEVPATH\0" "KEY=VALUE\0" "KEY=VALUE\0" ...
// The env normally holds ACTION, DEVPATH, SUBSYSTEM and SEQNUM, then device-specific variables.
// The kernel builds the env in a UEVENT_BUFFER_SIZE (2048 byte) buffer with at most
// UEVENT_NUM_ENVP (64) variables.
//
// Errors: every failure is a DropError (drop_reason.h): InvalidArgument, message
// "<reason>: <detail>" (untrusted bytes quoted with QuoteForLog), reason via DropReasonOf().
#ifndef HOTRING_HOTPLUG_EVENT_PARSER_H_
#define HOTRING_HOTPLUG_EVENT_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/drop_reason.h"
#include "hotplug/event.h"

namespace hotring::hotplug {

// Largest datagram the parsers accept. Read into a buffer of kMaxDatagramBytes + 1 (or use
// MSG_TRUNC) so a longer datagram is seen as longer and rejected as oversize, not silently cut.
inline constexpr size_t kMaxDatagramBytes = 8192;
// The kernel's UEVENT_BUFFER_SIZE: the env block after the "ACTION@DEVPATH\0" header.
inline constexpr size_t kMaxKernelEnvBytes = 2048;
// At most this many variables per event (the kernel's UEVENT_NUM_ENVP).
inline constexpr size_t kMaxEventVariables = 64;
// At most this many env bytes (sum of "KEY=VALUE\0" lengths) per event from any source. Twice
// the kernel's limit, leaving room for `hotring send --env` extras while any valid event still
// fits in one 8 KiB wire message with room to spare (see wire.h).
inline constexpr size_t kMaxEventEnvBytes = 4096;

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Parses one kernel uevent datagram. Rejects, each with its own DropReason:
//   empty or header/last variable not NUL-terminated      -> truncated
//   starts with "libudev\0" (a libudev monitor message)   -> libudev_header
//   datagram > kMaxDatagramBytes, env > kMaxKernelEnvBytes -> oversize
//   header without '@', empty action, devpath not '/'     -> bad_header
//   env ACTION/DEVPATH different from the header's        -> header_mismatch
//   plus everything EventFromEnv rejects.
// A value is cut at its first '\n' or '\r', as systemd-udevd does, because some drivers put a
// stray newline at the end of a value.
[[nodiscard]] absl::StatusOr<Event> ParseKernelUevent(absl::string_view datagram);

// The kernel format of `event`: "action@devpath\0" then every env entry "KEY=VALUE\0" in order.
// The env is authoritative (it must hold ACTION and DEVPATH, as every Event from EventFromEnv
// does). For rebroadcast and for injecting test datagrams; a valid Event whose env exceeds
// kMaxKernelEnvBytes encodes fine but ParseKernelUevent would reject it as oversize.
[[nodiscard]] std::string EncodeKernelUevent(const Event& event);

// The validation shared by every format: builds an Event from `env` (kept in order, moved in)
// and fills its named fields (action, devpath, subsystem, seqnum, devname, major, minor,
// modalias). Rejects:
//   more than kMaxEventVariables variables                         -> too_many_variables
//   env bytes over kMaxEventEnvBytes                               -> oversize
//   empty key, key with '=', a space, a control or non-ASCII byte,
//   NUL in a key or value, the same key twice,
//   MAJOR/MINOR not a decimal 32-bit number                        -> bad_variable
//   ACTION missing, empty, or not [A-Za-z0-9_-]                    -> bad_action
//   DEVPATH missing or not canonical: must start with '/', no
//   empty, "." or ".." component, no trailing '/'                  -> bad_devpath
//   SEQNUM present but not 1-20 decimal digits fitting 64 bits     -> bad_seqnum
// Canonical DEVPATHs make the scheduler's parent/child test a plain prefix test, and no handler
// can be pointed outside /sys with "..".
[[nodiscard]] absl::StatusOr<Event> EventFromEnv(EnvVars env, EventSource source);

// One key's rules from EventFromEnv (non-empty; printable ASCII without space, '=' or NUL), as
// a bad_variable DropError. Shared with the wire parser.
[[nodiscard]] absl::Status ValidateEnvKey(absl::string_view key);

// Strict decimal parse: 1-20 ASCII digits, no sign, no space, no overflow. nullopt otherwise.
[[nodiscard]] std::optional<uint64_t> ParseDecimalU64(absl::string_view text);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_EVENT_PARSER_H_

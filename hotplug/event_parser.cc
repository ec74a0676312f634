#include "hotplug/event_parser.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/utility/utility.h"

namespace hotring::hotplug {
namespace {

constexpr absl::string_view kLibudevPrefix("libudev\0", 8);

// Key bytes: printable ASCII without space and '='. Environment keys that a shell or execve
// consumer could misread (spaces, control bytes, '=') never reach a handler.
constexpr bool IsKeyByte(char c) { return c > ' ' && c < 0x7f && c != '='; }

// IsKeyByte on eight bytes at once: every key of every event is checked (twice on the wire
// path: by the framing and by EventFromEnv), so the check works a word at a time.
constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// Whether some byte of `w` fails IsKeyByte. Exact for any input: a byte >= 0x80 sets its high
// bit (and then the carries of the sums below do not matter); for bytes below 0x80 the sums
// carry into no neighbour.
constexpr bool HasNonKeyByte(uint64_t w) {
  const uint64_t non_ascii = w;                           // >= 0x80
  const uint64_t below_bang = ~(w + 0x5f * kOnes);        // < 0x21: + 0x5f stays below 0x80
  const uint64_t del = w + 0x01 * kOnes;                  // 0x7f: + 1 reaches 0x80
  const uint64_t eq = w ^ ('=' * kOnes);                  // '=' becomes 0
  const uint64_t has_eq = (eq - kOnes) & ~eq;             // some byte of eq is 0
  return ((non_ascii | below_bang | del | has_eq) & kHighBits) != 0;
}
static_assert(!HasNonKeyByte(0x5a5f41394d5a2123ULL));   // "#!ZM9A_Z" (little-endian)
static_assert(HasNonKeyByte(0x4141414141412041ULL));    // a space
static_assert(HasNonKeyByte(0x414141413d414141ULL));    // '='
static_assert(HasNonKeyByte(0x417f414141414141ULL));    // DEL
static_assert(HasNonKeyByte(0x8041414141414141ULL));    // non-ASCII
static_assert(HasNonKeyByte(0x4141414141414100ULL));    // NUL

uint64_t Load64(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

uint64_t Load32(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

// Every byte of the non-empty `key` passes IsKeyByte. Fixed-size loads only (overlapping at the
// end), so nothing becomes a call to memcpy.
bool AllKeyBytes(absl::string_view key) {
  const char* const p = key.data();
  const size_t n = key.size();
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      if (HasNonKeyByte(Load64(p + i))) return false;
    }
    return n % 8 == 0 || !HasNonKeyByte(Load64(p + n - 8));
  }
  if (n >= 4) return !HasNonKeyByte(Load32(p) | Load32(p + n - 4) << 32);
  // 1 to 3 bytes: the first, middle and last (overlapping), then padding that passes.
  const auto byte = [&](size_t i) { return uint64_t{static_cast<unsigned char>(p[i])}; };
  return !HasNonKeyByte(byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16 |
                        ('A' * kOnes) << 24);
}

// Why `key` (non-empty, with a byte failing IsKeyByte) was refused. Off the hot path.
[[gnu::cold, gnu::noinline]] absl::Status BadKeyError(absl::string_view key) {
  for (const char c : key) {
    if (c == '\0') {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("NUL inside key ", QuoteForLog(key)));
    }
    if (!IsKeyByte(c)) break;
  }
  return DropError(DropReason::kBadVariable,
                   absl::StrCat("key ", QuoteForLog(key),
                                " contains '=', a space, a control or a non-ASCII byte"));
}

bool IsActionByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

}  // namespace

absl::Status ValidateEnvKey(absl::string_view key) {
  if (key.empty()) return DropError(DropReason::kBadVariable, "empty key");
  if (ABSL_PREDICT_TRUE(AllKeyBytes(key))) return absl::OkStatus();
  return BadKeyError(key);
}

namespace {

absl::Status ValidateDevpath(absl::string_view devpath) {
  if (devpath.empty() || devpath.front() != '/') {
    return DropError(DropReason::kBadDevpath,
                     absl::StrCat("DEVPATH ", QuoteForLog(devpath), " does not start with '/'"));
  }
  if (devpath.size() == 1 || devpath.back() == '/') {
    return DropError(DropReason::kBadDevpath,
                     absl::StrCat("DEVPATH ", QuoteForLog(devpath), " ends with '/'"));
  }
  // Components between slashes: none empty, none "." or "..".
  const char* part = devpath.data() + 1;
  const char* const end = devpath.data() + devpath.size();
  while (true) {
    const void* const slash = std::memchr(part, '/', static_cast<size_t>(end - part));
    const char* const part_end = slash != nullptr ? static_cast<const char*>(slash) : end;
    const size_t length = static_cast<size_t>(part_end - part);
    if (length == 0 || (part[0] == '.' && (length == 1 || (length == 2 && part[1] == '.')))) {
      return DropError(DropReason::kBadDevpath,
                       absl::StrCat("DEVPATH ", QuoteForLog(devpath),
                                    " has an empty, '.' or '..' component"));
    }
    if (part_end == end) return absl::OkStatus();
    part = part_end + 1;
  }
}

absl::Status ValidateDeviceNumber(absl::string_view key, absl::string_view value) {
  const std::optional<uint64_t> n = ParseDecimalU64(value);
  if (!n.has_value() || *n > std::numeric_limits<uint32_t>::max()) {
    return DropError(DropReason::kBadVariable,
                     absl::StrCat(key, " ", QuoteForLog(value), " is not a decimal 32-bit number"));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<uint64_t> ParseDecimalU64(absl::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

namespace {

// The named fields of `event` from the validated `env`, and their own rules.
absl::Status FillNamedFields(const EnvVars& env, Event& event) {
  bool has_action = false;
  bool has_devpath = false;
  for (const auto& [key, value] : env) {
    // Dispatch on the first byte so the common unnamed variables cost one comparison.
    switch (key.front()) {
      case 'A':
        if (key == "ACTION") {
          has_action = true;
          event.action = value;
        }
        break;
      case 'D':
        if (key == "DEVPATH") {
          has_devpath = true;
          event.devpath = value;
        } else if (key == "DEVNAME") {
          event.devname = value;
        }
        break;
      case 'S':
        if (key == "SUBSYSTEM") {
          event.subsystem = value;
        } else if (key == "SEQNUM") {
          event.seqnum = ParseDecimalU64(value);
          if (!event.seqnum.has_value()) {
            return DropError(DropReason::kBadSeqnum,
                             absl::StrCat("SEQNUM ", QuoteForLog(value),
                                          " is not a decimal number that fits 64 bits"));
          }
        }
        break;
      case 'M':
        if (key == "MAJOR") {
          if (absl::Status s = ValidateDeviceNumber(key, value); !s.ok()) return s;
          event.major = value;
        } else if (key == "MINOR") {
          if (absl::Status s = ValidateDeviceNumber(key, value); !s.ok()) return s;
          event.minor = value;
        } else if (key == "MODALIAS") {
          event.modalias = value;
        }
        break;
      default:
        break;
    }
  }
  if (!has_action) return DropError(DropReason::kBadAction, "ACTION missing");
  if (event.action.empty()) return DropError(DropReason::kBadAction, "ACTION empty");
  for (const char c : event.action) {
    if (!IsActionByte(c)) {
      return DropError(DropReason::kBadAction,
                       absl::StrCat("ACTION ", QuoteForLog(event.action),
                                    " has a byte outside [A-Za-z0-9_-]"));
    }
  }
  if (!has_devpath) return DropError(DropReason::kBadDevpath, "DEVPATH missing");
  if (absl::Status s = ValidateDevpath(event.devpath); !s.ok()) return s;
  return absl::OkStatus();
}

// The event of a validated `env`. Built inside the returned StatusOr (every return names it,
// so it is constructed in the caller's slot): the event itself is never moved.
absl::StatusOr<Event> BuildEvent(EnvVars env, EventSource source) {
  absl::StatusOr<Event> result(absl::in_place);
  if (absl::Status s = FillNamedFields(env, *result); !s.ok()) {
    result = std::move(s);
    return result;
  }
  result->source = source;
  result->env = std::move(env);
  return result;
}

// EventFromEnv plus the kernel header's agreement with ACTION and DEVPATH. One named return,
// so the event is built in the caller's StatusOr and never moved.
absl::StatusOr<Event> KernelEventFromEnv(EnvVars env, absl::string_view header_action,
                                         absl::string_view header_devpath) {
  absl::StatusOr<Event> event = EventFromEnv(std::move(env), EventSource::kKernel);
  if (!event.ok()) return event;
  if (event->action != header_action) {
    event = DropError(DropReason::kHeaderMismatch,
                      absl::StrCat("header action ", QuoteForLog(header_action), " but ACTION ",
                                   QuoteForLog(event->action)));
  } else if (event->devpath != header_devpath) {
    event = DropError(DropReason::kHeaderMismatch,
                      absl::StrCat("header devpath ", QuoteForLog(header_devpath),
                                   " but DEVPATH ", QuoteForLog(event->devpath)));
  }
  return event;
}

}  // namespace

absl::StatusOr<Event> EventFromEnv(EnvVars env, EventSource source) {
  if (env.size() > kMaxEventVariables) {
    return DropError(DropReason::kTooManyVariables,
                     absl::StrCat(env.size(), " variables, at most ", kMaxEventVariables));
  }
  size_t bytes = 0;
  for (size_t i = 0; i < env.size(); ++i) {
    const auto& [key, value] = env[i];
    if (absl::Status s = ValidateEnvKey(key); !s.ok()) return s;
    if (value.find('\0') != std::string::npos) {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("NUL inside the value of ", QuoteForLog(key)));
    }
    // At most 64 variables: the quadratic scan costs less than hashing them.
    for (size_t j = 0; j < i; ++j) {
      if (env[j].first == key) {
        return DropError(DropReason::kBadVariable,
                         absl::StrCat("key ", QuoteForLog(key), " appears twice"));
      }
    }
    bytes += key.size() + value.size() + 2;  // "KEY=VALUE\0"
  }
  if (bytes > kMaxEventEnvBytes) {
    return DropError(DropReason::kOversize,
                     absl::StrCat("env of ", bytes, " bytes, at most ", kMaxEventEnvBytes));
  }

  return BuildEvent(std::move(env), source);
}

absl::StatusOr<Event> ParseKernelUevent(absl::string_view datagram) {
  if (datagram.empty()) return DropError(DropReason::kTruncated, "empty datagram");
  if (datagram.substr(0, kLibudevPrefix.size()) == kLibudevPrefix) {
    return DropError(DropReason::kLibudevHeader,
                     "libudev monitor message, not a kernel uevent");
  }
  if (datagram.size() > kMaxDatagramBytes) {
    return DropError(DropReason::kOversize, absl::StrCat("datagram of ", datagram.size(),
                                                         " bytes, at most ", kMaxDatagramBytes));
  }
  const size_t header_end = datagram.find('\0');
  if (header_end == absl::string_view::npos) {
    return DropError(DropReason::kTruncated,
                     absl::StrCat("header ", QuoteForLog(datagram), " is not NUL-terminated"));
  }
  const absl::string_view header = datagram.substr(0, header_end);
  const size_t at = header.find('@');
  if (at == absl::string_view::npos) {
    return DropError(DropReason::kBadHeader,
                     absl::StrCat("header ", QuoteForLog(header), " has no '@'"));
  }
  const absl::string_view header_action = header.substr(0, at);
  const absl::string_view header_devpath = header.substr(at + 1);
  if (header_action.empty()) {
    return DropError(DropReason::kBadHeader,
                     absl::StrCat("header ", QuoteForLog(header), " has an empty action"));
  }
  if (header_devpath.empty() || header_devpath.front() != '/') {
    return DropError(DropReason::kBadHeader,
                     absl::StrCat("header ", QuoteForLog(header), " has no '@/'"));
  }

  absl::string_view block = datagram.substr(header_end + 1);
  if (block.size() > kMaxKernelEnvBytes) {
    return DropError(DropReason::kOversize, absl::StrCat("env block of ", block.size(),
                                                         " bytes, at most ", kMaxKernelEnvBytes));
  }
  if (!block.empty() && block.back() != '\0') {
    const size_t last = block.rfind('\0');
    const absl::string_view tail = last == absl::string_view::npos ? block : block.substr(last + 1);
    return DropError(DropReason::kTruncated,
                     absl::StrCat("last variable ", QuoteForLog(tail), " is not NUL-terminated"));
  }

  // Split and check first, then build the owned strings into a vector of the exact size.
  absl::InlinedVector<std::pair<absl::string_view, absl::string_view>, 32> split;
  size_t offset = header_end + 1;
  while (!block.empty()) {
    // Found: the block ends with NUL.
    const auto* const nul = static_cast<const char*>(std::memchr(block.data(), '\0', block.size()));
    const size_t end = static_cast<size_t>(nul - block.data());
    absl::string_view entry = block.substr(0, end);
    block.remove_prefix(end + 1);
    if (entry.empty()) {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("empty variable (NUL inside the env block at offset ", offset,
                                    ")"));
    }
    offset += end + 1;
    if (split.size() == kMaxEventVariables) {
      return DropError(DropReason::kTooManyVariables,
                       absl::StrCat("more than ", kMaxEventVariables, " variables"));
    }
    // Two memchr scans: string_view::find_first_of builds a byte table on every call.
    if (const void* nl = std::memchr(entry.data(), '\n', entry.size()); nl != nullptr) {
      entry = entry.substr(0, static_cast<const char*>(nl) - entry.data());
    }
    if (const void* cr = std::memchr(entry.data(), '\r', entry.size()); cr != nullptr) {
      entry = entry.substr(0, static_cast<const char*>(cr) - entry.data());
    }
    const auto* const eq = static_cast<const char*>(std::memchr(entry.data(), '=', entry.size()));
    if (eq == nullptr) {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("variable ", QuoteForLog(entry), " has no '='"));
    }
    const size_t key_size = static_cast<size_t>(eq - entry.data());
    if (key_size == 0) {
      return DropError(DropReason::kBadVariable,
                       absl::StrCat("variable ", QuoteForLog(entry), " has an empty key"));
    }
    split.emplace_back(entry.substr(0, key_size), entry.substr(key_size + 1));
  }
  EnvVars env;
  env.reserve(split.size());
  for (const auto& [key, value] : split) {
    env.emplace_back(std::piecewise_construct, std::forward_as_tuple(key.data(), key.size()),
                     std::forward_as_tuple(value.data(), value.size()));
  }
  return KernelEventFromEnv(std::move(env), header_action, header_devpath);
}

std::string EncodeKernelUevent(const Event& event) {
  size_t size = event.action.size() + event.devpath.size() + 2;
  for (const auto& [key, value] : event.env) size += key.size() + value.size() + 2;
  std::string out;
  out.reserve(size);
  absl::StrAppend(&out, event.action, "@", event.devpath);
  out.push_back('\0');
  for (const auto& [key, value] : event.env) {
    absl::StrAppend(&out, key, "=", value);
    out.push_back('\0');
  }
  return out;
}

}  // namespace hotring::hotplug

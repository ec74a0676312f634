#include "hotplug/drop_reason.h"

#include <array>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug {
namespace {

constexpr std::array<DropReason, 20> kAll = {
    DropReason::kOversize,      DropReason::kTruncated,        DropReason::kLibudevHeader,
    DropReason::kBadHeader,     DropReason::kHeaderMismatch,   DropReason::kBadAction,
    DropReason::kBadDevpath,    DropReason::kBadSeqnum,        DropReason::kBadVariable,
    DropReason::kTooManyVariables, DropReason::kBadMagic,      DropReason::kBadVersion,
    DropReason::kBadType,       DropReason::kBadFlags,         DropReason::kTrailingData,
    DropReason::kBadField,      DropReason::kUnprivileged,     DropReason::kNoCredentials,
    DropReason::kDuplicate,     DropReason::kQueueFull,
};

}  // namespace

absl::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kOversize: return "oversize";
    case DropReason::kTruncated: return "truncated";
    case DropReason::kLibudevHeader: return "libudev_header";
    case DropReason::kBadHeader: return "bad_header";
    case DropReason::kHeaderMismatch: return "header_mismatch";
    case DropReason::kBadAction: return "bad_action";
    case DropReason::kBadDevpath: return "bad_devpath";
    case DropReason::kBadSeqnum: return "bad_seqnum";
    case DropReason::kBadVariable: return "bad_variable";
    case DropReason::kTooManyVariables: return "too_many_variables";
    case DropReason::kBadMagic: return "bad_magic";
    case DropReason::kBadVersion: return "bad_version";
    case DropReason::kBadType: return "bad_type";
    case DropReason::kBadFlags: return "bad_flags";
    case DropReason::kTrailingData: return "trailing_data";
    case DropReason::kBadField: return "bad_field";
    case DropReason::kUnprivileged: return "unprivileged";
    case DropReason::kNoCredentials: return "no_credentials";
    case DropReason::kDuplicate: return "duplicate";
    case DropReason::kQueueFull: return "queue_full";
  }
  return "unknown";  // unreachable: the switch is exhaustive (-Wswitch)
}

std::optional<DropReason> DropReasonFromName(absl::string_view name) {
  for (const DropReason reason : kAll) {
    if (DropReasonName(reason) == name) return reason;
  }
  return std::nullopt;
}

absl::Span<const DropReason> AllDropReasons() { return kAll; }

absl::Status DropError(DropReason reason, absl::string_view detail) {
  absl::Status status(absl::StatusCode::kInvalidArgument,
                      absl::StrCat(DropReasonName(reason), ": ", detail));
  status.SetPayload(kDropReasonPayloadUrl, absl::Cord(DropReasonName(reason)));
  return status;
}

std::optional<DropReason> DropReasonOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  const auto payload = status.GetPayload(kDropReasonPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  return DropReasonFromName(std::string(*payload));
}

std::string QuoteForLog(absl::string_view bytes, size_t max_bytes) {
  if (bytes.size() <= max_bytes) return absl::StrCat("'", absl::CHexEscape(bytes), "'");
  return absl::StrCat("'", absl::CHexEscape(bytes.substr(0, max_bytes)), "...'");
}

}  // namespace hotring::hotplug

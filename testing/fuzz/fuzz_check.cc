#include "testing/fuzz/fuzz_check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "hotplug/drop_reason.h"
#include "hotplug/event_parser.h"

namespace hotring::fuzz {

void Require(bool ok, absl::string_view what, std::source_location where) {
  if (ok) return;
  std::fprintf(stderr, "%s:%u: property broken: %.*s\n", where.file_name(),
               static_cast<unsigned>(where.line()), static_cast<int>(what.size()), what.data());
  std::abort();
}

void RequireDropError(const absl::Status& status, std::source_location where) {
  Require(!status.ok(), "a rejection is an error", where);
  Require(status.code() == absl::StatusCode::kInvalidArgument, "a drop is InvalidArgument", where);
  const std::optional<hotplug::DropReason> reason = hotplug::DropReasonOf(status);
  Require(reason.has_value(), "a rejection names its drop reason", where);
  Require(absl::StrContains(status.message(), hotplug::DropReasonName(*reason)),
          "the message starts with the reason's name", where);
}

namespace {

bool CanonicalDevpath(absl::string_view devpath) {
  if (devpath.size() < 2 || devpath.front() != '/' || devpath.back() == '/') return false;
  for (const absl::string_view part : absl::StrSplit(devpath.substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

bool ValidAction(absl::string_view action) {
  if (action.empty()) return false;
  for (const char c : action) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool FieldMatches(const hotplug::Event& event, absl::string_view key, absl::string_view field) {
  const std::optional<absl::string_view> value = event.Get(key);
  return value.has_value() ? *value == field : field.empty();
}

}  // namespace

void RequireValidEvent(const hotplug::Event& event, std::source_location where) {
  Require(event.env.size() <= hotplug::kMaxEventVariables, "at most 64 variables", where);
  size_t bytes = 0;
  absl::flat_hash_set<absl::string_view> keys;
  for (const auto& [key, value] : event.env) {
    Require(hotplug::ValidateEnvKey(key).ok(), "every key is valid", where);
    Require(keys.insert(key).second, "no key twice", where);
    Require(value.find('\0') == std::string::npos, "no NUL in a value", where);
    bytes += key.size() + value.size() + 2;
  }
  Require(bytes <= hotplug::kMaxEventEnvBytes, "env within kMaxEventEnvBytes", where);
  Require(ValidAction(event.action), "ACTION is [A-Za-z0-9_-]+", where);
  Require(CanonicalDevpath(event.devpath), "DEVPATH is canonical", where);
  Require(event.Get("ACTION") == event.action, "action is env ACTION", where);
  Require(event.Get("DEVPATH") == event.devpath, "devpath is env DEVPATH", where);
  Require(FieldMatches(event, "SUBSYSTEM", event.subsystem), "subsystem is env SUBSYSTEM", where);
  Require(FieldMatches(event, "DEVNAME", event.devname), "devname is env DEVNAME", where);
  Require(FieldMatches(event, "MAJOR", event.major), "major is env MAJOR", where);
  Require(FieldMatches(event, "MINOR", event.minor), "minor is env MINOR", where);
  Require(FieldMatches(event, "MODALIAS", event.modalias), "modalias is env MODALIAS", where);
  const std::optional<absl::string_view> seqnum = event.Get("SEQNUM");
  Require(seqnum.has_value() == event.seqnum.has_value(), "seqnum iff env SEQNUM", where);
  if (seqnum.has_value()) {
    Require(hotplug::ParseDecimalU64(*seqnum) == event.seqnum, "seqnum is env SEQNUM", where);
  }
  for (const std::string* number : {&event.major, &event.minor}) {
    if (number->empty()) continue;
    const std::optional<uint64_t> n = hotplug::ParseDecimalU64(*number);
    Require(n.has_value() && *n <= UINT32_MAX, "MAJOR/MINOR are 32-bit decimals", where);
  }
}

bool SameEvent(const hotplug::Event& a, const hotplug::Event& b) {
  return a.env == b.env && a.action == b.action && a.devpath == b.devpath &&
         a.subsystem == b.subsystem && a.seqnum == b.seqnum && a.devname == b.devname &&
         a.major == b.major && a.minor == b.minor && a.modalias == b.modalias;
}

}  // namespace hotring::fuzz

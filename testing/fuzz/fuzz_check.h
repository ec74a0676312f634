// What the fuzz targets share: a property check that aborts (libFuzzer and the replay tests
// report an abort as a crash, with the input), and the invariants every accepted Event keeps.
#ifndef HOTRING_TESTING_FUZZ_FUZZ_CHECK_H_
#define HOTRING_TESTING_FUZZ_FUZZ_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <source_location>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "hotplug/event.h"

namespace hotring::fuzz {

// Aborts with `what` and the caller's file:line when `ok` is false.
void Require(bool ok, absl::string_view what,
             std::source_location where = std::source_location::current());

// A rejection must be a DropError naming its reason (drop_reason.h): bad input is always a
// counted drop with a reason, never an anonymous failure.
void RequireDropError(const absl::Status& status,
                      std::source_location where = std::source_location::current());

// What EventFromEnv promises about every event it accepts: named fields agree with the env,
// canonical DEVPATH, valid ACTION, keys unique and well formed, no NUL in values, bounds.
void RequireValidEvent(const hotplug::Event& event,
                       std::source_location where = std::source_location::current());

// Same env (in order), named fields and SEQNUM; the source is not compared.
[[nodiscard]] bool SameEvent(const hotplug::Event& a, const hotplug::Event& b);

// The input as text.
[[nodiscard]] inline absl::string_view AsText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace hotring::fuzz

#endif  // HOTRING_TESTING_FUZZ_FUZZ_CHECK_H_

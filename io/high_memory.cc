#include "io/high_memory.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hotring::io {

bool PinnedPagesMayBeHighMemory(std::optional<absl::string_view> meminfo,
                                size_t pointer_bytes) {
  if (pointer_bytes >= 8) return false;
  if (!meminfo.has_value()) return true;
  for (absl::string_view line : absl::StrSplit(*meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "HighTotal:")) continue;
    // "HighTotal:      262144 kB"
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) return true;
    uint64_t kib = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib)) return true;
    return kib > 0;
  }
  // No HighTotal line: a kernel built without CONFIG_HIGHMEM (or a 64-bit kernel running a
  // 32-bit process).
  return false;
}

}  // namespace hotring::io

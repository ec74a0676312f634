#include "core/utf8.h"

#include <cstdint>

namespace hotring {

size_t Utf8SequenceLength(absl::string_view in) {
  if (in.empty()) return 0;
  const uint8_t lead = static_cast<uint8_t>(in[0]);
  size_t len;
  uint32_t cp;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    len = 2;
    cp = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3;
    cp = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4;
    cp = lead & 0x07;
  } else {
    return 0;
  }
  if (in.size() < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    const uint8_t b = static_cast<uint8_t>(in[i]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid characters.
  const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace hotring

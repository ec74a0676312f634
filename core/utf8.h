// UTF-8 validity as systemd checks it (utf8_encoded_valid_unichar), for the code that replaces
// or escapes characters the way udev does.
#ifndef HOTRING_CORE_UTF8_H_
#define HOTRING_CORE_UTF8_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace hotring {

// The length of the valid UTF-8 sequence starting at `in` (1 for ASCII), 0 when invalid:
// overlong forms, surrogates and values past U+10FFFF are invalid.
[[nodiscard]] size_t Utf8SequenceLength(absl::string_view in);

}  // namespace hotring

#endif  // HOTRING_CORE_UTF8_H_

// How udev turns values read from devices (labels, serials, vendor strings) into property values
// and link names. The same rules as udev and libblkid, so links and properties match theirs.
#ifndef HOTRING_HOTPLUG_UDEV_ESCAPE_H_
#define HOTRING_HOTPLUG_UDEV_ESCAPE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "core/utf8.h"

namespace hotring::hotplug::udev {

// udev's encode_devnode_name / libblkid's blkid_encode_string (the *_ENC properties, by-label
// and by-uuid names): ASCII letters, digits, "#+-.:=@_" and valid multi-byte UTF-8 stay; every
// other byte, '/' and '\' included, becomes "\xNN". The result never contains '/'.
[[nodiscard]] std::string EncodeDevnodeName(absl::string_view in);

// udev_replace_whitespace: leading and trailing whitespace dropped, each inner run of whitespace
// becomes one '_'; reads at most `max_len` bytes of `in` and writes at most `max_len`.
[[nodiscard]] std::string ReplaceWhitespace(absl::string_view in, size_t max_len = 4096);

// udev_replace_chars(s, allow): letters, digits, "#+-.:=@_", characters in `allow`, "\x"
// escapes and valid multi-byte UTF-8 stay; whitespace becomes ' ' when `allow` holds ' '; every
// other byte becomes '_'.
[[nodiscard]] std::string ReplaceChars(absl::string_view in, absl::string_view allow = "");

// libblkid's blkid_safe_string (ID_FS_LABEL): whitespace as ReplaceWhitespace, control
// characters dropped (blkid -o udev: "a\x01b c" -> "ab_c").
[[nodiscard]] std::string BlkidSafeString(absl::string_view in);

// The length of the valid UTF-8 sequence starting at `in` (core/utf8.h).
using ::hotring::Utf8SequenceLength;

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_ESCAPE_H_

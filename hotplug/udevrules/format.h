// udev's value substitution ($kernel, %k, $attr{...}, ...; man 7 udev), compiled once when the
// rules load and expanded per event against a FormatSource, with udev 252's quirks: unknown
// "$x"/"%x" stay literal, "$$" and "%%" are one character, a malformed "{...}" or a failing
// substitution ends the expansion there (udevd logs "Invalid format string" and keeps what it
// has), every result is cut to the size of udevd's buffer for the key, and SYMLINK's
// substitutions have their whitespace folded to '_' (except $result). Also udev's character
// replacement (udev_replace_chars) and argv splitting.
#ifndef HOTRING_HOTPLUG_UDEVRULES_FORMAT_H_
#define HOTRING_HOTPLUG_UDEVRULES_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hotring::hotplug::udevrules {

// What a substitution stands for (udev-event.c's table; the comments give both spellings).
enum class Subst : uint8_t {
  kDevnode,  // $devnode %N ($tempnode)
  kAttr,     // $attr{} %s{} ($sysfs{})
  kEnv,      // $env{} %E{}
  kKernel,   // $kernel %k
  kNumber,   // $number %n
  kDriver,   // $driver %d
  kDevpath,  // $devpath %p
  kId,       // $id %b
  kMajor,    // $major %M
  kMinor,    // $minor %m
  kResult,   // $result %c
  kParent,   // $parent %P
  kName,     // $name %D
  kLinks,    // $links %L
  kRoot,     // $root %r
  kSys,      // $sys %S
};

[[nodiscard]] absl::string_view SubstName(Subst subst);

// One piece of a compiled format. Owns its text.
struct FormatPart {
  enum class Kind : uint8_t { kLiteral, kSubst, kInvalid };
  Kind kind = Kind::kLiteral;
  Subst subst = Subst::kKernel;
  std::string text;  // the literal, or the substitution's {attribute} (maybe empty)
};

// A value with its substitutions found once. Owns its parts.
class Format {
 public:
  Format() = default;
  // Splits `source` as udevd does at run time.
  static Format Compile(absl::string_view source);

  [[nodiscard]] const std::vector<FormatPart>& parts() const { return parts_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  // No substitution at all: the value is the source (fast path, no work per event).
  [[nodiscard]] bool plain() const { return plain_; }

 private:
  std::string source_;
  std::vector<FormatPart> parts_;
  bool plain_ = true;
};

// What a format reads substitutions from: the executor's view of the event.
class FormatSource {
 public:
  virtual ~FormatSource() = default;
  // Appends the value of `subst` (with its {attribute}, maybe empty) to *out. False when udevd
  // would fail the substitution ("Failed to substitute variable"): expansion stops there.
  virtual bool Substitute(Subst subst, absl::string_view attribute, std::string* out) = 0;
};

struct ExpandResult {
  bool complete = true;   // false: a malformed or failing substitution ended it early
  bool truncated = false;  // cut to the buffer size
};

// Expands `format` into *out (replacing its content), at most `buffer_size - 1` bytes as in
// udevd's fixed buffers. `fold_whitespace`: SYMLINK's udev_replace_whitespace on each
// substituted value but $result.
ExpandResult ExpandFormat(const Format& format, FormatSource& source, size_t buffer_size,
                          bool fold_whitespace, std::string* out);

// udev_check_format, for the messages at load time: where the first malformed substitution
// starts (1-based, as udevd prints it) and what is wrong with it.
struct FormatProblem {
  size_t offset = 0;
  absl::string_view hint;
};
[[nodiscard]] std::optional<FormatProblem> CheckFormat(absl::string_view value);

// udev_replace_chars on *s from `from` on: letters, digits, "#+-.:=@_", the characters of
// `allow`, "\x" escapes and valid multi-byte UTF-8 stay; whitespace becomes ' ' when `allow`
// holds ' ', every other byte '_'. Returns how many bytes were replaced.
size_t ReplaceChars(std::string* s, absl::string_view allow, size_t from = 0);

// udev_replace_ifname (NAME= under naming scheme v252): bytes outside 0x21..0x7e and ':', '/',
// '%' become '_'.
size_t ReplaceIfnameChars(std::string* s);

// udev_replace_whitespace on s[from...]: leading and trailing whitespace dropped, inner runs
// folded to one '_'.
void FoldWhitespace(std::string* s, size_t from);

// The characters udevd lets through in values read from devices and programs.
inline constexpr absl::string_view kAllowedInputChars = "/ $%?,";

// systemd's strv_split_full(..., EXTRACT_UNQUOTE | EXTRACT_RELAX | EXTRACT_RETAIN_ESCAPE): how
// udevd splits PROGRAM, IMPORT{program}, RUN and builtin commands into argv. Words are separated
// by whitespace; '...' and "..." quote (an unterminated quote runs to the end); backslashes are
// kept as they are. Never through a shell.
[[nodiscard]] std::vector<std::string> SplitCommand(absl::string_view command);
// The same into *argv, reusing its strings' storage.
void SplitCommandInto(absl::string_view command, std::vector<std::string>* argv);
// The same into the first words of *words, which never shrinks (a scratch buffer that keeps
// every string's storage); returns how many words there are.
size_t SplitCommandWords(absl::string_view command, std::vector<std::string>* words);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_FORMAT_H_

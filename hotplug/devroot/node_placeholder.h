// Node placeholders: a regular file standing in for a device node, in a dev root that must not
// hold real ones (`daemon --dev-root-placeholders`, which `hotring replay` uses). mknod needs
// privilege, and a real node in a test's tree would open this machine's device of that number;
// a placeholder needs neither, and its text says what node it stands for, so the tree reads the
// same whoever made it:
//
//   hotring-node block 8:0 0:6 0640
//
// (type, MAJOR:MINOR, UID:GID, mode). The file's own owner and mode mean nothing.
#ifndef HOTRING_HOTPLUG_DEVROOT_NODE_PLACEHOLDER_H_
#define HOTRING_HOTPLUG_DEVROOT_NODE_PLACEHOLDER_H_

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::devroot {

// The node a placeholder stands for. Plain data.
struct PlaceholderNode {
  bool block = false;  // S_IFBLK, else S_IFCHR
  uint32_t major = 0;
  uint32_t minor = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t mode = 0;  // permission bits (07777)
  friend bool operator==(const PlaceholderNode&, const PlaceholderNode&) = default;
};

// The placeholder's text (one line, newline-terminated), and back: nullopt for anything else.
[[nodiscard]] std::string FormatNodePlaceholder(const PlaceholderNode& node);
[[nodiscard]] std::optional<PlaceholderNode> ParseNodePlaceholder(absl::string_view text);

// `st` is the lstat of `leaf` in directory `dir_fd`. When it is a regular file holding a
// placeholder, rewrites `st` to what the node would show (type, st_rdev, owner, mode) and
// returns true; otherwise leaves `st` alone and returns false. Never follows a symlink.
bool StatAsNode(int dir_fd, const char* leaf, struct stat& st);

// Writes a placeholder at `leaf` in `dir_fd` (never through a symlink). `exclusive`: fail with
// EEXIST (as mknod does) when something has the name; else replace the text of an existing
// placeholder in place. The Status carries the errno (StatusErrno).
absl::Status WriteNodePlaceholderAt(int dir_fd, const char* leaf, const PlaceholderNode& node,
                                    bool exclusive);

}  // namespace hotring::hotplug::devroot

#endif  // HOTRING_HOTPLUG_DEVROOT_NODE_PLACEHOLDER_H_

// The dev root: the directory device nodes and their links live in (/dev), and every action on
// it — making, moving, chowning and removing nodes, making and removing links — resolved beneath
// one open directory, so that no name from a device or a rule ever leads out of it. The rules
// stage (mdev.conf), the udev stages and the mdev applet all act on /dev through here.
#ifndef HOTRING_HOTPLUG_DEVROOT_DEV_ROOT_H_
#define HOTRING_HOTPLUG_DEVROOT_DEV_ROOT_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/unique_fd.h"
#include "hotplug/devroot/user_db.h"

namespace hotring::hotplug::devroot {

// A device number.
struct DevNumber {
  uint32_t major = 0;
  uint32_t minor = 0;
  friend bool operator==(const DevNumber&, const DevNumber&) = default;
};

// One node action on the dev root, planned from one matching rule. Paths are relative to the
// dev root and already checked: no empty, "." or ".." component, not absolute.
struct NodeStep {
  enum class Kind {
    kCreate,  // add: make `path` (mknod, or rename the kernel's node from `name`), chmod, chown
    kRemove,  // remove: unlink `path` (only if it is still this device's node) and `link`
  };
  Kind kind = Kind::kCreate;
  std::string path;  // where the node is (Device::name, or the rule's =/> target)
  std::string name;  // Device::name: where devtmpfs put the kernel's node
  std::string link;  // '>' rules: a symlink here pointing at `path`; empty: none
  bool root_link = false;  // PlanOptions::root_device matched: a "root" symlink to `path` too
  std::optional<DevNumber> number;  // kCreate: always set; kRemove: set when the event had one
  bool block = false;               // S_IFBLK, else S_IFCHR
  Owner owner;
  mode_t mode = 0660;
  std::string origin;  // the rule's "FILE:LINE" for logs
};

// True when `path` is a relative path that stays beneath its root textually: not empty, not
// absolute, no empty/"."/".." component, no control character, within PATH_MAX/NAME_MAX.
[[nodiscard]] bool IsSafeRelativePath(absl::string_view path);

// What a dev root holds where a device node goes.
enum class DevNodes {
  kReal,          // device nodes (mknod, chown, chmod): a board's /dev
  kPlaceholders,  // node_placeholder.h files (no privilege, no real device): replays
};

// The dev root: an open directory every node action is resolved against, component by
// component with O_NOFOLLOW (a symlinked directory, "..", or an absolute path never leads out
// of it). Owns the directory fd.
class DevRoot {
 public:
  // Opens `path` (must be a directory). Detects devtmpfs (statfs says tmpfs, and the mount is
  // devtmpfs in /proc/self/mountinfo when that is readable).
  static absl::StatusOr<DevRoot> Open(const std::string& path, DevNodes nodes = DevNodes::kReal);

  [[nodiscard]] int fd() const { return fd_.get(); }
  [[nodiscard]] const std::string& path() const { return path_; }
  // The kernel makes and removes nodes here itself; hotring renames/chowns them instead of
  // creating them (it still creates a node the kernel's is missing).
  [[nodiscard]] bool devtmpfs() const { return devtmpfs_; }
  // Nodes are placeholders: a placeholder reads as its node, and a node is made, rechowned or
  // rechmodded by writing one.
  [[nodiscard]] bool placeholders() const { return placeholders_; }
  // What a node that mknod makes directly in the root starts with, as seen at Open (the process
  // umask is read once there: change it before opening the root, never after): its permission
  // bits are the requested ones minus umask(), its owner is creator().
  [[nodiscard]] mode_t umask() const { return umask_; }
  [[nodiscard]] const Owner& creator() const { return creator_; }
  // False when the root's setgid bit or a default ACL decides a new node's group or mode.
  [[nodiscard]] bool fresh_nodes_predictable() const { return fresh_nodes_predictable_; }

 private:
  DevRoot(UniqueFd fd, std::string path, bool devtmpfs, bool placeholders, mode_t umask,
          Owner creator, bool fresh_nodes_predictable)
      : fd_(std::move(fd)),
        path_(std::move(path)),
        devtmpfs_(devtmpfs),
        placeholders_(placeholders),
        umask_(umask),
        creator_(creator),
        fresh_nodes_predictable_(fresh_nodes_predictable) {}
  UniqueFd fd_;
  std::string path_;
  bool devtmpfs_ = false;
  bool placeholders_ = false;
  mode_t umask_ = 0;
  Owner creator_;
  bool fresh_nodes_predictable_ = false;
};

// What ApplyNodes did (add these to the status counters).
struct NodeReport {
  uint64_t nodes_made = 0;   // mknod succeeded (or a placeholder was written)
  uint64_t chowned = 0;      // owner and mode applied
  uint64_t renamed = 0;      // the kernel's node moved to a =/> path
  uint64_t linked = 0;       // symlinks made
  uint64_t removed = 0;      // nodes and links unlinked
  uint64_t refused = 0;      // a path met a symlinked directory or a non-directory: counted
                             // as dropped_bad_devname
  std::vector<std::string> errors;  // one line per failed action, for the log
};

// Applies `steps` on `root`: creates intermediate directories (0755), makes or renames
// nodes, applies owner and mode, makes '>' links (relative, so they work from any mount point),
// and on remove unlinks nodes (only when still the event's device number, if known) and the
// links made for them. Never follows a symlink; never touches anything outside `root`.
NodeReport ApplyNodes(const DevRoot& root, absl::Span<const NodeStep> steps);

// For other stages' links (udev compatibility's by-* links), with the same path safety: `link`
// and `target` are IsSafeRelativePath paths relative to `root`. Makes `link` as a relative
// symlink to `target` (directories 0755 as needed), replacing an old symlink but nothing else.
// Returns true when a link was made or changed, false when it was already right. A symlinked
// or non-directory component on the way is a FailedPrecondition ("refused").
absl::StatusOr<bool> MakeLinkBeneath(const DevRoot& root, absl::string_view link,
                                     absl::string_view target);
// Removes `link` when it is a symlink to `target` (another device may have taken the name
// since). Returns true when it was removed.
absl::StatusOr<bool> RemoveLinkBeneath(const DevRoot& root, absl::string_view link,
                                       absl::string_view target);

// lstat of `path` (IsSafeRelativePath) beneath `root`, never through a symlinked directory; in a
// placeholder root a placeholder reads as its node. False when it is not there (or refused).
bool StatBeneath(const DevRoot& root, absl::string_view path, struct stat* st);

// Removes `link` when it is a symlink, whatever it points to (udevd's "no reference left"), then
// the directories it leaves empty on the way up to the root. Returns true when it was removed.
absl::StatusOr<bool> RemoveSymlinkBeneath(const DevRoot& root, absl::string_view link);

}  // namespace hotring::hotplug::devroot

#endif  // HOTRING_HOTPLUG_DEVROOT_DEV_ROOT_H_

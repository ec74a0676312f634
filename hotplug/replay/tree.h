// The file-system side of record and replay: reading this machine's facts into a Recording
// (read-only), building a private sysfs and users root from a Recording, and listing a dev root
// for the manifest. Blocking file I/O; nothing here writes outside the directories it is given.
#ifndef HOTRING_HOTPLUG_REPLAY_TREE_H_
#define HOTRING_HOTPLUG_REPLAY_TREE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/replay/manifest.h"
#include "hotplug/replay/recording.h"

namespace hotring::hotplug::replay {

// Whole file, at most `max_bytes` (OutOfRange beyond).
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes);
// Creates or replaces `path` (through a temporary file and rename, so readers never see half).
absl::Status WriteWholeFile(const std::string& path, absl::string_view content, int mode = 0644);

struct RecordOptions {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";  // modules: PROC/modules
  std::string etc_root = "/etc";    // passwd, group
  std::string kernel;               // empty: uname -r
};

// What was read, and what could not be (the recording goes on without it).
struct RecordResult {
  Recording recording;
  std::vector<std::string> problems;  // "path: error", one per skipped object
};

// Reads sysfs (every device a coldplug walk finds: its uevent, dev and modalias files, its
// subsystem and driver links), synthesizes the coldplug `add` uevents from the uevent files as
// `trigger` would make the kernel send them (SEQNUM 1, 2, ... in walk order), reads the loaded
// modules, the kernel release and the users and groups. Opens everything read-only.
absl::StatusOr<RecordResult> RecordMachine(const RecordOptions& options);

// Makes `root` (an existing empty directory) a sysfs tree holding the recording's devices:
// their directories and attribute files, `subsystem` links into class/ or bus/, the class and
// bus links back, and `driver` links; and for each firmware request the kernel's empty
// `loading` and `data` files under its DEVPATH, where the daemon's loader writes.
absl::Status BuildSysfs(const Recording& recording, const std::string& root);

// Copies the files the recording's firmware requests name from `from` (the board's
// /lib/firmware, given to the replay) into `to`, following symlinks: Bazel's runfiles are
// symlinks out of the tree, which the daemon's loader rightly refuses to follow. A name that
// is missing or unreadable is left out (the request is then answered "missing"); a name with an empty, "."
// or ".." component, or an absolute one, is never looked up (the daemon refuses it too).
// OutOfRange for a file over kMaxFirmwareBytes.
absl::Status StageFirmware(const Recording& recording, const std::string& from,
                           const std::string& to);

// What the daemon did with a firmware request, read from the `loading` file BuildSysfs made
// (what it wrote there: "1", the data, "0" when it copied the file; "-1" when it found none):
// "found", "missing", "failed" (found, but the copy failed) or "unanswered".
absl::StatusOr<std::string> FirmwareOutcomeIn(const std::string& root,
                                              const FirmwareRequest& request);

// Writes ROOT/etc/passwd and ROOT/etc/group from the recording (a root-only database when it
// has none), for `daemon --users-root`.
absl::Status BuildUsersRoot(const Recording& recording, const std::string& root);

// Whose entries a listing shows as root's.
struct ListOwner {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// Every entry under `root` (not `root` itself), lstat'ed, at most 100,000 entries and 32 levels.
// A node placeholder (hotplug/devroot/node_placeholder.h) is listed as the node it stands for.
// An owner id equal to `self`'s (the replay's own: directories the daemon made, files its
// commands wrote) is listed as 0, as on the board, where the daemon runs as root: so the
// listing is the same whoever replays.
absl::StatusOr<std::vector<DevEntry>> ListDevRoot(const std::string& root, ListOwner self);

}  // namespace hotring::hotplug::replay

#endif  // HOTRING_HOTPLUG_REPLAY_TREE_H_

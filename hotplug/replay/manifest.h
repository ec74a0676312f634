// Manifest: what a replay produced, as deterministic text (sorted, no times, no pids, no
// temporary paths): every entry of the dev root, every module load in order, every command run
// with its environment and exit status, every firmware request and whether it was served. Also the run records the replay's handler wrapper
// writes, one file per command. Pure: the replay command gathers the data.
#ifndef HOTRING_HOTPLUG_REPLAY_MANIFEST_H_
#define HOTRING_HOTPLUG_REPLAY_MANIFEST_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::replay {

inline constexpr absl::string_view kManifestHeader = "hotring-manifest 1";

// One entry under the dev root.
struct DevEntry {
  enum class Type { kDir, kFile, kChar, kBlock, kLink, kOther };
  std::string path;  // relative to the dev root
  Type type = Type::kOther;
  uint32_t major = 0, minor = 0;  // kChar, kBlock
  uint32_t uid = 0, gid = 0;
  uint32_t mode = 0;   // permission bits (07777)
  std::string target;  // kLink
};

// One command the daemon ran for an event (a rule's command, or an --exec program).
struct CommandRun {
  std::string kind;               // "rule" or "exec"
  uint64_t order = 0;             // when it started (sort key only: never printed)
  std::vector<std::string> argv;  // as the daemon gave it
  std::vector<std::string> env;   // "KEY=VALUE", as the daemon gave it
  std::string status;             // "exit 0", "signal 9", "not started: ..."
};

// Everything a manifest says. Owns its strings.
struct Manifest {
  std::vector<DevEntry> dev;            // any order: formatting sorts
  std::vector<std::string> modules;     // formatted lines, in load order
  std::vector<CommandRun> runs;         // any order: formatting sorts by `order`
  // FIRMWARE requests in event order: (file name, "found" | "missing" | "failed" | "unanswered").
  std::vector<std::pair<std::string, std::string>> firmware;
  std::vector<std::string> problems;    // what went wrong during the replay, sorted when printed
};

// The manifest's text. `work_dir` (the replay's temporary directory) is replaced by "<work>"
// wherever it appears, so the text does not depend on where the replay ran.
[[nodiscard]] std::string FormatManifest(const Manifest& manifest, absl::string_view work_dir);

// The manifest's text back as data (for tests that assert on it): dev entries, module lines as
// written, runs with the argv shown (a rule's text only) and `order` = their position. Bounded;
// InvalidArgument "LINE: what" for anything FormatManifest does not write.
[[nodiscard]] absl::StatusOr<Manifest> ParseManifest(absl::string_view text);

// Lines of a `daemon --modules-dry-run-log` file ("load NAME PATH [OPTIONS]", "install NAME
// COMMAND") as manifest lines; PATH is shown relative to `modules_root`. InvalidArgument
// "LINE: what" for a line of another shape.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ModulesFromDryRunLog(
    absl::string_view log, absl::string_view modules_root);

// The record one wrapped command leaves (line_format.h syntax).
[[nodiscard]] std::string FormatRunRecord(const CommandRun& run);
[[nodiscard]] absl::StatusOr<CommandRun> ParseRunRecord(absl::string_view text);

}  // namespace hotring::hotplug::replay

#endif  // HOTRING_HOTPLUG_REPLAY_MANIFEST_H_

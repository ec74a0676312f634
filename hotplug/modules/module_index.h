// Everything module resolution reads, loaded once: the indexes of one kernel's module tree
// (/lib/modules/VERSION: modules.dep, modules.alias, modules.symbols, modules.builtin,
// modules.builtin.alias; the .bin files mapped, or, where only the text file exists, an
// index image built from it in memory; a damaged .bin costs only its own index) and the
// modprobe.d configuration with the kernel command line.
#ifndef HOTRING_HOTPLUG_MODULES_MODULE_INDEX_H_
#define HOTRING_HOTPLUG_MODULES_MODULE_INDEX_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hotplug/modules/kmod_index.h"
#include "hotplug/modules/modprobe_config.h"

namespace hotring::hotplug::modules {

// Where the pieces are. Every path is absolute on the running system (prefix a root
// yourself for an image or a test tree).
struct ModuleIndexOptions {
  std::string modules_dir;  // e.g. /lib/modules/6.1.0-57-amd64
  // Configuration directories or files, in precedence order (kDefaultConfigDirs when the
  // caller has no other wish).
  std::vector<std::string> config_paths;
  // Kernel command line text; nullopt reads /proc/cmdline (missing: none).
  std::optional<std::string> kernel_cmdline;
  // False: a tree without modules.dep still loads (kmod's modprobe answers from the
  // configuration and the other indexes, and prints its configuration, without one). True
  // (the daemon, trigger): no modules.dep at all means no module tree, and Load fails.
  bool require_modules_dep = true;
};

// The default modules directory: /lib/modules/`uname -r` under `root`.
[[nodiscard]] std::string DefaultModulesDir(const std::string& root = "");
// kDefaultConfigDirs under `root`.
[[nodiscard]] std::vector<std::string> DefaultConfigPaths(const std::string& root = "");

// How one index of the tree was read (or why it was not).
struct IndexFile {
  enum class State {
    kAbsent,   // neither NAME.bin nor the text file exists
    kBinary,   // NAME.bin, mapped
    kText,     // no NAME.bin: built from the text file
    kEmpty,    // NAME.bin shorter than kmod's header (0 bytes in kmod's own test trees)
    kCorrupt,  // NAME.bin unreadable, bad magic or version, or truncated
  };
  std::string name;  // "modules.alias"
  std::string path;  // the file read, or the NAME.bin that could not be used
  State state = State::kAbsent;
  std::string problem;  // kEmpty, kCorrupt: what is wrong, for the log

  // Lookups in it find nothing; the other indexes still answer.
  [[nodiscard]] bool damaged() const { return state == State::kEmpty || state == State::kCorrupt; }
};

// Owns the loaded indexes and configuration. Immutable once loaded.
class ModuleIndex {
 public:
  // Each index stands alone, as in kmod 30: a NAME.bin that is empty, truncated or corrupt
  // costs that index only (its lookups find nothing, and its text file is not read instead:
  // kmod never reads the text files) and is listed in index_files() for the caller to log.
  // A missing NAME.bin is built from its text file. Fails only when `require_modules_dep` and
  // neither modules.dep.bin nor modules.dep exists (no module tree at all).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ModuleIndex>> Load(
      const ModuleIndexOptions& options);

  const std::string& modules_dir() const { return modules_dir_; }
  const std::optional<KmodIndex>& dep() const { return dep_; }
  const std::optional<KmodIndex>& alias() const { return alias_; }
  const std::optional<KmodIndex>& symbols() const { return symbols_; }
  const std::optional<KmodIndex>& builtin() const { return builtin_; }
  const std::optional<KmodIndex>& builtin_alias() const { return builtin_alias_; }
  const ModprobeConfig& config() const { return config_; }
  // Which files were read, for status and logs ("modules.alias.bin", "modules.alias (text)").
  const std::vector<std::string>& sources() const { return sources_; }
  // The five indexes (dep, alias, symbols, builtin, builtin alias) and how each was read.
  const std::vector<IndexFile>& index_files() const { return index_files_; }
  // One line per damaged index: "PATH: PROBLEM".
  [[nodiscard]] std::vector<std::string> DamagedIndexes() const;

 private:
  ModuleIndex() = default;

  std::string modules_dir_;
  std::optional<KmodIndex> dep_;
  std::optional<KmodIndex> alias_;
  std::optional<KmodIndex> symbols_;
  std::optional<KmodIndex> builtin_;
  std::optional<KmodIndex> builtin_alias_;
  ModprobeConfig config_;
  std::vector<std::string> sources_;
  std::vector<IndexFile> index_files_;
};

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_MODULE_INDEX_H_

// Everything module resolution reads, loaded once: the indexes of one kernel's module tree
// (/lib/modules/VERSION: modules.dep, modules.alias, modules.symbols, modules.builtin,
// modules.builtin.alias; the .bin files mapped, or, where only the text file exists, an
// index image built from it in memory) and the modprobe.d configuration with the kernel
// command line.
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
};

// The default modules directory: /lib/modules/`uname -r` under `root`.
[[nodiscard]] std::string DefaultModulesDir(const std::string& root = "");
// kDefaultConfigDirs under `root`.
[[nodiscard]] std::vector<std::string> DefaultConfigPaths(const std::string& root = "");

// Owns the loaded indexes and configuration. Immutable once loaded.
class ModuleIndex {
 public:
  // Fails only when modules.dep (.bin or text) is missing or unreadable: without it no module
  // can be found. The other indexes are optional, as for kmod.
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
};

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_MODULE_INDEX_H_

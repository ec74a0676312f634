// modprobe.d configuration as kmod reads it: which files (directories in precedence order, a
// file name in an earlier directory hiding the same name in later ones, then all files in name
// order, with the tree's modules.softdep among them), each line's meaning (`alias`,
// `blacklist`, `options`, `install`, `remove`, `softdep`), and the kernel command line's
// `modprobe.blacklist=` and `MODULE.PARAM=VALUE`. Pure parsing; ListConfigFiles only lists.
#ifndef HOTRING_HOTPLUG_MODULES_MODPROBE_CONFIG_H_
#define HOTRING_HOTPLUG_MODULES_MODPROBE_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {

// kmod's default configuration directories, in precedence order (relative to a root).
inline constexpr absl::string_view kDefaultConfigDirs[] = {
    "/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/lib/modprobe.d",
    "/usr/lib/modprobe.d"};

// Owns every directive of the configuration, each list in file order then command-line order.
struct ModprobeConfig {
  struct Alias {
    std::string pattern;  // fnmatch pattern, '-' normalised outside [...]
    std::string module;
  };
  struct Options {
    std::string module;   // a module name or an alias
    std::string options;  // verbatim rest of the line, tabs made spaces
  };
  struct Command {
    std::string module;  // fnmatch pattern for install lookups by module
    std::string command;
  };
  struct Softdep {
    enum class Part : uint8_t { kPre, kPost };
    std::string pattern;
    std::vector<std::string> pre;
    std::vector<std::string> post;
    // Which list each name went to, in line order: `modprobe -c` prints each list as the
    // stretch of the line from its first name to its last (kmod's softdep_to_char).
    std::vector<Part> order;
  };

  std::vector<Alias> aliases;
  std::vector<std::string> blacklist;
  std::vector<Options> options;
  std::vector<Command> install;
  std::vector<Command> remove;
  std::vector<Softdep> softdeps;
  // "FILE line N: ignoring bad line starting with 'X'" for each line kmod would reject.
  std::vector<std::string> errors;

  // Adds the directives of one file's text.
  void ParseFile(absl::string_view text, absl::string_view filename);
  // Adds `modprobe.blacklist=a,b` and `MOD.PARAM[=VALUE]` from a kernel command line.
  void ParseKernelCmdline(absl::string_view cmdline);
};

// Replaces '-' by '_' outside bracket expressions; false for an unbalanced bracket (kmod then
// rejects the name).
[[nodiscard]] bool NormaliseName(std::string* name);

// kmod's modname_normalize: the text up to the first '.', with '-' made '_'. Every module name
// that comes from an index value or a configuration line goes through it, as in
// kmod_module_new (a hand-written modules.alias may name "snd-foo").
std::string Modname(absl::string_view name);
// Modname of a path's basename ("kernel/fs/ext4.ko" -> "ext4").
std::string ModnameOfPath(absl::string_view path);

// The files kmod reads, in reading order: entries of `paths` (directories, or single files),
// `*.conf` and `*.alias` names not starting with '.', plus `modules_dir`/modules.softdep; a
// name seen in an earlier path hides later ones; sorted by name. Missing paths are skipped; a
// directory with a configuration name is skipped and, as kmod does, complained about in
// `errors` (when given).
[[nodiscard]] std::vector<std::string> ListConfigFiles(const std::vector<std::string>& paths,
                                                       const std::string& modules_dir,
                                                       std::vector<std::string>* errors = nullptr);

// Reads and parses `files` (missing or unreadable ones are skipped, as kmod does).
[[nodiscard]] ModprobeConfig LoadConfigFiles(const std::vector<std::string>& files);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_MODPROBE_CONFIG_H_

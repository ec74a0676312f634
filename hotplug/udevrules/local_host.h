// LocalHost: a RuleHost over this machine, for `udevadm test`: sysfs and /proc/sys through
// SysfsHost, programs run for real (fork + exec, their output captured, killed at the
// timeout), the builtins of hotplug/udev/builtin_registry.h
// (with this machine's hwdb.bin when it has one; net_setup_link without .link files), the /run/udev/data database, /proc/cmdline, and user and
// group names from /etc/passwd and /etc/group. Also what it shares with the tests' host:
// the database file parser and the program runner.
#ifndef HOTRING_HOTPLUG_UDEVRULES_LOCAL_HOST_H_
#define HOTRING_HOTPLUG_UDEVRULES_LOCAL_HOST_H_

#include <optional>
#include <string>
#include <vector>

#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udev/hwdb.h"
#include "hotplug/udev/sysfs_links.h"
#include "hotplug/udevrules/names.h"
#include "hotplug/udevrules/sysfs_host.h"

namespace hotring::hotplug::udevrules {

// Parses a database file's E:, G:, Q:, S:, L: lines.
void ParseDatabaseFile(absl::string_view text, DatabaseEntry* out);

// Runs `program` with `argv` (argv[0] as given) and `env` as its whole environment, stdin and
// stderr on /dev/null, and keeps at most `max_output` bytes of its stdout in *out. OK only
// when it exits 0 before `timeout` (then it is killed).
absl::Status RunProgramCaptured(const std::string& program, absl::Span<const std::string> argv,
                                absl::Span<const PropertyView> env, absl::Duration timeout,
                                size_t max_output, std::string* out);

class LocalHost final : public SysfsHost {
 public:
  struct Options {
    Roots roots;
    std::string database_dir = "/run/udev/data";
    std::string cmdline_file = "/proc/cmdline";
    std::string passwd_root = "/";
  };
  explicit LocalHost(Options options);
  // resources_ points into this object.
  LocalHost(const LocalHost&) = delete;
  LocalHost& operator=(const LocalHost&) = delete;

  absl::Status RunProgram(absl::Span<const std::string> argv, absl::Span<const PropertyView> env,
                          absl::Duration timeout, size_t max_output, std::string* out) override;
  absl::Status RunBuiltin(absl::string_view name, absl::string_view command,
                          absl::Span<const std::string> argv, absl::string_view devpath,
                          absl::Span<const PropertyView> properties, OwnedProperties* out) override;
  bool ReadDatabase(absl::string_view devpath, DatabaseEntry* out) override;
  void DeviceTags(absl::string_view devpath, std::vector<std::string>* out) override;
  absl::string_view KernelCommandLine() override { return cmdline_; }
  absl::string_view Constant(absl::string_view name) override;
  std::optional<uint32_t> UserId(absl::string_view name) override;
  std::optional<uint32_t> GroupId(absl::string_view name) override;

 protected:
  void DatabaseProperties(absl::string_view devpath, OwnedProperties* out) override;

 private:
  Options options_;
  std::string cmdline_;
  std::string arch_;
  std::string virt_;
  std::optional<PasswdFiles> names_;
  std::optional<udev::Hwdb> hwdb_;  // none when this machine has no hwdb.bin
  udev::DirSysfsLinks links_;
  udev::BuiltinResources resources_;
};

// systemd's name of this machine's architecture ("x86-64", "arm64", ...).
[[nodiscard]] std::string ArchitectureName();

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_LOCAL_HOST_H_

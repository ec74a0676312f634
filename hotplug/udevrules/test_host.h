// TestHost: a RuleHost over a recorded sysfs tree, for the golden tests and the benchmark. Runs
// programs for real (fork + exec, with a timeout), computes the builtins hotring has (input_id,
// path_id, usb_id from hotplug/udevcompat) and answers the others from udevd's recorded
// answers, reads a database directory in udevd's /run/udev/data format, and says whatever kernel
// command line, architecture and virtualization it is told.
#ifndef HOTRING_HOTPLUG_UDEVRULES_TEST_HOST_H_
#define HOTRING_HOTPLUG_UDEVRULES_TEST_HOST_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hotplug/udevrules/local_host.h"
#include "hotplug/udevrules/names.h"
#include "hotplug/udevrules/sysfs_host.h"

namespace hotring::hotplug::udevrules {

class TestHost final : public SysfsHost {
 public:
  struct Options {
    Roots roots;
    // "/lib/udev/NAME" runs PROGRAM_DIR/NAME (the rules' own scripts); "" runs it as it is.
    std::string program_dir;
    // Files named by udev device id ("c4:64", "n2", "+platform:serial8250") with E:, G:, Q:,
    // S:, L: lines; "" for none.
    std::string database_dir;
    std::string cmdline;
    std::string arch = "x86-64";
    std::string virt = "none";
    PasswdFiles names = PasswdFiles::FromText("", "");
    // udevd's answers for builtins, by "devpath\tcommand" (command as the rule wrote it after
    // substitution): the properties, or nullopt when the builtin failed.
    std::map<std::string, std::optional<OwnedProperties>> recorded_builtins;
    // Compute input_id, path_id and usb_id here (true), or take them from the recording too.
    bool own_builtins = true;
  };

  explicit TestHost(Options options);

  absl::Status RunProgram(absl::Span<const std::string> argv, absl::Span<const PropertyView> env,
                          absl::Duration timeout, size_t max_output, std::string* out) override;
  absl::Status RunBuiltin(absl::string_view name, absl::string_view command, absl::Span<const std::string> argv,
                          absl::string_view devpath, absl::Span<const PropertyView> properties,
                          OwnedProperties* out) override;
  absl::Status WriteAttribute(absl::string_view path, absl::string_view value) override;
  absl::Status WriteSysctl(absl::string_view name, absl::string_view value) override;
  bool ReadDatabase(absl::string_view devpath, DatabaseEntry* out) override;
  void DeviceTags(absl::string_view devpath, std::vector<std::string>* out) override;
  absl::string_view KernelCommandLine() override { return options_.cmdline; }
  absl::string_view Constant(absl::string_view name) override;
  std::optional<uint32_t> UserId(absl::string_view name) override { return options_.names.UserId(name); }
  std::optional<uint32_t> GroupId(absl::string_view name) override { return options_.names.GroupId(name); }

  // The builtins asked for and not answered ("devpath\tcommand"), for a test to report.
  [[nodiscard]] const std::vector<std::string>& unanswered_builtins() const { return unanswered_; }
  // What was written (and succeeded): attribute files by path below /sys ("/devices/..."),
  // kernel parameters by name, each with the last value written.
  [[nodiscard]] const std::map<std::string, std::string>& attribute_writes() const { return attribute_writes_; }
  [[nodiscard]] const std::map<std::string, std::string>& sysctl_writes() const { return sysctl_writes_; }
  // Puts back what attribute writes replaced, so that a tree serves the next test unchanged.
  void RestoreAttributes();

 protected:
  void DatabaseProperties(absl::string_view devpath, OwnedProperties* out) override;

 private:
  Options options_;
  std::vector<std::string> unanswered_;
  std::map<std::string, std::string> attribute_writes_;
  std::map<std::string, std::string> replaced_;  // path below /sys -> content before the first write
  std::map<std::string, std::string> sysctl_writes_;
};

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_TEST_HOST_H_

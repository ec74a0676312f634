#include "hotplug/udevrules/test_host.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/status.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udevrules/local_host.h"

namespace hotring::hotplug::udevrules {

TestHost::TestHost(Options options) : SysfsHost(options.roots), options_(std::move(options)) {}

absl::string_view TestHost::Constant(absl::string_view name) {
  if (name == "arch") return options_.arch;
  if (name == "virt") return options_.virt;
  return "";
}

absl::Status TestHost::WriteAttribute(absl::string_view path, absl::string_view value) {
  absl::string_view rel = path;
  absl::ConsumePrefix(&rel, "/sys");
  std::string before;
  const bool existed = SysfsHost::ReadFile(path, 1 << 20, &before).ok();
  HOTRING_RETURN_IF_ERROR(SysfsHost::WriteAttribute(path, value));
  if (existed) replaced_.try_emplace(std::string(rel), std::move(before));
  attribute_writes_[std::string(rel)] = std::string(value);
  return absl::OkStatus();
}

void TestHost::RestoreAttributes() {
  for (const auto& [rel, content] : replaced_) {
    std::ofstream(absl::StrCat(roots().sysfs, rel), std::ios::binary | std::ios::trunc) << content;
  }
  replaced_.clear();
}

absl::Status TestHost::WriteSysctl(absl::string_view name, absl::string_view value) {
  HOTRING_RETURN_IF_ERROR(SysfsHost::WriteSysctl(name, value));
  sysctl_writes_[std::string(name)] = absl::StrCat(value, "\n");
  return absl::OkStatus();
}


bool TestHost::ReadDatabase(absl::string_view devpath, DatabaseEntry* out) {
  out->Clear();
  if (options_.database_dir.empty()) return false;
  const std::string id = DeviceId(devpath);
  if (id.empty()) return false;
  std::ifstream in(absl::StrCat(options_.database_dir, "/", id));
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  ParseDatabaseFile(text.str(), out);
  return true;
}

void TestHost::DeviceTags(absl::string_view devpath, std::vector<std::string>* out) {
  out->clear();
  DatabaseEntry entry;
  if (ReadDatabase(devpath, &entry)) *out = std::move(entry.tags);
}

void TestHost::DatabaseProperties(absl::string_view devpath, OwnedProperties* out) {
  DatabaseEntry entry;
  if (!ReadDatabase(devpath, &entry)) return;
  for (auto& kv : entry.properties) out->push_back(std::move(kv));
}

absl::Status TestHost::RunBuiltin(absl::string_view name, absl::string_view command, absl::Span<const std::string> argv,
                                  absl::string_view devpath, absl::Span<const PropertyView> properties,
                                  OwnedProperties* out) {
  if (options_.own_builtins && (name == "input_id" || name == "path_id" || name == "usb_id")) {
    const udev::DirSysfsView& v = view();
    udev::Properties props = name == "input_id" ? udev::InputId(v, devpath)
                                   : name == "path_id" ? udev::PathId(v, devpath)
                                                       : udev::UsbId(v, devpath);
    // input_id always succeeds; path_id and usb_id fail when they find nothing, as in udevd.
    if (props.empty() && name != "input_id") return absl::NotFoundError(absl::StrCat(name, ": nothing found"));
    for (auto& kv : props) out->push_back(std::move(kv));
    return absl::OkStatus();
  }
  const std::string key = absl::StrCat(devpath, "\t", command);
  auto it = options_.recorded_builtins.find(key);
  if (it == options_.recorded_builtins.end()) {
    unanswered_.push_back(key);
    return absl::UnavailableError(absl::StrCat("builtin ", name, " is not available here"));
  }
  if (!it->second.has_value()) return absl::NotFoundError(absl::StrCat(name, " failed in udevd"));
  for (const auto& kv : *it->second) out->push_back(kv);
  return absl::OkStatus();
}

absl::Status TestHost::RunProgram(absl::Span<const std::string> argv, absl::Span<const PropertyView> env,
                                  absl::Duration timeout, size_t max_output, std::string* out) {
  std::string program = argv[0];
  if (!options_.program_dir.empty() && absl::StartsWith(program, "/lib/udev/")) {
    program = absl::StrCat(options_.program_dir, "/", program.substr(10));
  }
  return RunProgramCaptured(program, argv, env, timeout, max_output, out);
}

}  // namespace hotring::hotplug::udevrules

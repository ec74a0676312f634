#include "hotplug/udevrules/daemon_host.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "hotplug/event.h"
#include "io/blocking_pool.h"
#include "io/process/child_process.h"

namespace hotring::hotplug::udevrules {

std::string BuildArchitecture() {
#if defined(__x86_64__)
  return "x86-64";
#elif defined(__i386__)
  return "x86";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__arm__)
  return "arm";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}

DaemonHost::DaemonHost(const HostContext& context) : DaemonHost(context, nullptr) {}

DaemonHost::DaemonHost(const HostContext& context, const udev::BuiltinResources* builtins)
    : SysfsHost(context.roots),
      context_(context),
      builtins_(builtins != nullptr ? builtins : context.builtins),
      event_sysfs_(view(), context.shapes) {}

absl::Status DaemonHost::WriteAttribute(absl::string_view path, absl::string_view value) {
  // What was read before the write is stale now.
  event_sysfs_.Clear();
  return SysfsHost::WriteAttribute(path, value);
}

absl::string_view DaemonHost::Constant(absl::string_view name) {
  if (name == "arch") return context_.arch;
  if (name == "virt") return context_.virt;
  return "";
}

std::optional<uint32_t> DaemonHost::UserId(absl::string_view name) {
  if (context_.names == nullptr) return std::nullopt;
  return context_.names->UserId(name);
}

std::optional<uint32_t> DaemonHost::GroupId(absl::string_view name) {
  if (context_.names == nullptr) return std::nullopt;
  return context_.names->GroupId(name);
}

absl::Status DaemonHost::RunProgram(absl::Span<const std::string> argv, absl::Span<const PropertyView> env,
                                    absl::Duration timeout, size_t max_output, std::string* out) {
  out->clear();
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  if (context_.spawner == nullptr) return absl::UnavailableError("no programs here");
  io::process::SpawnRequest request;
  request.program = argv[0];
  request.argv.assign(argv.begin(), argv.end());
  for (const auto& [k, v] : env) request.envp.push_back(absl::StrCat(k, "=", v));
  request.label = "udev";
  request.timeout = timeout;
  request.kill_grace = context_.kill_grace;
  absl::StatusOr<io::process::BlockingRunResult> run = context_.spawner->Run(std::move(request), max_output);
  if (!run.ok()) {
    log_.push_back(absl::StrCat("'", argv[0], "': ", run.status().message()));
    return run.status();
  }
  for (absl::string_view line : absl::StrSplit(run->stderr_text, '\n', absl::SkipEmpty())) {
    log_.push_back(absl::StrCat("'", argv[0], "'(err) '", line, "'"));
  }
  *out = std::move(run->stdout_text);
  if (run->timed_out) {
    log_.push_back(absl::StrCat("'", argv[0], "': timed out after ", absl::FormatDuration(timeout), ", killed"));
    return absl::DeadlineExceededError(absl::StrCat(argv[0], " timed out"));
  }
  if (!run->exit.success()) {
    return absl::InternalError(absl::StrCat(argv[0], " failed: ", io::process::DescribeExit(run->exit)));
  }
  return absl::OkStatus();
}

absl::Status DaemonHost::RunBuiltin(absl::string_view name, absl::string_view command,
                                    absl::Span<const std::string> argv, absl::string_view devpath,
                                    absl::Span<const PropertyView> properties, OwnedProperties* out) {
  if (builtins_ == nullptr) return absl::UnavailableError(absl::StrCat("builtin ", name, " is not available"));
  std::string devname;
  const std::vector<PropertyView> props = PropertiesBeneath(properties, context_.dev_root, &devname);
  const udev::BuiltinDevice device{.sysfs = sysfs(), .devpath = devpath, .properties = props};
  // A builtin that reads the device waits for its I/O: on a pool's worker, another thread takes
  // the queued jobs meanwhile.
  std::optional<io::BlockingPool::WaitingElsewhere> waiting;
  if (const udev::BuiltinInfo* info = udev::FindBuiltin(name); info != nullptr && info->waits_for_device) {
    waiting.emplace();
  }
  absl::StatusOr<udev::BuiltinResult> result = udev::RunBuiltin(name, device, argv, *builtins_);
  waiting.reset();
  if (!result.ok()) return result.status();
  for (auto& kv : result->properties) out->push_back(std::move(kv));
  if (result->keyboard.has_value()) {
    auto write = [&](absl::string_view dev, absl::string_view attr, absl::string_view value) {
      return WriteAttribute(absl::StrCat("/sys", dev, "/", attr), value);
    };
    HOTRING_RETURN_IF_ERROR(ApplyKeyboard(*result->keyboard, write, &log_));
  }
  if (result->link.has_value()) {
    const udev::LinkSetup& link = *result->link;
    // The name goes through the rules (ID_NET_NAME -> NAME) and the event's rename; the address
    // and alternative names are not set here yet.
    if (link.new_mac.has_value() || !link.new_alternative_names.empty()) {
      log_.push_back(absl::StrCat("net_setup_link: ", link.config_file,
                                  ": MACAddress and AlternativeName are not applied"));
    }
  }
  return absl::OkStatus();
}

std::string DaemonHost::DeviceIdOf(absl::string_view devpath) {
  Event e;
  e.devpath = std::string(devpath);
  std::string subsystem;
  if (Subsystem(devpath, &subsystem)) e.subsystem = subsystem;
  std::string uevent;
  if (ReadAttribute(devpath, "uevent", &uevent)) {
    for (absl::string_view line : absl::StrSplit(uevent, '\n', absl::SkipEmpty())) {
      const size_t eq = line.find('=');
      if (eq == absl::string_view::npos) continue;
      const absl::string_view key = line.substr(0, eq);
      const std::string value(line.substr(eq + 1));
      if (key == "MAJOR") e.major = value;
      if (key == "MINOR") e.minor = value;
      if (key == "IFINDEX") e.env.emplace_back("IFINDEX", value);
    }
  }
  absl::StatusOr<std::string> id = udev::DeviceId(e);
  return id.ok() ? *std::move(id) : "";
}

bool DaemonHost::ReadDatabase(absl::string_view devpath, DatabaseEntry* out) {
  out->Clear();
  if (context_.database == nullptr) return false;
  const udev::DatabaseEntry* entry = nullptr;
  if (!event_devpath_.empty() && devpath == event_devpath_) {
    entry = event_entry_;
  } else {
    auto it = entries_.find(devpath);
    if (it == entries_.end()) {
      std::optional<udev::DatabaseEntry> read;
      const std::string id = DeviceIdOf(devpath);
      if (!id.empty()) {
        if (absl::StatusOr<std::string> text = context_.database->Read(id); text.ok()) {
          read = udev::ParseDatabaseEntry(*text);
        }
      }
      it = entries_.emplace(std::string(devpath), std::move(read)).first;
    }
    if (it->second.has_value()) entry = &*it->second;
  }
  if (entry == nullptr) return false;
  out->properties = entry->properties;
  out->tags = entry->tags;
  out->current_tags = entry->current_tags;
  out->links = entry->links;
  out->link_priority = entry->link_priority;
  return true;
}

bool DaemonHost::DeviceProperties(absl::string_view devpath, OwnedProperties* out) {
  auto it = device_properties_.find(devpath);
  if (it == device_properties_.end()) {
    std::optional<OwnedProperties> props;
    OwnedProperties p;
    if (SysfsHost::DeviceProperties(devpath, &p)) props = std::move(p);
    it = device_properties_.emplace(std::string(devpath), std::move(props)).first;
  }
  out->clear();
  if (!it->second.has_value()) return false;
  *out = *it->second;
  return true;
}

void DaemonHost::DeviceTags(absl::string_view devpath, std::vector<std::string>* out) {
  out->clear();
  DatabaseEntry entry;
  if (ReadDatabase(devpath, &entry)) *out = std::move(entry.tags);
}

void DaemonHost::DatabaseProperties(absl::string_view devpath, OwnedProperties* out) {
  DatabaseEntry entry;
  if (!ReadDatabase(devpath, &entry)) return;
  for (auto& kv : entry.properties) out->push_back(std::move(kv));
}

}  // namespace hotring::hotplug::udevrules

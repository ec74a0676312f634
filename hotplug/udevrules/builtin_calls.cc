#include "hotplug/udevrules/builtin_calls.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/udev/net_naming.h"

namespace hotring::hotplug::udevrules {
namespace {

std::string ReadSmall(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  char buf[256];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n <= 0) return "";
  return std::string(absl::StripAsciiWhitespace(absl::string_view(buf, static_cast<size_t>(n))));
}

udev::LinkSystemFacts SystemFacts(const BuiltinSources& sources) {
  udev::LinkSystemFacts facts;
  struct utsname u;
  if (::uname(&u) == 0) {
    facts.hostname = u.nodename;
    facts.kernel_release = u.release;
  }
  facts.machine_id = ReadSmall(sources.machine_id_file);
  facts.virtualization = sources.virtualization;
  facts.kernel_cmdline = sources.kernel_cmdline;
  facts.architecture = sources.architecture;
  return facts;
}

}  // namespace

std::unique_ptr<BuiltinWorld> LoadBuiltinWorld(const BuiltinSources& sources, std::vector<std::string>* warnings) {
  auto world = std::make_unique<BuiltinWorld>();
  std::vector<absl::string_view> hwdb_paths(sources.hwdb_paths.begin(), sources.hwdb_paths.end());
  absl::StatusOr<udev::Hwdb> hwdb = hwdb_paths.empty() ? udev::Hwdb::OpenFirst() : udev::Hwdb::OpenFirst(hwdb_paths);
  if (hwdb.ok()) {
    world->hwdb.emplace(*std::move(hwdb));
  } else if (!absl::IsNotFound(hwdb.status())) {
    warnings->push_back(absl::StrCat("hwdb: ", hwdb.status().message()));
  }
  std::vector<absl::string_view> dirs(sources.network_dirs.begin(), sources.network_dirs.end());
  const udev::LinkSystemFacts facts = SystemFacts(sources);
  world->link_configs.emplace(dirs.empty() ? udev::LinkConfigs::Load(facts, udev::kNetworkDirs, warnings)
                                           : udev::LinkConfigs::Load(facts, dirs, warnings));
  world->links = std::make_unique<udev::DirSysfsLinks>(sources.sysfs_root);
  world->link_system = std::make_unique<udev::RealLinkSystem>();
  world->system = std::make_unique<udev::RealBuiltinSystem>();
  udev::BuiltinResources& r = world->resources;
  r.hwdb = world->hwdb.has_value() ? &*world->hwdb : nullptr;
  r.naming = udev::NamingSchemeFor(sources.kernel_cmdline);
  r.links = world->links.get();
  r.link_configs = &*world->link_configs;
  r.link_system = world->link_system.get();
  r.system = world->system.get();
  return world;
}

std::vector<PropertyView> PropertiesBeneath(absl::Span<const PropertyView> properties, absl::string_view dev_root,
                                            std::string* storage) {
  std::vector<PropertyView> out(properties.begin(), properties.end());
  if (dev_root == "/dev") return out;
  for (PropertyView& kv : out) {
    if (kv.first != "DEVNAME") continue;
    absl::string_view name = kv.second;
    if (!absl::ConsumePrefix(&name, "/dev/") && absl::StartsWith(name, "/")) continue;
    *storage = absl::StrCat(dev_root, "/", name);
    kv.second = *storage;
  }
  return out;
}

absl::Status ApplyKeyboard(const udev::KeyboardSetup& setup, AttributeWriter write, std::vector<std::string>* log) {
  for (const std::string& w : setup.warnings) log->push_back(absl::StrCat("keyboard: ", w));
  if (setup.needs_node) {
    UniqueFd fd(::open(setup.devnode.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd.valid()) return ErrnoStatus(absl::StrCat("keyboard: open(", setup.devnode, ")"));
    if (absl::Status s = udev::ApplyKeyboardIoctls(fd.get(), setup); !s.ok()) {
      // udevd logs each failed mapping and goes on.
      log->push_back(absl::StrCat("keyboard: ", s.message()));
    }
  }
  for (const udev::AttributeWrite& w : setup.writes) {
    if (absl::Status s = write(w.devpath, w.name, w.value); !s.ok()) {
      log->push_back(absl::StrCat("keyboard: ", w.devpath, "/", w.name, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace hotring::hotplug::udevrules

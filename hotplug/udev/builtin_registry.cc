#include "hotplug/udev/builtin_registry.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "hotplug/udev/block_probe.h"

namespace hotring::hotplug::udev {
namespace {

// input_id, path_id, usb_id: pure functions of sysfs.
class SysfsBuiltin final : public Builtin {
 public:
  using Fn = Properties (*)(const SysfsView&, absl::string_view);
  SysfsBuiltin(Fn fn, bool may_fail) : fn_(fn), may_fail_(may_fail) {}
  absl::Status Run(const BuiltinContext& context, Properties* out) const override {
    Properties props = fn_(context.sysfs, context.devpath);
    // input_id always succeeds; path_id and usb_id fail when they find nothing, as in udevd.
    if (props.empty() && may_fail_) return absl::NotFoundError("nothing found");
    for (auto& kv : props) out->push_back(std::move(kv));
    return absl::OkStatus();
  }

 private:
  Fn fn_;
  bool may_fail_;
};

// blkid from hotring's probers. Its options (--noraid, --offset, --hint) are not read: the
// probers look at the device's start only and know no RAID members.
class ProbeBlkid final : public Builtin {
 public:
  absl::Status Run(const BuiltinContext& context, Properties* out) const override {
    absl::string_view devname = context.Property("DEVNAME");
    if (!absl::ConsumePrefix(&devname, "/dev/")) return absl::NotFoundError("no device node");
    std::string error;
    if (!ProbeBlockDevice(context.sysfs, context.devpath, context.Property("DEVTYPE"), devname,
                          context.Property("PARTN"), std::string(context.dev_root), *out, &error)) {
      return absl::NotFoundError(absl::StrCat("cannot open ", devname, error.empty() ? "" : ": ", error));
    }
    // A malformed superblock is not a failure of the builtin: libblkid reports nothing for it.
    return absl::OkStatus();
  }
};

}  // namespace

void BuiltinRegistry::Add(std::string name, std::unique_ptr<Builtin> builtin) {
  builtins_[std::move(name)] = std::move(builtin);
}

const Builtin* BuiltinRegistry::Find(absl::string_view name) const {
  auto it = builtins_.find(name);
  return it == builtins_.end() ? nullptr : it->second.get();
}

std::vector<std::string> BuiltinRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, builtin] : builtins_) names.push_back(name);
  return names;
}

absl::Status BuiltinRegistry::Reload() {
  absl::Status first;
  for (auto& [name, builtin] : builtins_) {
    absl::Status s = builtin->Reload();
    if (!s.ok() && first.ok()) first = absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
  }
  return first;
}

BuiltinRegistry DefaultBuiltinRegistry() {
  BuiltinRegistry registry;
  registry.Add("input_id", std::make_unique<SysfsBuiltin>(&InputId, /*may_fail=*/false));
  registry.Add("path_id", std::make_unique<SysfsBuiltin>(&PathId, /*may_fail=*/true));
  registry.Add("usb_id", std::make_unique<SysfsBuiltin>(&UsbId, /*may_fail=*/true));
  registry.Add("blkid", std::make_unique<ProbeBlkid>());
  return registry;
}

}  // namespace hotring::hotplug::udev

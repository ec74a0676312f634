#include "hotplug/cli/udevadm/enumerator.h"

#include <dirent.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr int kMaxDepth = 256;

bool Glob(const std::string& pattern, absl::string_view subject) {
  return fnmatch(pattern.c_str(), std::string(subject).c_str(), 0) == 0;
}

// Owns the devices found so far, by syspath.
class Scan {
 public:
  Scan(const Roots& roots, const EnumeratorFilter& filter) : roots_(roots), filter_(filter) {}

  bool MatchSubsystem(const std::optional<std::string>& subsystem) const {
    if (!subsystem) return false;
    for (const std::string& p : filter_.subsystem_nomatch) {
      if (Glob(p, *subsystem)) return false;
    }
    if (filter_.subsystem_match.empty()) return true;
    for (const std::string& p : filter_.subsystem_match) {
      if (Glob(p, *subsystem)) return true;
    }
    return false;
  }

  bool MatchSysname(absl::string_view sysname) const {
    if (filter_.sysname_match.empty()) return true;
    for (const std::string& p : filter_.sysname_match) {
      if (Glob(p, sysname)) return true;
    }
    return false;
  }

  static bool MatchAttr(UdevDevice& d, const std::pair<std::string, std::optional<std::string>>& m) {
    absl::StatusOr<std::string> v = d.SysattrValue(m.first);
    if (!v.ok()) return false;
    return !m.second || Glob(*m.second, *v);
  }

  bool MatchParent(UdevDevice& d) const {
    if (filter_.parent_match.empty()) return true;
    for (const std::string& p : filter_.parent_match) {
      if (d.syspath() == p || absl::StartsWith(d.syspath(), p + "/")) return true;
    }
    return false;
  }

  // sd-device's test_matches (the sysname is checked by the caller).
  bool Matches(UdevDevice& d, bool check_subsystem, bool check_parent) const {
    if (filter_.initialized != EnumeratorFilter::Initialized::kAll) {
      const bool initialized = d.IsInitialized();
      if (filter_.initialized == EnumeratorFilter::Initialized::kCompat) {
        if (!initialized && (d.Devnum() || d.Ifindex())) return false;
      } else if ((filter_.initialized == EnumeratorFilter::Initialized::kNo) != !initialized) {
        return false;
      }
    }
    if (check_subsystem && !MatchSubsystem(d.Subsystem())) return false;
    if (check_parent && !MatchParent(d)) return false;
    for (const std::string& tag : filter_.tag_match) {
      if (!d.HasTag(tag)) return false;
    }
    if (!filter_.property_match.empty()) {
      bool any = false;
      for (const auto& [key, value] : filter_.property_match) {
        for (const auto& [k, v] : d.Properties()) {
          if (Glob(key, k) && Glob(value, v)) {
            any = true;
            break;
          }
        }
        if (any) break;
      }
      if (!any) return false;
    }
    for (const auto& m : filter_.attr_nomatch) {
      if (MatchAttr(d, m)) return false;
    }
    for (const auto& m : filter_.attr_match) {
      if (!MatchAttr(d, m)) return false;
    }
    return true;
  }

  // False when the device was there already.
  bool Add(std::unique_ptr<UdevDevice> d) {
    const std::string key = d->syspath();
    return devices_.emplace(key, std::move(d)).second;
  }

  void AddParents(const UdevDevice& child) {
    std::string path = child.syspath();
    for (;;) {
      std::unique_ptr<UdevDevice> parent = ParentOf(path);
      if (parent == nullptr) return;
      path = parent->syspath();
      if (!MatchSysname(parent->Sysname()) || !Matches(*parent, true, false)) continue;
      if (!Add(std::move(parent))) return;
    }
  }

  std::unique_ptr<UdevDevice> ParentOf(const std::string& syspath) const {
    std::string path = syspath;
    for (;;) {
      const size_t slash = path.rfind('/');
      if (slash == std::string::npos || slash < 6) return nullptr;
      path.resize(slash);
      absl::StatusOr<std::unique_ptr<UdevDevice>> d = UdevDevice::FromSyspath(roots_, path);
      if (d.ok()) return std::move(*d);
    }
  }

  std::vector<std::string> List(const std::string& logical, bool dirs_only = false) const {
    std::vector<std::string> names;
    DIR* dir = opendir(roots_.Map(logical).c_str());
    if (dir == nullptr) return names;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      if (dirs_only && e->d_type != DT_DIR) continue;
      names.emplace_back(e->d_name);
    }
    closedir(dir);
    return names;
  }

  void ScanDirAndAdd(const std::string& dir) {
    for (const std::string& name : List(dir)) {
      if (!MatchSysname(name)) continue;
      absl::StatusOr<std::unique_ptr<UdevDevice>> d =
          UdevDevice::FromSyspath(roots_, absl::StrCat(dir, "/", name));
      if (!d.ok()) continue;
      if (!Matches(**d, true, true)) continue;
      UdevDevice* raw = d->get();
      std::unique_ptr<UdevDevice> owned = std::move(*d);
      const std::string key = raw->syspath();
      if (!Add(std::move(owned))) continue;
      AddParents(*devices_.at(key));
    }
  }

  // DIR/*/SUBDIR, for the directories whose name passes the subsystem filter (or, when
  // `subsystem` is given, when that does).
  void ScanDir(const std::string& base, const std::string& subdir,
               const std::optional<std::string>& subsystem) {
    for (const std::string& name : List(base)) {
      if (!MatchSubsystem(subsystem ? subsystem : std::optional<std::string>(name))) continue;
      ScanDirAndAdd(subdir.empty() ? absl::StrCat(base, "/", name)
                                   : absl::StrCat(base, "/", name, "/", subdir));
    }
  }

  std::string SubsystemDir() const {
    return access(roots_.Map("/sys/subsystem").c_str(), F_OK) == 0 ? "/sys/subsystem" : "/sys/bus";
  }

  void ScanDevices() {
    if (!filter_.tag_match.empty()) {
      ScanTags();
    } else if (!filter_.parent_match.empty()) {
      ScanChildren();
    } else if (SubsystemDir() == "/sys/subsystem") {
      ScanDir("/sys/subsystem", "devices", std::nullopt);
    } else {
      ScanDir("/sys/bus", "devices", std::nullopt);
      ScanDir("/sys/class", "", std::nullopt);
    }
  }

  void ScanSubsystems() {
    if (MatchSubsystem(std::string("module"))) ScanDirAndAdd("/sys/module");
    const std::string dir = SubsystemDir();
    if (MatchSubsystem(std::string("subsystem"))) ScanDirAndAdd(dir);
    if (MatchSubsystem(std::string("drivers"))) ScanDir(dir, "drivers", std::string("drivers"));
  }

  void ScanTags() {
    for (const std::string& tag : filter_.tag_match) {
      for (const std::string& id : List(absl::StrCat("/run/udev/tags/", tag))) {
        absl::StatusOr<std::unique_ptr<UdevDevice>> d = UdevDevice::FromDeviceId(roots_, id);
        if (!d.ok()) continue;
        if (!MatchSysname((*d)->Sysname()) || !Matches(**d, true, true)) continue;
        Add(std::move(*d));
      }
    }
  }

  void AddChild(const std::string& path) {
    absl::StatusOr<std::unique_ptr<UdevDevice>> d = UdevDevice::FromSyspath(roots_, path);
    if (!d.ok() || !Matches(**d, true, false)) return;
    Add(std::move(*d));
  }

  void Crawl(const std::string& path, int depth) {
    for (const std::string& name : List(path, /*dirs_only=*/true)) {
      const std::string child = absl::StrCat(path, "/", name);
      if (MatchSysname(name)) AddChild(child);
      if (depth > 0) Crawl(child, depth - 1);
    }
  }

  void ScanChildren() {
    for (const std::string& parent : filter_.parent_match) {
      absl::StatusOr<std::unique_ptr<UdevDevice>> d = UdevDevice::FromSyspath(roots_, parent);
      if (d.ok() && MatchSysname((*d)->Sysname())) AddChild(parent);
      Crawl(parent, kMaxDepth);
    }
  }

  std::vector<std::unique_ptr<UdevDevice>> Sorted() {
    std::vector<std::unique_ptr<UdevDevice>> out;
    auto by_compare = [](const std::unique_ptr<UdevDevice>& a, const std::unique_ptr<UdevDevice>& b) {
      return DeviceCompare(a->devpath(), b->devpath()) < 0;
    };
    size_t sorted = 0;
    for (const std::string& prioritized : filter_.prioritized_subsystems) {
      // The subsystem's devices with their listed ancestors, sorted among themselves.
      for (;;) {
        std::vector<std::string> take;
        for (auto& [path, device] : devices_) {
          if (device->Subsystem() != prioritized) continue;
          take.push_back(path);
          std::string p = path;
          for (size_t slash; (slash = p.rfind('/')) != std::string::npos && slash > 0;) {
            p.resize(slash);
            if (devices_.count(p) != 0) take.push_back(p);
          }
          break;
        }
        if (take.empty()) break;
        for (const std::string& path : take) {
          auto it = devices_.find(path);
          if (it == devices_.end()) continue;
          out.push_back(std::move(it->second));
          devices_.erase(it);
        }
      }
      std::sort(out.begin() + sorted, out.end(), by_compare);
      sorted = out.size();
    }
    for (auto& [path, device] : devices_) out.push_back(std::move(device));
    devices_.clear();
    std::sort(out.begin() + sorted, out.end(), by_compare);
    return out;
  }

 private:
  const Roots& roots_;
  const EnumeratorFilter& filter_;
  std::map<std::string, std::unique_ptr<UdevDevice>> devices_;
};

bool Delayed(absl::string_view devpath) {
  return absl::StrContains(devpath, "/block/md") || absl::StrContains(devpath, "/block/dm-");
}

}  // namespace

int DeviceCompare(absl::string_view a, absl::string_view b) {
  // 252 means to put a sound card's control device after the card's other devices, but its
  // comparison looks at the wrong part of the path and never does: devices of a card are in
  // path order, as here.
  const bool delay_a = Delayed(a);
  const bool delay_b = Delayed(b);
  if (delay_a != delay_b) return delay_a ? 1 : -1;
  return PathCompare(a, b);
}

absl::StatusOr<std::vector<std::unique_ptr<UdevDevice>>> EnumerateDevices(
    const Roots& roots, const EnumeratorFilter& filter) {
  if (access(roots.Map("/sys").c_str(), R_OK | X_OK) != 0) {
    return ErrnoStatus(absl::StrCat("access ", roots.sys));
  }
  Scan scan(roots, filter);
  if (filter.type != EnumeratorFilter::Type::kSubsystems) scan.ScanDevices();
  if (filter.type != EnumeratorFilter::Type::kDevices) scan.ScanSubsystems();
  return scan.Sorted();
}

}  // namespace hotring::hotplug::udevadm

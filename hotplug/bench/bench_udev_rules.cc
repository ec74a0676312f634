#include "hotplug/bench/bench_udev_rules.h"

#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/sysfs_host.h"

namespace hotring::hotplug::bench {
namespace {

namespace ur = udevrules;

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double WallSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// What was read of sysfs, kept for the next pass: absent answers too.
template <typename V>
using Cache = absl::flat_hash_map<std::string, V>;

// sysfs as the builtins see it, read once.
class CachingView final : public udev::SysfsView {
 public:
  explicit CachingView(const udev::SysfsView& inner) : inner_(inner) {}
  std::optional<std::string> Attribute(absl::string_view devpath, absl::string_view name) const override {
    return Get(attributes_, devpath, name, [&] { return inner_.Attribute(devpath, name); });
  }
  std::optional<std::string> LinkName(absl::string_view devpath, absl::string_view name) const override {
    return Get(links_, devpath, name, [&] { return inner_.LinkName(devpath, name); });
  }
  bool IsDevice(absl::string_view devpath) const override {
    auto it = devices_.find(devpath);
    if (it == devices_.end()) it = devices_.emplace(std::string(devpath), inner_.IsDevice(devpath)).first;
    return it->second;
  }
  std::vector<std::string> List(absl::string_view path) const override {
    auto it = lists_.find(path);
    if (it == lists_.end()) it = lists_.emplace(std::string(path), inner_.List(path)).first;
    return it->second;
  }

 private:
  using Table = Cache<Cache<std::optional<std::string>>>;
  template <typename F>
  static std::optional<std::string> Get(Table& table, absl::string_view devpath, absl::string_view name, F read) {
    auto& device = table[devpath];
    auto it = device.find(name);
    if (it == device.end()) it = device.emplace(std::string(name), read()).first;
    return it->second;
  }
  const udev::SysfsView& inner_;
  mutable Table attributes_;
  mutable Table links_;
  mutable Cache<bool> devices_;
  mutable Cache<std::vector<std::string>> lists_;
};

// A host that reads sysfs once and answers from memory afterwards, filling the caller's buffers
// in place (no allocation once warm). Programs are not run; builtins are hotring's three (or
// none).
class CachingHost final : public ur::SysfsHost {
 public:
  CachingHost(const std::string& sysfs, const ur::NameLookup& names, bool builtins)
      : SysfsHost(Roots{.sysfs = sysfs}), cached_view_(view()), names_(names), builtins_(builtins) {}

  bool ReadAttribute(absl::string_view devpath, absl::string_view name, std::string* out) override {
    auto& device = attributes_[devpath];
    auto it = device.find(name);
    if (it == device.end()) {
      std::string value;
      const bool found = SysfsHost::ReadAttribute(devpath, name, &value);
      it = device.emplace(std::string(name), found ? std::optional<std::string>(std::move(value)) : std::nullopt).first;
    }
    if (!it->second.has_value()) return false;
    out->assign(*it->second);
    return true;
  }
  bool Subsystem(absl::string_view devpath, std::string* out) override {
    return Cached(subsystems_, devpath, out, [&](std::string* v) { return SysfsHost::Subsystem(devpath, v); });
  }
  bool Driver(absl::string_view devpath, std::string* out) override {
    return Cached(drivers_, devpath, out, [&](std::string* v) { return SysfsHost::Driver(devpath, v); });
  }
  bool Parent(absl::string_view devpath, std::string* out) override {
    return Cached(parents_, devpath, out, [&](std::string* v) { return SysfsHost::Parent(devpath, v); });
  }
  absl::Status RunProgram(absl::Span<const std::string>, absl::Span<const ur::PropertyView>, absl::Duration,
                          size_t, std::string*) override {
    ++programs_;
    return NotRun();
  }
  absl::Status RunBuiltin(absl::string_view name, absl::string_view, absl::Span<const std::string>,
                          absl::string_view devpath, absl::Span<const ur::PropertyView>,
                          ur::OwnedProperties* out) override {
    if (builtins_ && (name == "input_id" || name == "path_id" || name == "usb_id")) {
      udev::Properties props = name == "input_id" ? udev::InputId(cached_view_, devpath)
                                     : name == "path_id" ? udev::PathId(cached_view_, devpath)
                                                         : udev::UsbId(cached_view_, devpath);
      if (props.empty() && name != "input_id") return absl::NotFoundError("nothing found");
      for (auto& kv : props) out->push_back(std::move(kv));
      return absl::OkStatus();
    }
    ++builtins_failed_;
    return NotRun();
  }
  bool FindDevice(absl::string_view subsystem, absl::string_view sysname, std::string* out) override {
    key_.assign(subsystem.data(), subsystem.size());
    key_.push_back('/');
    key_.append(sysname.data(), sysname.size());
    return Cached(found_, key_, out, [&](std::string* v) { return SysfsHost::FindDevice(subsystem, sysname, v); });
  }
  std::optional<uint32_t> FileMode(absl::string_view path) override {
    auto it = modes_.find(path);
    if (it == modes_.end()) it = modes_.emplace(std::string(path), SysfsHost::FileMode(path)).first;
    return it->second;
  }
  bool DeviceProperties(absl::string_view devpath, ur::OwnedProperties* out) override {
    auto it = properties_.find(devpath);
    if (it == properties_.end()) {
      ur::OwnedProperties props;
      const bool found = SysfsHost::DeviceProperties(devpath, &props);
      it = properties_.emplace(std::string(devpath), found ? std::optional<ur::OwnedProperties>(std::move(props)) : std::nullopt).first;
    }
    if (!it->second.has_value()) return false;
    out->resize(it->second->size());
    for (size_t i = 0; i < out->size(); ++i) {
      (*out)[i].first.assign((*it->second)[i].first);
      (*out)[i].second.assign((*it->second)[i].second);
    }
    return true;
  }
  bool ReadDatabase(absl::string_view, ur::DatabaseEntry* out) override {
    out->Clear();
    return false;
  }
  void DeviceTags(absl::string_view, std::vector<std::string>* out) override { out->clear(); }
  absl::string_view KernelCommandLine() override { return ""; }
  absl::string_view Constant(absl::string_view name) override { return name == "arch" ? "x86-64" : "none"; }
  std::optional<uint32_t> UserId(absl::string_view name) override { return names_.UserId(name); }
  std::optional<uint32_t> GroupId(absl::string_view name) override { return names_.GroupId(name); }

  uint64_t programs_ = 0;
  uint64_t builtins_failed_ = 0;

 private:
  // One error shared by every refusal: copying a Status allocates nothing.
  static absl::Status NotRun() {
    static const absl::Status* const status = new absl::Status(absl::UnavailableError("not run here"));
    return *status;
  }
  template <typename F>
  static bool Cached(Cache<std::optional<std::string>>& cache, absl::string_view key, std::string* out, F read) {
    auto it = cache.find(key);
    if (it == cache.end()) {
      std::string value;
      const bool found = read(&value);
      it = cache.emplace(std::string(key), found ? std::optional<std::string>(std::move(value)) : std::nullopt).first;
    }
    if (!it->second.has_value()) return false;
    out->assign(*it->second);
    return true;
  }
  Cache<Cache<std::optional<std::string>>> attributes_;
  Cache<std::optional<std::string>> subsystems_;
  Cache<std::optional<std::string>> drivers_;
  Cache<std::optional<std::string>> parents_;
  Cache<std::optional<ur::OwnedProperties>> properties_;
  Cache<std::optional<std::string>> found_;
  Cache<std::optional<uint32_t>> modes_;
  std::string key_;
  CachingView cached_view_;
  const ur::NameLookup& names_;
  const bool builtins_;
};

// Every directory under ROOT/devices with a uevent file, as devpaths.
void FindDevices(const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  DIR* d = ::opendir(absl::StrCat(root, rel).c_str());
  if (d == nullptr) return;
  std::vector<std::string> dirs;
  bool device = false;
  while (const dirent* e = ::readdir(d)) {
    const absl::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    if (name == "uevent") device = true;
    if (e->d_type == DT_DIR) dirs.emplace_back(name);
  }
  ::closedir(d);
  if (device && rel != "/devices") out->push_back(rel);
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& dir : dirs) FindDevices(root, absl::StrCat(rel, "/", dir), out);
}

}  // namespace

absl::StatusOr<UdevRulesBenchReport> RunUdevRulesBench(const UdevRulesBenchOptions& options) {
  UdevRulesBenchReport report;
  absl::StatusOr<ur::PasswdFiles> names = ur::PasswdFiles::Load(options.names_root);
  if (!names.ok()) return names.status();
  ur::CompileOptions compile;
  compile.names = &*names;
  std::vector<double> compile_ms;
  std::unique_ptr<ur::CompiledRules> rules;
  for (int i = 0; i < std::max(1, options.compile_rounds); ++i) {
    const double start = WallSeconds();
    absl::StatusOr<std::unique_ptr<ur::CompiledRules>> loaded = ur::LoadRules(options.rules_dirs, compile);
    if (!loaded.ok()) return loaded.status();
    compile_ms.push_back((WallSeconds() - start) * 1000);
    rules = std::move(*loaded);
  }
  std::sort(compile_ms.begin(), compile_ms.end());
  report.compile_ms_median = compile_ms[compile_ms.size() / 2];
  report.compile_ms_min = compile_ms.front();
  report.files = rules->file_count();
  report.rules = rules->lines().size();
  report.tokens = rules->token_count();
  report.load_errors = rules->diagnostics().errors();
  report.load_warnings = rules->diagnostics().warnings();

  std::vector<std::string> devpaths = options.devpaths;
  if (devpaths.empty()) FindDevices(options.sysfs, "/devices", &devpaths);
  report.devices = devpaths.size();
  CachingHost host(options.sysfs, *names, options.builtins);
  // Each device's event as the kernel would send it: its uevent file with ACTION, DEVPATH and
  // SUBSYSTEM.
  struct Event {
    std::string devpath;
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<ur::PropertyView> views;
  };
  std::vector<Event> events(devpaths.size());
  for (size_t i = 0; i < devpaths.size(); ++i) {
    Event& e = events[i];
    e.devpath = devpaths[i];
    e.env = {{"ACTION", "add"}, {"DEVPATH", e.devpath}};
    std::string text;
    if (host.Subsystem(e.devpath, &text)) e.env.emplace_back("SUBSYSTEM", text);
    if (host.ReadAttribute(e.devpath, "uevent", &text)) {
      for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
        const size_t eq = line.find('=');
        if (eq != absl::string_view::npos) e.env.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
      }
    }
    for (const auto& [k, v] : e.env) e.views.emplace_back(k, v);
  }
  ur::Executor executor;
  ur::Outcome outcome;
  const ur::ExecuteOptions execute;
  uint64_t lines = 0;
  double cpu = 0;
  uint64_t allocations = 0;
  for (int pass = 0; pass < std::max(2, options.passes); ++pass) {
    const uint64_t programs_before = host.programs_;
    const uint64_t builtins_before = host.builtins_failed_;
    const uint64_t alloc_before = options.allocations ? options.allocations() : 0;
    const double start = ThreadCpuSeconds();
    for (const Event& e : events) {
      executor.Run(*rules, {.action = "add", .devpath = e.devpath, .properties = e.views}, host, execute, &outcome);
      if (pass > 0) lines += outcome.lines_applied;
    }
    const double took = ThreadCpuSeconds() - start;
    if (pass == 0) {
      report.programs_not_run = host.programs_ - programs_before;
      report.builtins_failed = host.builtins_failed_ - builtins_before;
      continue;
    }
    cpu += took;
    if (options.allocations) allocations += options.allocations() - alloc_before;
    report.events += events.size();
  }
  if (report.events > 0) {
    report.us_per_event = cpu * 1e6 / static_cast<double>(report.events);
    report.lines_applied_per_event = static_cast<double>(lines) / static_cast<double>(report.events);
    if (options.allocations) {
      report.allocations_per_event = static_cast<double>(allocations) / static_cast<double>(report.events);
    }
  }
  return report;
}

std::string FormatUdevRulesReport(const UdevRulesBenchReport& r) {
  std::string out = absl::StrFormat(
      "rules: %d files, %d rules, %d tokens, %d errors, %d warnings\n"
      "compile: %.2f ms (median), %.2f ms (best)\n"
      "events: %d devices, %d counted events, %.2f us per event (CPU), %.1f lines looked at per event\n",
      r.files, r.rules, r.tokens, r.load_errors, r.load_warnings, r.compile_ms_median, r.compile_ms_min, r.devices,
      r.events, r.us_per_event, r.lines_applied_per_event);
  if (r.allocations_per_event >= 0) absl::StrAppendFormat(&out, "allocations: %.2f per event\n", r.allocations_per_event);
  absl::StrAppendFormat(&out, "per pass: %d programs not run, %d builtins failed (not input_id/path_id/usb_id)\n",
                        r.programs_not_run, r.builtins_failed);
  return out;
}

}  // namespace hotring::hotplug::bench

// Fuzzes the udev rules parser and compiler, the substitution engine and the executor together
// (hotplug/udevrules). The input is a rules file, then (after the first NUL byte) the event's
// KEY=VALUE lines, then (after a second NUL) the device's attributes as NAME=VALUE lines. Beyond
// "no crash and no hang":
//   - every problem is reported as "fuzz.rules:LINE: ...", and no more are kept than the bound;
//   - the program is well formed: each line's tokens sorted by type, a GOTO only ever to a
//     later line of its file;
//   - the outcome keeps udevd's invariants and hotring's promises: no key twice, no NAME for a
//     device without IFINDEX, links normalized and inside /dev, RUN programs with absolute
//     argv[0], nothing longer than udevd's buffers allow;
//   - a warm executor gives the same outcome again;
//   - substitution of every value of the rules fits the buffer it is given, and short
//     patterns taken from the input match as glibc's fnmatch says.
#include <fnmatch.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "hotplug/udev/ifindex.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/format.h"
#include "hotplug/udevrules/glob.h"
#include "testing/fuzz/fuzz_check.h"

namespace hotring::fuzz {
namespace {

namespace ur = hotplug::udevrules;

constexpr absl::string_view kDevpath = "/devices/platform/soc/usb1/1-1/tty/ttyUSB0";

// A device, its three ancestors and fixed answers for everything else.
class FuzzHost final : public ur::RuleHost {
 public:
  std::map<std::string, std::string, std::less<>> attributes;

  bool ReadAttribute(absl::string_view devpath, absl::string_view name, std::string* out) override {
    if (devpath != kDevpath) return false;
    auto it = attributes.find(name);
    if (it == attributes.end()) return false;
    *out = it->second;
    return true;
  }
  bool Subsystem(absl::string_view devpath, std::string* out) override {
    *out = absl::EndsWith(devpath, "1-1") ? "usb" : "platform";
    return true;
  }
  bool Driver(absl::string_view devpath, std::string* out) override {
    if (!absl::EndsWith(devpath, "1-1")) return false;
    *out = "usb";
    return true;
  }
  bool Parent(absl::string_view devpath, std::string* out) override {
    const size_t slash = devpath.rfind('/');
    if (slash == absl::string_view::npos || slash <= 9) return false;  // "/devices/x" is the top
    *out = std::string(devpath.substr(0, slash));
    if (absl::EndsWith(*out, "/tty")) return Parent(*out, out);
    return true;
  }
  bool FindDevice(absl::string_view subsystem, absl::string_view, std::string* out) override {
    if (subsystem != "tty") return false;
    *out = std::string(kDevpath);
    return true;
  }
  std::optional<uint32_t> FileMode(absl::string_view path) override {
    if (absl::StartsWith(path, "/sys/devices")) return 040755;
    return std::nullopt;
  }
  bool ListDirectory(absl::string_view, std::vector<std::string>* names) override {
    *names = {"a", "bb"};
    return true;
  }
  absl::Status WriteAttribute(absl::string_view, absl::string_view value) override {
    Require(value.size() < ur::kUdevNameSize, "an attribute value fits udevd's buffer");
    return absl::OkStatus();
  }
  absl::Status ReadFile(absl::string_view path, size_t max_size, std::string* out) override {
    if (path != "/etc/props") return absl::NotFoundError("no such file");
    *out = std::string("A=1\n B = \"two\" \nC\n=D\nE=\n").substr(0, max_size);
    return absl::OkStatus();
  }
  bool ReadSysctl(absl::string_view, std::string* out) override {
    *out = "1\n";
    return true;
  }
  absl::Status WriteSysctl(absl::string_view, absl::string_view) override { return absl::OkStatus(); }
  absl::Status RunProgram(absl::Span<const std::string> argv, absl::Span<const ur::PropertyView>,
                          absl::Duration, size_t max_output, std::string* out) override {
    Require(!argv.empty() && !argv[0].empty() && argv[0][0] == '/', "programs run with an absolute argv[0]");
    if (!absl::EndsWith(argv[0], "ok")) return absl::InternalError("exit 1");
    *out = std::string("X=1\nY= a b \nresult words here\n").substr(0, max_output);
    return absl::OkStatus();
  }
  absl::Status RunBuiltin(absl::string_view name, absl::string_view, absl::Span<const std::string>,
                          absl::string_view, absl::Span<const ur::PropertyView>,
                          ur::OwnedProperties* out) override {
    if (name != "path_id") return absl::NotFoundError("nothing");
    out->emplace_back("ID_PATH", "platform-soc-usb-0:1");
    return absl::OkStatus();
  }
  bool ReadDatabase(absl::string_view, ur::DatabaseEntry* out) override {
    out->Clear();
    out->properties = {{"OLD", "1"}};
    out->tags = {"old"};
    out->links = {"old/link"};
    return true;
  }
  bool DeviceProperties(absl::string_view devpath, ur::OwnedProperties* out) override {
    *out = {{"DEVPATH", std::string(devpath)}, {"ID_PARENT", "1"}};
    return true;
  }
  void DeviceTags(absl::string_view, std::vector<std::string>* out) override { *out = {"parenttag"}; }
  absl::string_view KernelCommandLine() override { return "root=/dev/sda1 quiet foo.bar=1 'a b'=c"; }
  absl::string_view Constant(absl::string_view name) override { return name == "arch" ? "arm64" : "none"; }
  std::optional<uint32_t> UserId(absl::string_view name) override {
    return name == "root" ? std::optional<uint32_t>(0) : std::nullopt;
  }
  std::optional<uint32_t> GroupId(absl::string_view name) override {
    return name == "dialout" ? std::optional<uint32_t>(20) : std::nullopt;
  }
};

// A fixed source for substitutions: what each one stands for, so that sizes can be checked.
class FixedSource final : public ur::FormatSource {
 public:
  bool Substitute(ur::Subst subst, absl::string_view attribute, std::string* out) override {
    if (subst == ur::Subst::kAttr && attribute.empty()) return false;
    out->append(attribute.empty() ? "value" : std::string(attribute));
    return true;
  }
};

void CheckProgram(const ur::CompiledRules& rules) {
  for (const ur::Diagnostic& d : rules.diagnostics().kept()) {
    Require(d.file == "fuzz.rules", "a problem names its file");
  }
  Require(rules.diagnostics().kept().size() <= 1000, "the kept problems are bounded");
  const absl::Span<const ur::Line> lines = rules.lines();
  for (size_t i = 0; i < lines.size(); ++i) {
    const ur::Line& line = lines[i];
    Require(line.first_token <= line.end_token && line.end_token <= rules.token_count(), "tokens in range");
    for (uint32_t t = line.first_token; t + 1 < line.end_token; ++t) {
      Require(rules.token(t).type <= rules.token(t + 1).type, "a line's tokens are sorted by type");
    }
    if (line.goto_line != ur::kNoIndex) {
      Require(line.goto_line > i && line.goto_line < lines.size(), "a GOTO jumps forward");
      Require(lines[line.goto_line].file == line.file, "a GOTO stays in its file");
    }
  }
}

void CheckOutcome(const ur::Outcome& o, bool has_ifindex) {
  std::set<std::string> keys;
  for (const auto& [k, v] : o.properties) {
    Require(keys.insert(k).second, "no property twice");
    Require(v.size() < ur::kUdevLineSize, "values fit udevd's buffers");
  }
  Require(!o.name.has_value() || has_ifindex, "only network interfaces are renamed");
  for (const std::string& link : o.links) {
    Require(!link.empty() && link[0] != '/' && link.back() != '/', "links are relative to /dev");
    for (absl::string_view part : absl::StrSplit(link, '/')) {
      Require(!part.empty() && part != "." && part != "..", "links are normalized and stay in /dev");
    }
  }
  for (const ur::RunEntry& r : o.run) {
    Require(r.command.size() < ur::kUdevPathSize, "RUN fits udevd's buffer");
    if (!r.builtin && !r.argv.empty() && !r.argv[0].empty()) Require(r.argv[0][0] == '/', "RUN argv[0] is absolute");
  }
}

bool SameOutcome(const ur::Outcome& a, const ur::Outcome& b) {
  if (a.properties != b.properties || a.links != b.links || a.name != b.name || a.uid != b.uid ||
      a.gid != b.gid || a.mode != b.mode || a.tags != b.tags || a.current_tags != b.current_tags ||
      a.link_priority != b.link_priority || a.run.size() != b.run.size()) {
    return false;
  }
  for (size_t i = 0; i < a.run.size(); ++i) {
    if (a.run[i].command != b.run[i].command || a.run[i].argv != b.run[i].argv) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<absl::string_view> parts = absl::StrSplit(AsText(data, size), absl::MaxSplits('\0', 2));
  const absl::string_view text = parts[0];
  std::vector<std::pair<std::string, std::string>> env = {{"ACTION", "add"}, {"DEVPATH", std::string(kDevpath)}};
  if (parts.size() > 1) {
    for (absl::string_view line : absl::StrSplit(parts[1], '\n', absl::SkipEmpty())) {
      const size_t eq = line.find('=');
      if (eq == absl::string_view::npos || eq == 0) continue;
      env.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    }
  }
  FuzzHost host;
  if (parts.size() > 2) {
    for (absl::string_view line : absl::StrSplit(parts[2], '\n', absl::SkipEmpty())) {
      const size_t eq = line.find('=');
      if (eq != absl::string_view::npos) host.attributes[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
  }

  ur::CompileOptions options;
  options.max_rules = 2000;
  const std::unique_ptr<ur::CompiledRules> rules =
      ur::CompileRules({ur::RulesSource{"fuzz.rules", std::string(text)}}, options);
  CheckProgram(*rules);

  std::vector<ur::PropertyView> views;
  bool has_ifindex = false;
  absl::string_view action = "add";
  for (const auto& [k, v] : env) {
    views.emplace_back(k, v);
    if (k == "IFINDEX") has_ifindex = hotplug::udev::ParseIfindex(v).has_value();  // as sd-device
    if (k == "ACTION") action = v;
  }
  const ur::EventInput event{.action = action, .devpath = kDevpath, .properties = views};
  ur::Executor executor;
  ur::Outcome first;
  ur::Outcome second;
  const ur::ExecuteOptions execute_options{.debug = true};
  executor.Run(*rules, event, host, execute_options, &first);
  CheckOutcome(first, has_ifindex);
  executor.Run(*rules, event, host, execute_options, &second);
  Require(SameOutcome(first, second), "a warm executor gives the same outcome");

  // Substitution alone, on every value the rules hold.
  FixedSource source;
  std::string out;
  for (uint32_t i = 0; i < rules->token_count(); ++i) {
    const ur::Token& t = rules->token(i);
    if (t.value == ur::kNoIndex) continue;
    const ur::Format& f = rules->format(t.value);
    const ur::ExpandResult r = ur::ExpandFormat(f, source, 64, true, &out);
    Require(out.size() <= 63, "an expansion fits its buffer");
    Require(r.truncated == (out.size() == 63 && r.truncated), "truncation only at the buffer's end");
    (void)ur::CheckFormat(f.source());
  }
  // Short patterns of the input against short subjects: fnmatch's answer (kept short, as
  // glibc's recursion is exponential in the number of '*').
  if (text.size() >= 2) {
    const size_t half = std::min<size_t>(text.size() / 2, 12);
    const std::string pattern(text.substr(0, half));
    const std::string subject(text.substr(half, std::min<size_t>(12, text.size() - half)));
    if (pattern.find('\0') == std::string::npos && subject.find('\0') == std::string::npos) {
      Require(ur::GlobMatch(pattern, subject) == (::fnmatch(pattern.c_str(), subject.c_str(), 0) == 0),
              "GlobMatch agrees with glibc's fnmatch");
    }
  }
  return 0;
}

}  // namespace hotring::fuzz

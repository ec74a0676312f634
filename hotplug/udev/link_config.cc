// The .link files: finding them, reading systemd's INI syntax, and the [Match] conditions
// tested when they are loaded.
#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "hotplug/udev/net_setup_link.h"

namespace hotring::hotplug::udev {
namespace {

// systemd reads at most this much of a configuration file.
constexpr size_t kMaxConfigFile = 4 * 1024 * 1024;

std::optional<HwAddr> ParseMac(absl::string_view text) {
  HwAddr out;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(":-"))) {
    uint32_t v = 0;
    if (part.empty() || part.size() > 2 || !absl::SimpleHexAtoi(part, &v)) return std::nullopt;
    out.push_back(static_cast<uint8_t>(v));
  }
  if (out.size() != 6 && out.size() != 20) return std::nullopt;
  return out;
}

// ifname_valid_full: an interface name (alternative: up to 127 bytes).
bool ValidIfname(absl::string_view name, bool alternative) {
  if (name.empty() || name.size() >= (alternative ? 128u : 16u) || name == "." || name == "..") return false;
  bool numeric = true;
  for (unsigned char c : name) {
    if (c >= 127 || c <= 32 || c == ':' || c == '/') return false;
    numeric = numeric && absl::ascii_isdigit(c);
  }
  return !numeric;
}

std::optional<NamePolicy> PolicyFromName(absl::string_view name, bool alternative) {
  static constexpr std::pair<absl::string_view, NamePolicy> kPolicies[] = {
      {"kernel", NamePolicy::kKernel}, {"keep", NamePolicy::kKeep}, {"database", NamePolicy::kDatabase},
      {"onboard", NamePolicy::kOnboard}, {"slot", NamePolicy::kSlot}, {"path", NamePolicy::kPath},
      {"mac", NamePolicy::kMac}};
  for (const auto& [n, p] : kPolicies) {
    if (n == name && !(alternative && (p == NamePolicy::kKernel || p == NamePolicy::kKeep))) return p;
  }
  return std::nullopt;
}

// Words of a value: whitespace-separated, quotes removed (extract_first_word with UNQUOTE).
std::vector<std::string> Words(absl::string_view value) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      if (c == '\\' && i + 1 < value.size()) word += value[i++];
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

// One [Match] condition (Host=, ...), as systemd's condition lists keep them.
struct Condition {
  std::string type;
  std::string value;
  bool trigger = false;
  bool negate = false;
};

bool KernelCommandLineHas(absl::string_view cmdline, absl::string_view want) {
  for (absl::string_view word : absl::StrSplit(cmdline, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (want.find('=') != absl::string_view::npos) {
      if (word == want) return true;
    } else if (word == want || absl::StartsWith(word, absl::StrCat(want, "="))) {
      return true;
    }
  }
  return false;
}

bool KernelVersionHolds(absl::string_view release, absl::string_view spec) {
  static constexpr absl::string_view kOps[] = {"<=", ">=", "!=", "<", ">", "="};
  for (absl::string_view expr : absl::StrSplit(spec, ' ', absl::SkipEmpty())) {
    absl::string_view op;
    for (absl::string_view o : kOps) {
      if (absl::StartsWith(expr, o)) {
        op = o;
        break;
      }
    }
    if (op.empty()) {
      if (::fnmatch(std::string(expr).c_str(), std::string(release).c_str(), 0) != 0) return false;
      continue;
    }
    const std::string version(absl::StripAsciiWhitespace(expr.substr(op.size())));
    const int c = ::strverscmp(std::string(release).c_str(), version.c_str());
    const bool ok = op == "<=" ? c <= 0 : op == ">=" ? c >= 0 : op == "!=" ? c != 0 : op == "<" ? c < 0
                    : op == ">" ? c > 0 : c == 0;
    if (!ok) return false;
  }
  return true;
}

bool ConditionHolds(const Condition& c, const LinkSystemFacts& facts) {
  if (c.type == "Host") {
    if (absl::AsciiStrToLower(c.value) == absl::AsciiStrToLower(facts.machine_id)) return true;
    return ::fnmatch(c.value.c_str(), facts.hostname.c_str(), FNM_CASEFOLD) == 0;
  }
  if (c.type == "Virtualization") {
    const bool virtualized = !facts.virtualization.empty() && facts.virtualization != "none";
    const std::string v = absl::AsciiStrToLower(c.value);
    if (v == "1" || v == "yes" || v == "y" || v == "true" || v == "t" || v == "on") return virtualized;
    if (v == "0" || v == "no" || v == "n" || v == "false" || v == "f" || v == "off") return !virtualized;
    if (v == "vm") return virtualized && !facts.virtualization_is_container;
    if (v == "container") return facts.virtualization_is_container;
    return v == facts.virtualization;
  }
  if (c.type == "KernelCommandLine") return KernelCommandLineHas(facts.kernel_cmdline, c.value);
  if (c.type == "KernelVersion") return KernelVersionHolds(facts.kernel_release, c.value);
  if (c.type == "Architecture") {
    if (c.value == "native") {
#if defined(__x86_64__)
      return facts.architecture == "x86-64";
#elif defined(__aarch64__)
      return facts.architecture == "arm64";
#elif defined(__arm__)
      return facts.architecture == "arm";
#else
      return false;
#endif
    }
    return c.value == facts.architecture;
  }
  // Credential= and Firmware= are not evaluated: they never hold here.
  return false;
}

// condition_test_list: every plain condition holds, and one of the triggers (if any).
bool ConditionsHold(const std::vector<Condition>& conditions, const LinkSystemFacts& facts) {
  bool have_trigger = false, trigger_held = false;
  for (const Condition& c : conditions) {
    const bool held = ConditionHolds(c, facts) != c.negate;
    if (c.trigger) {
      have_trigger = true;
      trigger_held = trigger_held || held;
    } else if (!held) {
      return false;
    }
  }
  return !have_trigger || trigger_held;
}

// One file being read into a LinkConfig.
class Parser {
 public:
  Parser(LinkConfig& config, std::vector<Condition>& conditions, std::vector<std::string>* diagnostics)
      : config_(config), conditions_(conditions), diagnostics_(diagnostics) {}

  void Parse(absl::string_view path, absl::string_view text) {
    path_ = std::string(path);
    std::string section;
    std::string pending;
    int line_number = 0, start_line = 0;
    for (absl::string_view raw : absl::StrSplit(text, '\n')) {
      ++line_number;
      absl::string_view line = absl::StripAsciiWhitespace(raw);
      if (pending.empty()) start_line = line_number;
      if (pending.empty() && (line.empty() || line[0] == '#' || line[0] == ';')) continue;
      if (absl::EndsWith(line, "\\")) {
        line.remove_suffix(1);
        absl::StrAppend(&pending, line, " ");
        continue;
      }
      std::string full = absl::StrCat(pending, line);
      pending.clear();
      line_ = start_line;
      if (full.size() >= 2 && full.front() == '[' && full.back() == ']') {
        section = full.substr(1, full.size() - 2);
        if (section != "Match" && section != "Link" && section != "SR-IOV") Warn("unknown section '" + section + "'");
        continue;
      }
      const size_t eq = full.find('=');
      if (eq == std::string::npos) {
        Warn("missing '='");
        continue;
      }
      const std::string key(absl::StripAsciiWhitespace(absl::string_view(full).substr(0, eq)));
      const std::string value(absl::StripAsciiWhitespace(absl::string_view(full).substr(eq + 1)));
      Assign(section, key, value);
    }
  }

 private:
  void Warn(const std::string& what) {
    if (diagnostics_ != nullptr) diagnostics_->push_back(absl::StrCat(path_, ":", line_, ": ", what));
  }

  void Macs(std::vector<HwAddr>& list, const std::string& value) {
    if (value.empty()) list.clear();
    for (const std::string& w : Words(value)) {
      if (std::optional<HwAddr> mac = ParseMac(w)) {
        list.push_back(std::move(*mac));
      } else {
        Warn("invalid hardware address '" + w + "', ignoring");
      }
    }
  }

  void Strings(std::vector<std::string>& list, const std::string& value) {
    if (value.empty()) list.clear();
    for (std::string& w : Words(value)) list.push_back(std::move(w));
  }

  void Policies(std::vector<NamePolicy>& list, const std::string& value, bool alternative) {
    if (value.empty()) list.clear();
    for (const std::string& w : Words(value)) {
      const std::optional<NamePolicy> p = PolicyFromName(w, alternative);
      if (!p.has_value()) {
        Warn("invalid name policy '" + w + "', ignoring");
      } else if (std::find(list.begin(), list.end(), *p) == list.end()) {
        list.push_back(*p);
      }
    }
  }

  void Assign(const std::string& section, const std::string& key, const std::string& value) {
    if (section == "Match") {
      if (key == "MACAddress") return Macs(config_.mac, value);
      if (key == "PermanentMACAddress") return Macs(config_.permanent_mac, value);
      if (key == "OriginalName") {
        if (value.empty()) config_.original_name.clear();
        for (std::string& w : Words(value)) {
          if (ValidIfname(absl::StripPrefix(w, "!"), true)) {
            config_.original_name.push_back(std::move(w));
          } else {
            Warn("invalid interface name '" + w + "', ignoring");
          }
        }
        return;
      }
      if (key == "Path") return Strings(config_.path, value);
      if (key == "Driver") return Strings(config_.driver, value);
      if (key == "Type") return Strings(config_.type, value);
      if (key == "Kind") return Strings(config_.kind, value);
      if (key == "Property") {
        if (value.empty()) config_.property.clear();
        for (std::string& w : Words(value)) {
          if (w.find('=') == std::string::npos) {
            Warn("invalid property '" + w + "', ignoring");
          } else {
            config_.property.push_back(std::move(w));
          }
        }
        return;
      }
      if (key == "Host" || key == "Virtualization" || key == "KernelCommandLine" || key == "KernelVersion" ||
          key == "Credential" || key == "Architecture" || key == "Firmware") {
        if (value.empty()) {
          conditions_.erase(std::remove_if(conditions_.begin(), conditions_.end(),
                                           [&](const Condition& c) { return c.type == key; }),
                            conditions_.end());
          return;
        }
        Condition c{.type = key};
        absl::string_view v = value;
        c.trigger = absl::ConsumePrefix(&v, "|");
        v = absl::StripLeadingAsciiWhitespace(v);
        c.negate = absl::ConsumePrefix(&v, "!");
        c.value = std::string(absl::StripLeadingAsciiWhitespace(v));
        conditions_.push_back(std::move(c));
        return;
      }
    } else if (section == "Link") {
      if (key == "NamePolicy") return Policies(config_.name_policy, value, false);
      if (key == "AlternativeNamesPolicy") return Policies(config_.alternative_names_policy, value, true);
      if (key == "Name") {
        if (value.empty() || ValidIfname(value, false)) {
          config_.name = value;
        } else {
          Warn("invalid interface name '" + value + "', ignoring");
        }
        return;
      }
      if (key == "AlternativeName") {
        if (value.empty()) config_.alternative_names.clear();
        for (std::string& w : Words(value)) {
          if (ValidIfname(w, true)) {
            config_.alternative_names.push_back(std::move(w));
          } else {
            Warn("invalid alternative name '" + w + "', ignoring");
          }
        }
        return;
      }
      if (key == "MACAddressPolicy") {
        if (value == "persistent") {
          config_.mac_policy = MacPolicy::kPersistent;
        } else if (value == "random") {
          config_.mac_policy = MacPolicy::kRandom;
        } else if (value == "none" || value.empty()) {
          config_.mac_policy = MacPolicy::kNone;
        } else {
          Warn("invalid MACAddressPolicy '" + value + "', ignoring");
        }
        return;
      }
      if (key == "MACAddress") {
        if (value.empty()) {
          config_.mac_address.clear();
        } else if (std::optional<HwAddr> mac = ParseMac(value)) {
          config_.mac_address = std::move(*mac);
        } else {
          Warn("invalid MACAddress '" + value + "', ignoring");
        }
        return;
      }
      // The ethtool and rtnetlink settings ([Link] Description=, MTUBytes=, WakeOnLan=, ...)
      // are read by udevd but not applied here.
      return;
    } else if (section == "SR-IOV") {
      return;
    }
    Warn("unknown key '" + key + "' in section [" + section + "]");
  }

  LinkConfig& config_;
  std::vector<Condition>& conditions_;
  std::vector<std::string>* diagnostics_;
  std::string path_;
  int line_ = 0;
};

bool MatchIsEmpty(const LinkConfig& c) {
  return c.mac.empty() && c.permanent_mac.empty() && c.path.empty() && c.driver.empty() && c.type.empty() &&
         c.kind.empty() && c.original_name.empty() && c.property.empty();
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  // In pieces: a buffer of the whole cap, zeroed for each file, cost more than the parsing
  // (4 MiB of page faults per .link file, 1 s of udevd's start in an emulated guest).
  std::string out;
  char chunk[4096];
  while (out.size() < kMaxConfigFile) {
    in.read(chunk, sizeof(chunk));
    const size_t n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    out.append(chunk, std::min(n, kMaxConfigFile - out.size()));
  }
  return out;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const struct dirent* e = ::readdir(d)) out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

// conf_files_list: NAME -> the first directory's file, an empty file or a link to /dev/null
// masking it; in name order.
std::vector<std::string> ConfFiles(absl::Span<const absl::string_view> dirs, absl::string_view dir_suffix,
                                   absl::string_view extension) {
  std::map<std::string, std::string> by_name;
  for (absl::string_view d : dirs) {
    const std::string dir = absl::StrCat(d, dir_suffix);
    for (const std::string& name : ListDir(dir)) {
      if (!absl::EndsWith(name, extension) || name.size() == extension.size() || name[0] == '.') continue;
      by_name.emplace(name, absl::StrCat(dir, "/", name));
    }
  }
  std::vector<std::string> out;
  for (auto& [name, path] : by_name) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    if (S_ISCHR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size == 0)) continue;
    if (!S_ISREG(st.st_mode)) continue;
    out.push_back(std::move(path));
  }
  return out;
}

}  // namespace

LinkConfigs LinkConfigs::Parse(const LinkSystemFacts& facts,
                               absl::Span<const std::pair<std::string, std::vector<std::string>>> files,
                               std::vector<std::string>* diagnostics) {
  LinkConfigs out;
  out.facts_ = facts;
  for (const auto& [path, contents] : files) {
    LinkConfig config{.filename = path};
    std::vector<Condition> conditions;
    Parser parser(config, conditions, diagnostics);
    for (const std::string& text : contents) parser.Parse(path, text);
    if (MatchIsEmpty(config) && conditions.empty()) {
      if (diagnostics != nullptr) {
        diagnostics->push_back(absl::StrCat(path, ": no valid settings found in the [Match] section, ignoring file"));
      }
      continue;
    }
    if (!ConditionsHold(conditions, facts)) continue;
    out.configs_.push_back(std::move(config));
  }
  return out;
}

LinkConfigs LinkConfigs::Load(const LinkSystemFacts& facts, absl::Span<const absl::string_view> dirs,
                              std::vector<std::string>* diagnostics) {
  std::vector<std::pair<std::string, std::vector<std::string>>> files;
  for (const std::string& path : ConfFiles(dirs, "", ".link")) {
    std::optional<std::string> text = ReadSmallFile(path);
    if (!text.has_value()) continue;
    std::vector<std::string> contents{std::move(*text)};
    const std::string base = path.substr(path.rfind('/') + 1);
    for (const std::string& dropin : ConfFiles(dirs, absl::StrCat("/", base, ".d"), ".conf")) {
      if (std::optional<std::string> d = ReadSmallFile(dropin)) contents.push_back(std::move(*d));
    }
    files.emplace_back(path, std::move(contents));
  }
  return Parse(facts, files, diagnostics);
}

}  // namespace hotring::hotplug::udev

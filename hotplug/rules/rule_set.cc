#include "hotplug/rules/rule_set.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"

namespace hotring::hotplug::rules {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// A shell-style variable name, as busybox's endofname accepts it.
bool IsEnvName(absl::string_view name) {
  if (name.empty()) return false;
  if (!(absl::ascii_isalpha(name[0]) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

bool ParseDecimal(absl::string_view text, uint32_t* out) {
  if (text.empty() || text.size() > 10) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(text, out);
}

// One logical line: physical lines joined by trailing '\', numbered by its first line.
struct LogicalLine {
  int number;
  std::string text;
};

// Splits text into logical lines the way busybox's config parser reads them.
std::vector<LogicalLine> SplitLines(absl::string_view text) {
  std::vector<LogicalLine> lines;
  int number = 0;
  bool continuing = false;
  for (absl::string_view physical : absl::StrSplit(text, '\n')) {
    ++number;
    if (!continuing) lines.push_back({number, std::string()});
    std::string& current = lines.back().text;
    continuing = absl::EndsWith(physical, "\\");
    if (continuing) physical.remove_suffix(1);
    absl::StrAppend(&current, physical);
  }
  // A final "\n" yields an empty last piece; it is skipped as an empty line anyway.
  return lines;
}

// Splits a line into at most four fields on blanks; the fourth takes the rest of the line
// (trailing blanks trimmed). A '#' where a field would start ends the line. Returns the
// fields; an empty vector for a blank or comment line.
std::vector<absl::string_view> SplitFields(absl::string_view line) {
  std::vector<absl::string_view> fields;
  size_t pos = 0;
  auto skip_blanks = [&] {
    while (pos < line.size() && IsBlank(line[pos])) ++pos;
  };
  skip_blanks();
  while (pos < line.size() && line[pos] != '#' && fields.size() < 4) {
    if (fields.size() == 3) {
      absl::string_view rest = line.substr(pos);
      while (!rest.empty() && IsBlank(rest.back())) rest.remove_suffix(1);
      fields.push_back(rest);
      break;
    }
    const size_t start = pos;
    while (pos < line.size() && !IsBlank(line[pos])) ++pos;
    fields.push_back(line.substr(start, pos - start));
    skip_blanks();
  }
  return fields;
}

// A path after '=' or '>' in the configuration: relative to the dev root, without "..".
absl::Status CheckConfigPath(absl::string_view path) {
  if (path.empty()) return absl::InvalidArgumentError("'=' or '>' needs a path");
  if (path[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("path '", path, "' is absolute; paths are relative to the dev root"));
  }
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat("path '", path, "' leaves the dev root"));
    }
  }
  return absl::OkStatus();
}

// Parses one line's fields into a rule. Errors say what is wrong, without the position.
absl::StatusOr<Rule> ParseRule(const std::vector<absl::string_view>& fields,
                               const UserDb& users) {
  Rule rule;
  if (fields.size() < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(fields.size(), " field", fields.size() == 1 ? "" : "s",
                     " where 3 are needed: <device regex> <user>:<group> <mode>"));
  }
  // Field 1: [-][ENV=regex;]...(@maj,min[-min2] | $ENV=regex | regex)
  absl::string_view match = fields[0];
  if (absl::ConsumePrefix(&match, "-")) rule.keep_matching = true;
  for (;;) {
    const size_t eq = match.find('=');
    if (eq == absl::string_view::npos || !IsEnvName(match.substr(0, eq))) break;
    const size_t semicolon = match.find(';', eq);
    if (semicolon == absl::string_view::npos) break;
    absl::StatusOr<Regex> regex = Regex::Compile(match.substr(eq + 1, semicolon - eq - 1));
    if (!regex.ok()) return regex.status();
    rule.env_matches.push_back({std::string(match.substr(0, eq)), std::move(*regex)});
    match.remove_prefix(semicolon + 1);
  }
  if (absl::StartsWith(match, "@")) {
    rule.kind = MatchKind::kDevNumber;
    absl::string_view numbers = match.substr(1);
    const size_t comma = numbers.find(',');
    bool ok = comma != absl::string_view::npos &&
              ParseDecimal(numbers.substr(0, comma), &rule.major);
    if (ok) {
      absl::string_view minors = numbers.substr(comma + 1);
      const size_t dash = minors.find('-');
      if (dash == absl::string_view::npos) {
        ok = ParseDecimal(minors, &rule.minor_first);
        rule.minor_last = rule.minor_first;
      } else {
        ok = ParseDecimal(minors.substr(0, dash), &rule.minor_first) &&
             ParseDecimal(minors.substr(dash + 1), &rule.minor_last);
      }
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad @major,minor[-minor2] '", match, "'"));
    }
    if (rule.minor_last < rule.minor_first) {
      return absl::InvalidArgumentError(absl::StrCat("empty minor range in '", match, "'"));
    }
  } else {
    absl::string_view pattern = match;
    if (absl::StartsWith(match, "$")) {
      const size_t eq = match.find('=');
      if (eq == absl::string_view::npos || eq == 1) {
        return absl::InvalidArgumentError(absl::StrCat("bad $ENVVAR=regex '", match, "'"));
      }
      rule.kind = MatchKind::kEnv;
      rule.env_name = std::string(match.substr(1, eq - 1));
      pattern = match.substr(eq + 1);
    } else {
      rule.kind = MatchKind::kName;
    }
    absl::StatusOr<Regex> regex = Regex::Compile(pattern);
    if (!regex.ok()) return regex.status();
    rule.regex = std::move(*regex);
  }
  // Field 2: user:group.
  absl::StatusOr<Owner> owner = users.ResolveOwner(fields[1]);
  if (!owner.ok()) return owner.status();
  rule.owner = *owner;
  // Field 3: octal mode.
  absl::string_view mode = fields[2];
  uint32_t mode_value = 0;
  bool mode_ok = !mode.empty() && mode.size() <= 5;
  for (char c : mode) {
    mode_ok = mode_ok && c >= '0' && c <= '7';
    mode_value = mode_value * 8 + static_cast<uint32_t>(c - '0');
  }
  if (!mode_ok || mode_value > 07777) {
    return absl::InvalidArgumentError(absl::StrCat("bad mode '", mode, "' (octal, up to 07777)"));
  }
  rule.mode = static_cast<mode_t>(mode_value);
  // Field 4: [=path|>path|!] [@|$|*command]
  if (fields.size() < 4) return rule;
  absl::string_view rest = fields[3];
  if (!rest.empty() && (rest[0] == '=' || rest[0] == '>' || rest[0] == '!')) {
    size_t end = 0;
    while (end < rest.size() && !IsBlank(rest[end])) ++end;
    absl::string_view action = rest.substr(0, end);
    rest.remove_prefix(end);
    while (!rest.empty() && IsBlank(rest[0])) rest.remove_prefix(1);
    if (action[0] == '!') {
      if (action.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("'!' takes no path: '", action, "'"));
      }
      rule.node_action = NodeAction::kNoNode;
    } else {
      rule.node_action = action[0] == '=' ? NodeAction::kMove : NodeAction::kMoveAndLink;
      rule.path = std::string(action.substr(1));
      rule.path_uses_groups = absl::StrContains(rule.path, '%');
      if (absl::Status checked = CheckConfigPath(rule.path); !checked.ok()) return checked;
    }
  }
  if (rest.empty()) return rule;
  switch (rest[0]) {
    case '@':
      rule.command_when = CommandWhen::kAdd;
      break;
    case '$':
      rule.command_when = CommandWhen::kRemove;
      break;
    case '*':
      rule.command_when = CommandWhen::kAlways;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "'", rest, "': expected =path, >path or ! and then @, $ or * before a command"));
  }
  rule.command = std::string(rest.substr(1));
  if (absl::StripAsciiWhitespace(rule.command).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("empty command after '", rest.substr(0, 1), "'"));
  }
  return rule;
}

absl::StatusOr<std::string> ReadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return ErrnoStatus(absl::StrCat("open(", path, ")"), err);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ErrnoStatus(absl::StrCat("read(", path, ")"));
  return text.str();
}

// The rule's whole match; captures only when its path will use them.
bool FullMatchForRule(const Rule& rule, absl::string_view subject, MatchGroups& groups) {
  if (rule.path_uses_groups) return rule.regex->FullMatch(subject, &groups);
  if (!rule.regex->FullMatch(subject)) return false;
  groups = MatchGroups();
  groups.group[0] = {true, 0, subject.size()};
  return true;
}

}  // namespace

std::string Rule::Origin() const {
  if (line == 0) return "built-in default";
  return absl::StrCat(file, ":", line);
}

const Rule& RuleSet::DefaultRule() {
  static const Rule* const kDefault = [] {
    Rule* rule = new Rule;
    rule->kind = MatchKind::kAll;
    rule->mode = 0660;
    return rule;
  }();
  return *kDefault;
}

void RuleSet::Match(const Device& device,
                    absl::FunctionRef<void(const Rule& rule, absl::string_view subject,
                                           const MatchGroups& groups)>
                        on_match) const {
  MatchGroups groups;
  for (const Rule& rule : rules_) {
    bool env_ok = true;
    for (const EnvMatch& env : rule.env_matches) {
      std::optional<absl::string_view> value = device.Get(env.name);
      if (!value.has_value() || !env.regex.Search(*value)) {
        env_ok = false;
        break;
      }
    }
    if (!env_ok) continue;
    absl::string_view subject = device.name;
    switch (rule.kind) {
      case MatchKind::kDevNumber:
        if (!device.number.has_value() || device.number->major != rule.major ||
            device.number->minor < rule.minor_first || device.number->minor > rule.minor_last) {
          continue;
        }
        // busybox zeroes the captures: every %N expands to nothing.
        for (MatchGroups::Group& g : groups.group) g = {true, 0, 0};
        break;
      case MatchKind::kEnv: {
        std::optional<absl::string_view> value = device.Get(rule.env_name);
        if (!value.has_value()) continue;
        subject = *value;
        if (!FullMatchForRule(rule, subject, groups)) continue;
        break;
      }
      case MatchKind::kName:
        if (!FullMatchForRule(rule, subject, groups)) continue;
        break;
      case MatchKind::kAll:
        groups = MatchGroups();
        break;
    }
    on_match(rule, subject, groups);
    if (!rule.keep_matching) return;
  }
  on_match(DefaultRule(), device.name, MatchGroups());
}

absl::Status ParseRulesInto(absl::string_view text, absl::string_view file_name,
                            const UserDb& users, const ParseOptions& options,
                            std::vector<Rule>& rules, std::vector<std::string>& warnings) {
  for (const LogicalLine& line : SplitLines(text)) {
    const std::vector<absl::string_view> fields = SplitFields(line.text);
    if (fields.empty()) continue;
    absl::StatusOr<Rule> rule = ParseRule(fields, users);
    if (!rule.ok()) {
      std::string message = absl::StrCat(file_name, ":", line.number, ": ", rule.status().message());
      if (!options.skip_bad_lines) return absl::InvalidArgumentError(message);
      warnings.push_back(std::move(message));
      continue;
    }
    rule->file = std::string(file_name);
    rule->line = line.number;
    rules.push_back(std::move(*rule));
  }
  return absl::OkStatus();
}

absl::StatusOr<RuleSet> ParseRules(absl::string_view text, absl::string_view file_name,
                                   const UserDb& users, const ParseOptions& options) {
  std::vector<Rule> rules;
  std::vector<std::string> warnings;
  HOTRING_RETURN_IF_ERROR(ParseRulesInto(text, file_name, users, options, rules, warnings));
  return RuleSet(std::move(rules), std::move(warnings), {std::string(file_name)});
}

absl::StatusOr<RuleSet> LoadRules(const ConfigPaths& paths, const UserDb& users,
                                  const ParseOptions& options) {
  std::vector<Rule> rules;
  std::vector<std::string> warnings;
  std::vector<std::string> sources;
  absl::StatusOr<std::string> main_text = ReadConfigFile(paths.file);
  if (main_text.ok()) {
    HOTRING_RETURN_IF_ERROR(ParseRulesInto(*main_text, paths.file, users, options, rules, warnings));
    sources.push_back(paths.file);
  } else if (!absl::IsNotFound(main_text.status())) {
    return main_text.status();
  }
  const std::string dir = paths.dropin_dir.empty() ? paths.file + ".d" : paths.dropin_dir;
  if (DIR* d = opendir(dir.c_str()); d != nullptr) {
    std::vector<std::string> names;
    while (dirent* entry = readdir(d)) {
      absl::string_view name = entry->d_name;
      if (name.size() > 5 && absl::EndsWith(name, ".conf") && name[0] != '.') {
        names.emplace_back(name);
      }
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const std::string path = absl::StrCat(dir, "/", name);
      absl::StatusOr<std::string> text = ReadConfigFile(path);
      if (!text.ok()) return text.status();
      HOTRING_RETURN_IF_ERROR(ParseRulesInto(*text, path, users, options, rules, warnings));
      sources.push_back(path);
    }
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return ErrnoStatus(absl::StrCat("opendir(", dir, ")"));
  }
  return RuleSet(std::move(rules), std::move(warnings), std::move(sources));
}

std::string SubstituteGroups(absl::string_view path_template, absl::string_view subject,
                             const MatchGroups& groups) {
  std::string out;
  out.reserve(path_template.size() + subject.size());
  for (size_t i = 0; i < path_template.size(); ++i) {
    const char c = path_template[i];
    if (c == '%' && i + 1 < path_template.size() && path_template[i + 1] >= '0' &&
        path_template[i + 1] <= '9') {
      const int n = path_template[i + 1] - '0';
      if (groups.group[n].matched) {
        absl::StrAppend(&out, groups.Text(subject, n));
        ++i;
        continue;
      }
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace hotring::hotplug::rules

#include "hotplug/udevrules/compiled_rules.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {

std::vector<BuiltinInfo> DefaultBuiltins() {
  return {{"blkid", true},   {"btrfs", false},          {"hwdb", false},    {"input_id", false},
          {"keyboard", false}, {"kmod", false},         {"net_id", false},  {"net_setup_link", false},
          {"path_id", true}, {"usb_id", true},          {"uaccess", false}};
}

std::string CompiledRules::Where(const Line& line) const {
  return absl::StrCat(files_[line.file], ":", line.line_number);
}

// Builds a CompiledRules line by line (one instance per load).
class Compiler {
 public:
  explicit Compiler(const CompileOptions& options) : options_(options) {
    rules_ = std::make_unique<CompiledRules>();
    rules_->builtins_ = options.builtins;
    rules_->resolve_names_ = options.resolve_names;
    rules_->diagnostics_ = Diagnostics(options.max_diagnostics);
  }

  // False once the bound on rules is reached: nothing more is compiled.
  bool AddFile(absl::string_view name, absl::string_view text);
  void Report(absl::string_view file, unsigned line, Severity severity, std::string message) {
    rules_->diagnostics_.Add(file, line, severity, std::move(message));
  }
  std::unique_ptr<CompiledRules> Finish() { return std::move(rules_); }

 private:
  // The line being compiled.
  struct Pending {
    unsigned line = 0;
    uint8_t flags = 0;
    std::vector<Token> tokens;
    std::string label;
    std::string goto_label;
  };
  // A line of the current file, for GOTO resolution.
  struct FileLine {
    uint32_t index;  // into lines_
    std::string label;
    std::string goto_label;
  };

  void CompileRule(const RuleText& rule);
  // udevd's parse_token: false drops the line (the problem is reported).
  bool AddKey(const KeyValue& kv, Pending& line);
  void AddToken(Pending& line, TokenType type, Op op, absl::string_view value,
                std::optional<absl::string_view> attr, int64_t number = 0);
  void ResolveGotos(bool file_complete);

  uint32_t Intern(absl::string_view s);
  uint32_t InternFormat(absl::string_view s);

  void Error(const std::string& msg) { Report(file_, line_, Severity::kError, msg); }
  void Warning(const std::string& msg) { Report(file_, line_, Severity::kWarning, msg); }
  bool InvalidOp(absl::string_view key) {
    Error(absl::StrCat("Invalid operator for ", key, "."));
    return false;
  }
  bool InvalidAttr(absl::string_view key) {
    Error(absl::StrCat("Invalid attribute for ", key, "."));
    return false;
  }
  // udevd's check_value_format_and_warn: an error message, but the key stays.
  void CheckValue(absl::string_view key, absl::string_view value, bool nonempty);
  // check_attr_format_and_warn: false for an empty attribute (the line is dropped).
  bool CheckAttr(absl::string_view key, std::optional<absl::string_view> attr);
  int FindBuiltin(absl::string_view command) const;

  const CompileOptions& options_;
  std::unique_ptr<CompiledRules> rules_;
  absl::flat_hash_map<std::string, uint32_t> string_index_;
  absl::flat_hash_map<std::string, uint32_t> format_index_;
  std::string file_;
  uint32_t file_number_ = 0;
  unsigned line_ = 0;
  std::vector<FileLine> file_lines_;
  size_t rule_count_ = 0;
  bool full_ = false;
};

uint32_t Compiler::Intern(absl::string_view s) {
  auto [it, inserted] = string_index_.try_emplace(std::string(s), 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(rules_->strings_.size());
    rules_->strings_.emplace_back(s);
  }
  return it->second;
}

uint32_t Compiler::InternFormat(absl::string_view s) {
  auto [it, inserted] = format_index_.try_emplace(std::string(s), 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(rules_->formats_.size());
    rules_->formats_.push_back(Format::Compile(s));
  }
  return it->second;
}

void Compiler::CheckValue(absl::string_view key, absl::string_view value, bool nonempty) {
  if (nonempty && value.empty()) {
    Error(absl::StrCat("Invalid value \"", value, "\" for ", key, " (char 0: empty value), ignoring."));
    return;
  }
  if (std::optional<FormatProblem> p = CheckFormat(value); p.has_value()) {
    Error(absl::StrCat("Invalid value \"", value, "\" for ", key, " (char ", p->offset, ": ", p->hint,
                       "), ignoring."));
  }
}

bool Compiler::CheckAttr(absl::string_view key, std::optional<absl::string_view> attr) {
  if (!attr.has_value() || attr->empty()) return InvalidAttr(key);
  if (std::optional<FormatProblem> p = CheckFormat(*attr); p.has_value()) {
    Error(absl::StrCat("Invalid attribute \"", *attr, "\" for ", key, " (char ", p->offset, ": ",
                       p->hint, "), ignoring."));
  }
  return true;
}

int Compiler::FindBuiltin(absl::string_view command) const {
  // udev_builtin_lookup: the first word, compared as a prefix of each name in order.
  size_t start = 0;
  while (start < command.size() && absl::ascii_isspace(static_cast<unsigned char>(command[start]))) ++start;
  size_t end = start;
  while (end < command.size() && !absl::ascii_isspace(static_cast<unsigned char>(command[end]))) ++end;
  const absl::string_view word = command.substr(start, end - start);
  for (size_t i = 0; i < rules_->builtins_.size(); ++i) {
    if (absl::StartsWith(rules_->builtins_[i].name, word)) return static_cast<int>(i);
  }
  return -1;
}

void Compiler::AddToken(Pending& line, TokenType type, Op op, absl::string_view value,
                        std::optional<absl::string_view> attr, int64_t number) {
  Token t;
  t.type = type;
  t.op = op;
  t.number = number;
  const bool is_match = type <= TokenType::kMatchResult;
  if (is_match) {
    if (type == TokenType::kMatchSubsystem &&
        (value == "subsystem" || value == "bus" || value == "class")) {
      t.match = MatchKind::kSubsystem;
    } else if (value.empty()) {
      t.match = MatchKind::kEmpty;
    } else if (value == "?*") {
      // KEY=="?*" is KEY!="".
      t.match = MatchKind::kEmpty;
      t.op = op == Op::kMatch ? Op::kNoMatch : Op::kMatch;
    } else if (HasGlobCharacters(value)) {
      t.match = MatchKind::kGlob;
    } else {
      t.match = MatchKind::kPlain;
    }
    const bool split = type < TokenType::kMatchTest || type == TokenType::kMatchResult;
    if (split) {
      // "a|b|" : alternatives a and b, and an empty one.
      // The alternatives of a token sit together in the string table.
      bool bar = true;
      bool empty = false;
      std::string current;
      t.alternatives = static_cast<uint32_t>(rules_->strings_.size());
      for (char c : value) {
        if (c != '|') {
          current.push_back(c);
          bar = false;
        } else {
          if (bar) {
            empty = true;
          } else {
            rules_->strings_.push_back(std::move(current));
            current.clear();
          }
          bar = true;
        }
      }
      if (bar) {
        empty = true;
      } else {
        rules_->strings_.push_back(std::move(current));
      }
      t.alternative_count = static_cast<uint32_t>(rules_->strings_.size()) - t.alternatives;
      if (empty) {
        if (t.match == MatchKind::kGlob) t.match = MatchKind::kGlobWithEmpty;
        if (t.match == MatchKind::kPlain) t.match = MatchKind::kPlainWithEmpty;
      }
    } else {
      t.value = InternFormat(value);
    }
  } else {
    t.value = InternFormat(value);
  }
  switch (type) {
    case TokenType::kMatchAttr:
    case TokenType::kMatchParentsAttr:
      t.trim_subject = !value.empty() && !absl::ascii_isspace(static_cast<unsigned char>(value.back()));
      [[fallthrough]];
    case TokenType::kMatchSysctl:
    case TokenType::kAssignSysctl:
    case TokenType::kAssignAttr:
      if ((*attr)[0] == '[') {
        t.attr_kind = AttrKind::kSubsys;
      } else if (attr->find_first_of("%$") != absl::string_view::npos) {
        t.attr_kind = AttrKind::kFormat;
      } else {
        t.attr_kind = AttrKind::kPlain;
      }
      t.attr = InternFormat(*attr);
      break;
    case TokenType::kMatchEnv:
    case TokenType::kMatchConst:
    case TokenType::kAssignEnv:
    case TokenType::kAssignSeclabel:
      t.attr = Intern(*attr);
      break;
    default:
      break;
  }
  switch (type) {
    case TokenType::kAssignName:
      line.flags |= kLineHasName;
      break;
    case TokenType::kAssignDevlink:
    case TokenType::kAssignOwner:
    case TokenType::kAssignGroup:
    case TokenType::kAssignMode:
    case TokenType::kAssignOwnerId:
    case TokenType::kAssignGroupId:
    case TokenType::kAssignModeId:
      line.flags |= kLineHasDevlink;
      break;
    case TokenType::kAssignStaticNode:
      line.flags |= kLineHasStaticNode;
      break;
    default:
      if (type >= TokenType::kAssignStringEscapeNone || type == TokenType::kMatchProgram ||
          (type >= TokenType::kMatchImportFile && type <= TokenType::kMatchImportParent)) {
        line.flags |= kLineUpdatesSomething;
      }
  }
  line.tokens.push_back(t);
}

bool Compiler::AddKey(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
  // Keys that only match the event device or its parents, without an attribute.
  struct Simple {
    absl::string_view key;
    TokenType type;
  };
  static constexpr Simple kSimple[] = {
      {"ACTION", TokenType::kMatchAction},         {"DEVPATH", TokenType::kMatchDevpath},
      {"KERNEL", TokenType::kMatchKernel},         {"DRIVER", TokenType::kMatchDriver},
      {"KERNELS", TokenType::kMatchParentsKernel}, {"SUBSYSTEMS", TokenType::kMatchParentsSubsystem},
      {"DRIVERS", TokenType::kMatchParentsDriver}, {"TAGS", TokenType::kMatchParentsTag},
      {"RESULT", TokenType::kMatchResult},         {"SUBSYSTEM", TokenType::kMatchSubsystem},
  };
  for (const Simple& s : kSimple) {
    if (key != s.key) continue;
    if (attr.has_value()) return InvalidAttr(key);
    if (!is_match) return InvalidOp(key);
    if (s.type == TokenType::kMatchSubsystem && (value == "bus" || value == "class")) {
      Warning(absl::StrCat("\"", value, "\" must be specified as \"subsystem\"."));
    }
    AddToken(line, s.type, op, value, std::nullopt);
    return true;
  }
  if (key == "SYMLINK") {
    if (attr.has_value()) return InvalidAttr(key);
    if (op == Op::kRemove) return InvalidOp(key);
    if (!is_match) {
      CheckValue(key, value, false);
      AddToken(line, TokenType::kAssignDevlink, op, value, std::nullopt);
    } else {
      AddToken(line, TokenType::kMatchDevlink, op, value, std::nullopt);
    }
    return true;
  }
  if (key == "NAME") {
    if (attr.has_value()) return InvalidAttr(key);
    if (op == Op::kRemove) return InvalidOp(key);
    if (op == Op::kAdd) {
      Warning("NAME key takes '==', '!=', '=', or ':=' operator, assuming '='.");
      op = Op::kAssign;
    }
    if (op != Op::kMatch && op != Op::kNoMatch) {
      if (value == "%k") {
        Error("Ignoring NAME=\"%k\", as it will take no effect.");
        return false;
      }
      if (value.empty()) {
        Error("Ignoring NAME=\"\", as udev will not delete any network interfaces.");
        return false;
      }
      CheckValue(key, value, false);
      AddToken(line, TokenType::kAssignName, op, value, std::nullopt);
    } else {
      AddToken(line, TokenType::kMatchName, op, value, std::nullopt);
    }
    return true;
  }
  if (key == "ENV") {
    if (!attr.has_value() || attr->empty()) return InvalidAttr(key);
    if (op == Op::kRemove) return InvalidOp(key);
    if (op == Op::kAssignFinal) {
      Warning("ENV key takes '==', '!=', '=', or '+=' operator, assuming '='.");
      op = Op::kAssign;
    }
    if (!is_match) {
      static constexpr absl::string_view kReserved[] = {"ACTION", "DEVLINKS", "DEVNAME", "DEVPATH",
                                                        "DEVTYPE", "DRIVER", "IFINDEX", "MAJOR",
                                                        "MINOR", "SEQNUM", "SUBSYSTEM", "TAGS"};
      for (absl::string_view r : kReserved) {
        if (*attr == r) {
          Error(absl::StrCat("Invalid ENV attribute. '", *attr, "' cannot be set."));
          return false;
        }
      }
      CheckValue(key, value, false);
      AddToken(line, TokenType::kAssignEnv, op, value, attr);
    } else {
      AddToken(line, TokenType::kMatchEnv, op, value, attr);
    }
    return true;
  }
  if (key == "CONST") {
    if (!attr.has_value() || (*attr != "arch" && *attr != "virt")) return InvalidAttr(key);
    if (!is_match) return InvalidOp(key);
    AddToken(line, TokenType::kMatchConst, op, value, attr);
    return true;
  }
  if (key == "TAG") {
    if (attr.has_value()) return InvalidAttr(key);
    if (op == Op::kAssignFinal) {
      Warning("TAG key takes '==', '!=', '=', or '+=' operator, assuming '='.");
      op = Op::kAssign;
    }
    if (!is_match) {
      CheckValue(key, value, true);
      AddToken(line, TokenType::kAssignTag, op, value, std::nullopt);
    } else {
      AddToken(line, TokenType::kMatchTag, op, value, std::nullopt);
    }
    return true;
  }
  if (key == "ATTR" || key == "SYSCTL") {
    if (!CheckAttr(key, attr)) return false;
    if (op == Op::kRemove) return InvalidOp(key);
    if (op == Op::kAdd || op == Op::kAssignFinal) {
      Warning(absl::StrCat(key, " key takes '==', '!=', or '=' operator, assuming '='."));
      op = Op::kAssign;
    }
    const bool is_attr = key == "ATTR";
    if (op != Op::kMatch && op != Op::kNoMatch) {
      CheckValue(key, value, false);
      AddToken(line, is_attr ? TokenType::kAssignAttr : TokenType::kAssignSysctl, op, value, attr);
    } else {
      AddToken(line, is_attr ? TokenType::kMatchAttr : TokenType::kMatchSysctl, op, value, attr);
    }
    return true;
  }
  if (key == "ATTRS") {
    if (!CheckAttr(key, attr)) return false;
    if (!is_match) return InvalidOp(key);
    if (absl::StartsWith(*attr, "device/")) {
      Warning("'device' link may not be available in future kernels.");
    }
    if (absl::StrContains(*attr, "../")) {
      Warning("Direct reference to parent sysfs directory, may break in future kernels.");
    }
    AddToken(line, TokenType::kMatchParentsAttr, op, value, attr);
    return true;
  }
  if (key == "TEST") {
    int64_t mode = -1;
    if (attr.has_value() && !attr->empty()) {
      uint32_t m = 0;
      if (!ParseOctalMode(*attr, &m)) {
        Error(absl::StrCat("Failed to parse mode '", *attr, "': Invalid argument"));
        return false;
      }
      mode = m;
    }
    CheckValue(key, value, true);
    if (!is_match) return InvalidOp(key);
    AddToken(line, TokenType::kMatchTest, op, value, std::nullopt, mode);
    return true;
  }
  if (key == "PROGRAM") {
    if (attr.has_value()) return InvalidAttr(key);
    CheckValue(key, value, true);
    if (op == Op::kRemove) return InvalidOp(key);
    if (!is_match) op = Op::kMatch;
    AddToken(line, TokenType::kMatchProgram, op, value, std::nullopt);
    return true;
  }
  if (key == "IMPORT") {
    if (!attr.has_value() || attr->empty()) return InvalidAttr(key);
    CheckValue(key, value, true);
    if (op == Op::kRemove) return InvalidOp(key);
    if (!is_match) op = Op::kMatch;
    if (*attr == "file") {
      AddToken(line, TokenType::kMatchImportFile, op, value, std::nullopt);
    } else if (*attr == "program") {
      const int builtin = FindBuiltin(value);
      if (builtin >= 0) {
        AddToken(line, TokenType::kMatchImportBuiltin, op, value, std::nullopt, builtin);
      } else {
        AddToken(line, TokenType::kMatchImportProgram, op, value, std::nullopt);
      }
    } else if (*attr == "builtin") {
      const int builtin = FindBuiltin(value);
      if (builtin < 0) {
        Error(absl::StrCat("Unknown builtin command: ", value));
        return false;
      }
      AddToken(line, TokenType::kMatchImportBuiltin, op, value, std::nullopt, builtin);
    } else if (*attr == "db") {
      AddToken(line, TokenType::kMatchImportDb, op, value, std::nullopt);
    } else if (*attr == "cmdline") {
      AddToken(line, TokenType::kMatchImportCmdline, op, value, std::nullopt);
    } else if (*attr == "parent") {
      AddToken(line, TokenType::kMatchImportParent, op, value, std::nullopt);
    } else {
      return InvalidAttr(key);
    }
    return true;
  }
  if (key == "OPTIONS") {
    if (attr.has_value()) return InvalidAttr(key);
    if (is_match || op == Op::kRemove) return InvalidOp(key);
    if (op == Op::kAdd) op = Op::kAssign;
    if (value == "string_escape=none") {
      AddToken(line, TokenType::kAssignStringEscapeNone, op, "", std::nullopt);
    } else if (value == "string_escape=replace") {
      AddToken(line, TokenType::kAssignStringEscapeReplace, op, "", std::nullopt);
    } else if (value == "db_persist") {
      AddToken(line, TokenType::kAssignDbPersist, op, "", std::nullopt);
    } else if (value == "watch") {
      AddToken(line, TokenType::kAssignWatch, op, "", std::nullopt, 1);
    } else if (value == "nowatch") {
      AddToken(line, TokenType::kAssignWatch, op, "", std::nullopt, 0);
    } else if (absl::StartsWith(value, "static_node=")) {
      AddToken(line, TokenType::kAssignStaticNode, op, value.substr(12), std::nullopt);
    } else if (absl::StartsWith(value, "link_priority=")) {
      int priority = 0;
      const absl::string_view text = value.substr(14);
      if (!absl::SimpleAtoi(text, &priority)) {
        Error(absl::StrCat("Failed to parse link priority '", text, "': Invalid argument"));
        return false;
      }
      AddToken(line, TokenType::kAssignLinkPriority, op, "", std::nullopt, priority);
    } else if (absl::StartsWith(value, "log_level=")) {
      const absl::string_view text = value.substr(10);
      int level = -1;
      static constexpr absl::string_view kLevels[] = {"emerg", "alert",  "crit", "err",
                                                      "warning", "notice", "info", "debug"};
      if (text != "reset") {
        for (int i = 0; i < 8; ++i) {
          if (text == kLevels[i]) level = i;
        }
        if (level < 0 && !(absl::SimpleAtoi(text, &level) && level >= 0 && level <= 7)) {
          Error(absl::StrCat("Failed to parse log level '", text, "': Invalid argument"));
          return false;
        }
      }
      AddToken(line, TokenType::kAssignLogLevel, op, "", std::nullopt, level);
    } else {
      Warning(absl::StrCat("Invalid value for OPTIONS key, ignoring: '", value, "'"));
    }
    return true;
  }
  if (key == "OWNER" || key == "GROUP") {
    const bool owner = key == "OWNER";
    if (attr.has_value()) return InvalidAttr(key);
    if (is_match || op == Op::kRemove) return InvalidOp(key);
    if (op == Op::kAdd) {
      Warning(absl::StrCat(key, " key takes '=' or ':=' operator, assuming '='."));
      op = Op::kAssign;
    }
    const TokenType id_type = owner ? TokenType::kAssignOwnerId : TokenType::kAssignGroupId;
    uint32_t id = 0;
    if (ParseId(value, &id)) {
      AddToken(line, id_type, op, "", std::nullopt, id);
    } else if (options_.resolve_names == ResolveNames::kEarly &&
               value.find_first_of("%$") == absl::string_view::npos && !value.empty() &&
               value[0] != '[') {
      std::optional<uint32_t> resolved;
      if (owner) {
        resolved = options_.names != nullptr ? options_.names->UserId(value)
                   : value == "root"         ? std::optional<uint32_t>(0)
                                             : std::nullopt;
      } else {
        resolved = options_.names != nullptr ? options_.names->GroupId(value)
                   : value == "root"         ? std::optional<uint32_t>(0)
                                             : std::nullopt;
      }
      if (!resolved.has_value()) {
        Error(absl::StrCat("Unknown ", owner ? "user" : "group", " '", value, "', ignoring"));
      }
      // An unknown name still takes its place: it resets what earlier rules set.
      AddToken(line, id_type, op, "", std::nullopt, resolved.has_value() ? int64_t{*resolved} : -1);
    } else if (options_.resolve_names != ResolveNames::kNever) {
      CheckValue(key, value, true);
      AddToken(line, owner ? TokenType::kAssignOwner : TokenType::kAssignGroup, op, value,
               std::nullopt);
    }
    // resolve_names=never: udevd drops the key quietly (debug log only).
    return true;
  }
  if (key == "MODE") {
    if (attr.has_value()) return InvalidAttr(key);
    if (is_match || op == Op::kRemove) return InvalidOp(key);
    if (op == Op::kAdd) {
      Warning("MODE key takes '=' or ':=' operator, assuming '='.");
      op = Op::kAssign;
    }
    uint32_t mode = 0;
    if (ParseOctalMode(value, &mode)) {
      AddToken(line, TokenType::kAssignModeId, op, "", std::nullopt, mode);
    } else {
      CheckValue(key, value, true);
      AddToken(line, TokenType::kAssignMode, op, value, std::nullopt);
    }
    return true;
  }
  if (key == "SECLABEL") {
    if (!attr.has_value() || attr->empty()) return InvalidAttr(key);
    CheckValue(key, value, true);
    if (is_match || op == Op::kRemove) return InvalidOp(key);
    if (op == Op::kAssignFinal) {
      Warning("SECLABEL key takes '=' or '+=' operator, assuming '='.");
      op = Op::kAssign;
    }
    AddToken(line, TokenType::kAssignSeclabel, op, value, attr);
    return true;
  }
  if (key == "RUN") {
    if (is_match || op == Op::kRemove) return InvalidOp(key);
    CheckValue(key, value, true);
    if (!attr.has_value() || *attr == "program") {
      AddToken(line, TokenType::kAssignRunProgram, op, value, std::nullopt);
    } else if (*attr == "builtin") {
      const int builtin = FindBuiltin(value);
      if (builtin < 0) {
        Error(absl::StrCat("Unknown builtin command '", value, "', ignoring"));
        return false;
      }
      AddToken(line, TokenType::kAssignRunBuiltin, op, value, std::nullopt, builtin);
    } else {
      return InvalidAttr(key);
    }
    return true;
  }
  if (key == "GOTO") {
    if (attr.has_value()) return InvalidAttr(key);
    if (op != Op::kAssign) return InvalidOp(key);
    if ((line.flags & kLineHasGoto) != 0) {
      Warning(absl::StrCat("Contains multiple GOTO keys, ignoring GOTO=\"", value, "\"."));
      return true;
    }
    line.goto_label = std::string(value);
    line.flags |= kLineHasGoto;
    return true;
  }
  if (key == "LABEL") {
    if (attr.has_value()) return InvalidAttr(key);
    if (op != Op::kAssign) return InvalidOp(key);
    line.label = std::string(value);
    line.flags |= kLineHasLabel;
    return true;
  }
  Error(absl::StrCat("Invalid key '", key, "'"));
  return false;
}

void Compiler::CompileRule(const RuleText& rule) {
  if (full_) return;
  line_ = rule.line;
  Pending line;
  line.line = rule.line;
  for (const KeyValue& kv : rule.pairs) {
    if (!AddKey(kv, line)) return;
  }
  if (line.flags == 0) {
    Warning("The line takes no effect, ignoring.");
    return;
  }
  if (++rule_count_ > options_.max_rules) {
    Error(absl::StrCat("More than ", options_.max_rules,
                       " rules: this one and every later rule are ignored"));
    full_ = true;
    return;
  }
  std::stable_sort(line.tokens.begin(), line.tokens.end(),
                   [](const Token& a, const Token& b) { return a.type < b.type; });
  Line compiled;
  compiled.first_token = static_cast<uint32_t>(rules_->tokens_.size());
  rules_->tokens_.insert(rules_->tokens_.end(), line.tokens.begin(), line.tokens.end());
  compiled.end_token = static_cast<uint32_t>(rules_->tokens_.size());
  compiled.file = file_number_;
  compiled.line_number = rule.line;
  compiled.flags = line.flags;
  file_lines_.push_back(FileLine{static_cast<uint32_t>(rules_->lines_.size()), std::move(line.label),
                                 std::move(line.goto_label)});
  rules_->lines_.push_back(compiled);
  // Static nodes: the permissions and tags of the line, as udevd applies them at start-up.
  if ((compiled.flags & kLineHasStaticNode) != 0) {
    StaticNode node;
    for (uint32_t i = compiled.first_token; i < compiled.end_token; ++i) {
      const Token& t = rules_->tokens_[i];
      switch (t.type) {
        case TokenType::kAssignOwnerId:
          node.uid = t.number >= 0 ? std::optional<uint32_t>(static_cast<uint32_t>(t.number)) : std::nullopt;
          break;
        case TokenType::kAssignGroupId:
          node.gid = t.number >= 0 ? std::optional<uint32_t>(static_cast<uint32_t>(t.number)) : std::nullopt;
          break;
        case TokenType::kAssignModeId:
          node.mode = static_cast<uint32_t>(t.number);
          break;
        case TokenType::kAssignTag:
          node.tags.push_back(rules_->formats_[t.value].source());
          break;
        case TokenType::kAssignStaticNode:
          if (node.uid.has_value() || node.gid.has_value() || node.mode.has_value() || !node.tags.empty()) {
            StaticNode copy = node;
            copy.node = rules_->formats_[t.value].source();
            copy.where = rules_->Where(compiled);
            rules_->static_nodes_.push_back(std::move(copy));
          }
          break;
        default:
          break;
      }
    }
  }
}

void Compiler::ResolveGotos(bool file_complete) {
  std::vector<uint32_t> drop;
  for (size_t i = 0; i < file_lines_.size(); ++i) {
    Line& line = rules_->lines_[file_lines_[i].index];
    if ((line.flags & kLineHasGoto) == 0) continue;
    if (!file_complete) {
      line.goto_unresolved = true;
      continue;
    }
    for (size_t j = i + 1; j < file_lines_.size(); ++j) {
      if ((rules_->lines_[file_lines_[j].index].flags & kLineHasLabel) != 0 &&
          file_lines_[j].label == file_lines_[i].goto_label) {
        line.goto_line = file_lines_[j].index;
        break;
      }
    }
    if (line.goto_line != kNoIndex) continue;
    Report(file_, line.line_number, Severity::kError,
           absl::StrCat("GOTO=\"", file_lines_[i].goto_label, "\" has no matching label, ignoring"));
    line.flags &= static_cast<uint8_t>(~kLineHasGoto);
    if ((line.flags & ~kLineHasLabel) == 0) {
      Report(file_, line.line_number, Severity::kNotice, "The line takes no effect any more, dropping");
      if (line.flags == kLineHasLabel) {
        line.end_token = line.first_token;  // a label without tokens: still a GOTO target
      } else {
        drop.push_back(file_lines_[i].index);
      }
    }
  }
  // A dropped line never matches anything: it keeps its place (GOTO targets are indices) but
  // has no flags, so the executor skips it.
  for (uint32_t index : drop) {
    rules_->lines_[index].flags = 0;
    rules_->lines_[index].end_token = rules_->lines_[index].first_token;
  }
}

bool Compiler::AddFile(absl::string_view name, absl::string_view text) {
  if (full_) return false;
  file_ = std::string(name);
  file_number_ = static_cast<uint32_t>(rules_->files_.size());
  rules_->files_.push_back(file_);
  file_lines_.clear();
  const FileEnd end = ForEachRule(name, text, rules_->diagnostics_,
                                  [&](const RuleText& rule) { CompileRule(rule); });
  ResolveGotos(end == FileEnd::kComplete);
  return !full_;
}

bool ParseOctalMode(absl::string_view text, uint32_t* mode) {
  if (text.empty() || text.size() > 11) return false;
  uint32_t m = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return false;
    m = m * 8 + static_cast<uint32_t>(c - '0');
    if (m > 07777) return false;
  }
  *mode = m;
  return true;
}

std::unique_ptr<CompiledRules> CompileRules(absl::Span<const RulesSource> sources,
                                            const CompileOptions& options) {
  Compiler compiler(options);
  for (const RulesSource& source : sources) {
    if (!compiler.AddFile(source.name, source.text)) break;
  }
  return compiler.Finish();
}

namespace {

// Reads a rules file with a bound on its size; a masked file reads as empty.
absl::StatusOr<std::string> ReadRulesFile(const std::string& path, size_t max_size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat(", path, ")"));
  if (S_ISCHR(st.st_mode)) return std::string();  // /dev/null: masked
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  if (static_cast<size_t>(st.st_size) > max_size) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": larger than ", max_size, " bytes, not read"));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read(", path, ")"));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

void CompileFiles(Compiler& compiler, const std::vector<RulesFile>& files, size_t max_size) {
  for (const RulesFile& file : files) {
    if (file.masked) continue;
    absl::StatusOr<std::string> text = ReadRulesFile(file.path, max_size);
    if (!text.ok()) {
      compiler.Report(file.path, 0, Severity::kError,
                      absl::StrCat("Failed to read rules file, ignoring: ", text.status().message()));
      continue;
    }
    if (!compiler.AddFile(file.path, *text)) break;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledRules>> LoadRules(absl::Span<const std::string> dirs,
                                                         const CompileOptions& options) {
  HOTRING_ASSIGN_OR_RETURN(std::vector<RulesFile> files, ListRulesFiles(dirs));
  Compiler compiler(options);
  CompileFiles(compiler, files, options.max_file_size);
  return compiler.Finish();
}

absl::StatusOr<std::unique_ptr<CompiledRules>> LoadRulesPaths(absl::Span<const std::string> paths,
                                                              const CompileOptions& options) {
  Compiler compiler(options);
  for (const std::string& path : paths) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      HOTRING_ASSIGN_OR_RETURN(std::vector<RulesFile> files, ListRulesFiles({path}));
      CompileFiles(compiler, files, options.max_file_size);
    } else {
      const std::string name = path.substr(path.rfind('/') + 1);
      CompileFiles(compiler, {RulesFile{name, path, false}}, options.max_file_size);
    }
  }
  return compiler.Finish();
}

VerifyReport VerifyRules(absl::Span<const std::string> paths, const CompileOptions& options) {
  VerifyReport report;
  absl::StatusOr<std::unique_ptr<CompiledRules>> rules = LoadRulesPaths(paths, options);
  if (!rules.ok()) {
    report.text = absl::StrCat(rules.status().message(), "\n");
    return report;
  }
  const Diagnostics& d = (*rules)->diagnostics();
  for (const Diagnostic& diagnostic : d.kept()) {
    const absl::string_view level = diagnostic.severity == Severity::kError     ? "error"
                                    : diagnostic.severity == Severity::kWarning ? "warning"
                                                                                : "notice";
    absl::StrAppend(&report.text, diagnostic.Format(), " (", level, ")\n");
  }
  if (d.dropped() > 0) absl::StrAppend(&report.text, "... and ", d.dropped(), " more\n");
  absl::StrAppend(&report.text, (*rules)->file_count(), " rules files, ", (*rules)->lines().size(),
                  " rules, ", d.errors(), " errors, ", d.warnings(), " warnings\n");
  report.ok = d.errors() == 0 && d.warnings() == 0;
  return report;
}

}  // namespace hotring::hotplug::udevrules

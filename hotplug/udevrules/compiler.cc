#include "hotplug/udevrules/compiler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {

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
  const Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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
  using Handler = bool (Compiler::*)(const KeyValue&, Op, Pending&);
  struct Key {
    absl::string_view key;
    Handler handler;
  };
  static constexpr Key kKeys[] = {
      {"SYMLINK", &Compiler::KeySymlink},
      {"NAME", &Compiler::KeyName},
      {"ENV", &Compiler::KeyEnv},
      {"CONST", &Compiler::KeyConst},
      {"TAG", &Compiler::KeyTag},
      {"ATTR", &Compiler::KeyAttrOrSysctl},
      {"SYSCTL", &Compiler::KeyAttrOrSysctl},
      {"ATTRS", &Compiler::KeyAttrs},
      {"TEST", &Compiler::KeyTest},
      {"PROGRAM", &Compiler::KeyProgram},
      {"IMPORT", &Compiler::KeyImport},
      {"OPTIONS", &Compiler::KeyOptions},
      {"OWNER", &Compiler::KeyOwnerOrGroup},
      {"GROUP", &Compiler::KeyOwnerOrGroup},
      {"MODE", &Compiler::KeyMode},
      {"SECLABEL", &Compiler::KeySeclabel},
      {"RUN", &Compiler::KeyRun},
      {"GOTO", &Compiler::KeyGoto},
      {"LABEL", &Compiler::KeyLabel},
  };
  for (const Key& k : kKeys) {
    if (key == k.key) return (this->*k.handler)(kv, op, line);
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

}  // namespace hotring::hotplug::udevrules

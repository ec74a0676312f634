// What each key of a rule compiles to, with udevd's checks and messages (its parse_token).
#include "hotplug/udevrules/compiler.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {

bool Compiler::KeySymlink(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (op == Op::kRemove) return InvalidOp(kv.key);
  if (!IsMatch(op)) {
    CheckValue(kv.key, kv.value, false);
    AddToken(line, TokenType::kAssignDevlink, op, kv.value, std::nullopt);
  } else {
    AddToken(line, TokenType::kMatchDevlink, op, kv.value, std::nullopt);
  }
  return true;
}

bool Compiler::KeyName(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (op == Op::kRemove) return InvalidOp(kv.key);
  if (op == Op::kAdd) {
    Warning("NAME key takes '==', '!=', '=', or ':=' operator, assuming '='.");
    op = Op::kAssign;
  }
  if (op != Op::kMatch && op != Op::kNoMatch) {
    if (kv.value == "%k") {
      Error("Ignoring NAME=\"%k\", as it will take no effect.");
      return false;
    }
    if (kv.value.empty()) {
      Error("Ignoring NAME=\"\", as udev will not delete any network interfaces.");
      return false;
    }
    CheckValue(kv.key, kv.value, false);
    AddToken(line, TokenType::kAssignName, op, kv.value, std::nullopt);
  } else {
    AddToken(line, TokenType::kMatchName, op, kv.value, std::nullopt);
  }
  return true;
}

bool Compiler::KeyEnv(const KeyValue& kv, Op op, Pending& line) {
  if (!kv.attr.has_value() || kv.attr->empty()) return InvalidAttr(kv.key);
  if (op == Op::kRemove) return InvalidOp(kv.key);
  if (op == Op::kAssignFinal) {
    Warning("ENV key takes '==', '!=', '=', or '+=' operator, assuming '='.");
    op = Op::kAssign;
  }
  if (!IsMatch(op)) {
    static constexpr absl::string_view kReserved[] = {"ACTION", "DEVLINKS", "DEVNAME", "DEVPATH",
                                                      "DEVTYPE", "DRIVER", "IFINDEX", "MAJOR",
                                                      "MINOR", "SEQNUM", "SUBSYSTEM", "TAGS"};
    for (absl::string_view r : kReserved) {
      if (*kv.attr == r) {
        Error(absl::StrCat("Invalid ENV attribute. '", *kv.attr, "' cannot be set."));
        return false;
      }
    }
    CheckValue(kv.key, kv.value, false);
    AddToken(line, TokenType::kAssignEnv, op, kv.value, kv.attr);
  } else {
    AddToken(line, TokenType::kMatchEnv, op, kv.value, kv.attr);
  }
  return true;
}

bool Compiler::KeyConst(const KeyValue& kv, Op op, Pending& line) {
  if (!kv.attr.has_value() || (*kv.attr != "arch" && *kv.attr != "virt")) return InvalidAttr(kv.key);
  if (!IsMatch(op)) return InvalidOp(kv.key);
  AddToken(line, TokenType::kMatchConst, op, kv.value, kv.attr);
  return true;
}

bool Compiler::KeyTag(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (op == Op::kAssignFinal) {
    Warning("TAG key takes '==', '!=', '=', or '+=' operator, assuming '='.");
    op = Op::kAssign;
  }
  if (!IsMatch(op)) {
    CheckValue(kv.key, kv.value, true);
    AddToken(line, TokenType::kAssignTag, op, kv.value, std::nullopt);
  } else {
    AddToken(line, TokenType::kMatchTag, op, kv.value, std::nullopt);
  }
  return true;
}

bool Compiler::KeyAttrOrSysctl(const KeyValue& kv, Op op, Pending& line) {
  if (!CheckAttr(kv.key, kv.attr)) return false;
  if (op == Op::kRemove) return InvalidOp(kv.key);
  if (op == Op::kAdd || op == Op::kAssignFinal) {
    Warning(absl::StrCat(kv.key, " key takes '==', '!=', or '=' operator, assuming '='."));
    op = Op::kAssign;
  }
  const bool is_attr = kv.key == "ATTR";
  if (op != Op::kMatch && op != Op::kNoMatch) {
    CheckValue(kv.key, kv.value, false);
    AddToken(line, is_attr ? TokenType::kAssignAttr : TokenType::kAssignSysctl, op, kv.value, kv.attr);
  } else {
    AddToken(line, is_attr ? TokenType::kMatchAttr : TokenType::kMatchSysctl, op, kv.value, kv.attr);
  }
  return true;
}

bool Compiler::KeyAttrs(const KeyValue& kv, Op op, Pending& line) {
  if (!CheckAttr(kv.key, kv.attr)) return false;
  if (!IsMatch(op)) return InvalidOp(kv.key);
  if (absl::StartsWith(*kv.attr, "device/")) {
    Warning("'device' link may not be available in future kernels.");
  }
  if (absl::StrContains(*kv.attr, "../")) {
    Warning("Direct reference to parent sysfs directory, may break in future kernels.");
  }
  AddToken(line, TokenType::kMatchParentsAttr, op, kv.value, kv.attr);
  return true;
}

bool Compiler::KeyTest(const KeyValue& kv, Op op, Pending& line) {
  int64_t mode = -1;
  if (kv.attr.has_value() && !kv.attr->empty()) {
    uint32_t m = 0;
    if (!ParseOctalMode(*kv.attr, &m)) {
      Error(absl::StrCat("Failed to parse mode '", *kv.attr, "': Invalid argument"));
      return false;
    }
    mode = m;
  }
  CheckValue(kv.key, kv.value, true);
  if (!IsMatch(op)) return InvalidOp(kv.key);
  AddToken(line, TokenType::kMatchTest, op, kv.value, std::nullopt, mode);
  return true;
}

bool Compiler::KeyProgram(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  CheckValue(kv.key, kv.value, true);
  if (op == Op::kRemove) return InvalidOp(kv.key);
  if (!IsMatch(op)) op = Op::kMatch;
  AddToken(line, TokenType::kMatchProgram, op, kv.value, std::nullopt);
  return true;
}

bool Compiler::KeyImport(const KeyValue& kv, Op op, Pending& line) {
  if (!kv.attr.has_value() || kv.attr->empty()) return InvalidAttr(kv.key);
  CheckValue(kv.key, kv.value, true);
  if (op == Op::kRemove) return InvalidOp(kv.key);
  if (!IsMatch(op)) op = Op::kMatch;
  if (*kv.attr == "file") {
    AddToken(line, TokenType::kMatchImportFile, op, kv.value, std::nullopt);
  } else if (*kv.attr == "program") {
    const int builtin = FindBuiltin(kv.value);
    if (builtin >= 0) {
      AddToken(line, TokenType::kMatchImportBuiltin, op, kv.value, std::nullopt, builtin);
    } else {
      AddToken(line, TokenType::kMatchImportProgram, op, kv.value, std::nullopt);
    }
  } else if (*kv.attr == "builtin") {
    const int builtin = FindBuiltin(kv.value);
    if (builtin < 0) {
      Error(absl::StrCat("Unknown builtin command: ", kv.value));
      return false;
    }
    AddToken(line, TokenType::kMatchImportBuiltin, op, kv.value, std::nullopt, builtin);
  } else if (*kv.attr == "db") {
    AddToken(line, TokenType::kMatchImportDb, op, kv.value, std::nullopt);
  } else if (*kv.attr == "cmdline") {
    AddToken(line, TokenType::kMatchImportCmdline, op, kv.value, std::nullopt);
  } else if (*kv.attr == "parent") {
    AddToken(line, TokenType::kMatchImportParent, op, kv.value, std::nullopt);
  } else {
    return InvalidAttr(kv.key);
  }
  return true;
}

bool Compiler::KeyOptions(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (IsMatch(op) || op == Op::kRemove) return InvalidOp(kv.key);
  if (op == Op::kAdd) op = Op::kAssign;
  if (kv.value == "string_escape=none") {
    AddToken(line, TokenType::kAssignStringEscapeNone, op, "", std::nullopt);
  } else if (kv.value == "string_escape=replace") {
    AddToken(line, TokenType::kAssignStringEscapeReplace, op, "", std::nullopt);
  } else if (kv.value == "db_persist") {
    AddToken(line, TokenType::kAssignDbPersist, op, "", std::nullopt);
  } else if (kv.value == "watch") {
    AddToken(line, TokenType::kAssignWatch, op, "", std::nullopt, 1);
  } else if (kv.value == "nowatch") {
    AddToken(line, TokenType::kAssignWatch, op, "", std::nullopt, 0);
  } else if (absl::StartsWith(kv.value, "static_node=")) {
    AddToken(line, TokenType::kAssignStaticNode, op, kv.value.substr(12), std::nullopt);
  } else if (absl::StartsWith(kv.value, "link_priority=")) {
    int priority = 0;
    const absl::string_view text = kv.value.substr(14);
    if (!absl::SimpleAtoi(text, &priority)) {
      Error(absl::StrCat("Failed to parse link priority '", text, "': Invalid argument"));
      return false;
    }
    AddToken(line, TokenType::kAssignLinkPriority, op, "", std::nullopt, priority);
  } else if (absl::StartsWith(kv.value, "log_level=")) {
    const absl::string_view text = kv.value.substr(10);
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
    Warning(absl::StrCat("Invalid value for OPTIONS key, ignoring: '", kv.value, "'"));
  }
  return true;
}

bool Compiler::KeyOwnerOrGroup(const KeyValue& kv, Op op, Pending& line) {
  const bool owner = kv.key == "OWNER";
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (IsMatch(op) || op == Op::kRemove) return InvalidOp(kv.key);
  if (op == Op::kAdd) {
    Warning(absl::StrCat(kv.key, " key takes '=' or ':=' operator, assuming '='."));
    op = Op::kAssign;
  }
  const TokenType id_type = owner ? TokenType::kAssignOwnerId : TokenType::kAssignGroupId;
  uint32_t id = 0;
  if (ParseId(kv.value, &id)) {
    AddToken(line, id_type, op, "", std::nullopt, id);
  } else if (options_.resolve_names == ResolveNames::kEarly &&
             kv.value.find_first_of("%$") == absl::string_view::npos && !kv.value.empty() &&
             kv.value[0] != '[') {
    std::optional<uint32_t> resolved;
    if (owner) {
      resolved = options_.names != nullptr ? options_.names->UserId(kv.value)
                 : kv.value == "root"         ? std::optional<uint32_t>(0)
                                           : std::nullopt;
    } else {
      resolved = options_.names != nullptr ? options_.names->GroupId(kv.value)
                 : kv.value == "root"         ? std::optional<uint32_t>(0)
                                           : std::nullopt;
    }
    if (!resolved.has_value()) {
      Error(absl::StrCat("Unknown ", owner ? "user" : "group", " '", kv.value, "', ignoring"));
    }
    // An unknown name still takes its place: it resets what earlier rules set.
    AddToken(line, id_type, op, "", std::nullopt, resolved.has_value() ? int64_t{*resolved} : -1);
  } else if (options_.resolve_names != ResolveNames::kNever) {
    CheckValue(kv.key, kv.value, true);
    AddToken(line, owner ? TokenType::kAssignOwner : TokenType::kAssignGroup, op, kv.value,
             std::nullopt);
  }
  // resolve_names=never: udevd drops the kv.key quietly (debug log only).
  return true;
}

bool Compiler::KeyMode(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (IsMatch(op) || op == Op::kRemove) return InvalidOp(kv.key);
  if (op == Op::kAdd) {
    Warning("MODE key takes '=' or ':=' operator, assuming '='.");
    op = Op::kAssign;
  }
  uint32_t mode = 0;
  if (ParseOctalMode(kv.value, &mode)) {
    AddToken(line, TokenType::kAssignModeId, op, "", std::nullopt, mode);
  } else {
    CheckValue(kv.key, kv.value, true);
    AddToken(line, TokenType::kAssignMode, op, kv.value, std::nullopt);
  }
  return true;
}

bool Compiler::KeySeclabel(const KeyValue& kv, Op op, Pending& line) {
  if (!kv.attr.has_value() || kv.attr->empty()) return InvalidAttr(kv.key);
  CheckValue(kv.key, kv.value, true);
  if (IsMatch(op) || op == Op::kRemove) return InvalidOp(kv.key);
  if (op == Op::kAssignFinal) {
    Warning("SECLABEL key takes '=' or '+=' operator, assuming '='.");
    op = Op::kAssign;
  }
  AddToken(line, TokenType::kAssignSeclabel, op, kv.value, kv.attr);
  return true;
}

bool Compiler::KeyRun(const KeyValue& kv, Op op, Pending& line) {
  if (IsMatch(op) || op == Op::kRemove) return InvalidOp(kv.key);
  CheckValue(kv.key, kv.value, true);
  if (!kv.attr.has_value() || *kv.attr == "program") {
    AddToken(line, TokenType::kAssignRunProgram, op, kv.value, std::nullopt);
  } else if (*kv.attr == "builtin") {
    const int builtin = FindBuiltin(kv.value);
    if (builtin < 0) {
      Error(absl::StrCat("Unknown builtin command '", kv.value, "', ignoring"));
      return false;
    }
    AddToken(line, TokenType::kAssignRunBuiltin, op, kv.value, std::nullopt, builtin);
  } else {
    return InvalidAttr(kv.key);
  }
  return true;
}

bool Compiler::KeyGoto(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (op != Op::kAssign) return InvalidOp(kv.key);
  if ((line.flags & kLineHasGoto) != 0) {
    Warning(absl::StrCat("Contains multiple GOTO keys, ignoring GOTO=\"", kv.value, "\"."));
    return true;
  }
  line.goto_label = std::string(kv.value);
  line.flags |= kLineHasGoto;
  return true;
}

bool Compiler::KeyLabel(const KeyValue& kv, Op op, Pending& line) {
  if (kv.attr.has_value()) return InvalidAttr(kv.key);
  if (op != Op::kAssign) return InvalidOp(kv.key);
  line.label = std::string(kv.value);
  line.flags |= kLineHasLabel;
  return true;
}

}  // namespace hotring::hotplug::udevrules

// What each key of a rule compiles to, with udevd's checks and messages (its parse_token).
#include "hotplug/udevrules/compiler.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {

bool Compiler::KeySymlink(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  const Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyName(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
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

bool Compiler::KeyEnv(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyConst(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  const Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
  if (!attr.has_value() || (*attr != "arch" && *attr != "virt")) return InvalidAttr(key);
  if (!is_match) return InvalidOp(key);
  AddToken(line, TokenType::kMatchConst, op, value, attr);
  return true;
}

bool Compiler::KeyTag(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyAttrOrSysctl(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
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

bool Compiler::KeyAttrs(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  const Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyTest(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  const Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyProgram(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
  if (attr.has_value()) return InvalidAttr(key);
  CheckValue(key, value, true);
  if (op == Op::kRemove) return InvalidOp(key);
  if (!is_match) op = Op::kMatch;
  AddToken(line, TokenType::kMatchProgram, op, value, std::nullopt);
  return true;
}

bool Compiler::KeyImport(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyOptions(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyOwnerOrGroup(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyMode(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeySeclabel(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyRun(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  const Op op = kv.op;
  const bool is_match = op == Op::kMatch || op == Op::kNoMatch;
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

bool Compiler::KeyGoto(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  const Op op = kv.op;
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

bool Compiler::KeyLabel(const KeyValue& kv, Pending& line) {
  const absl::string_view key = kv.key;
  const absl::string_view value = kv.value;
  const std::optional<absl::string_view> attr = kv.attr;
  const Op op = kv.op;
  if (attr.has_value()) return InvalidAttr(key);
  if (op != Op::kAssign) return InvalidOp(key);
  line.label = std::string(value);
  line.flags |= kLineHasLabel;
  return true;
}

}  // namespace hotring::hotplug::udevrules

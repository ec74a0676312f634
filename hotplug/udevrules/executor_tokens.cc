// What each key of a rule does to the event (udev-rules.c's udev_rule_apply_token_to_event).
#include "hotplug/udevrules/executor_state.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {

TokenResult ExecutorState::ApplyToken(const Token& t, int dev) {
  switch (t.type) {
    case TokenType::kMatchAction:
      return ResultOf(MatchString(t, action_));
    case TokenType::kMatchDevpath:
      return ResultOf(MatchString(t, devpath_));
    case TokenType::kMatchKernel:
    case TokenType::kMatchParentsKernel:
      return ResultOf(MatchString(t, Sysname(dev)));
    case TokenType::kMatchDevlink:
      return MatchDevlink(t, dev);
    case TokenType::kMatchName:
      return ResultOf(MatchString(t, has_name_ ? name_ : absl::string_view()));
    case TokenType::kMatchEnv:
      return MatchEnv(t, dev);
    case TokenType::kMatchConst:
      return ResultOf(MatchString(t, host_->Constant(rules_->str(t.attr))));
    case TokenType::kMatchTag:
    case TokenType::kMatchParentsTag:
      return ResultOf(HasTag(dev, t) ? t.op == Op::kMatch : t.op == Op::kNoMatch);
    case TokenType::kMatchSubsystem:
    case TokenType::kMatchParentsSubsystem:
      return ResultOf(MatchString(t, SubsystemOf(dev).value_or(absl::string_view())));
    case TokenType::kMatchDriver:
    case TokenType::kMatchParentsDriver:
      return ResultOf(MatchString(t, DriverOf(dev).value_or(absl::string_view())));
    case TokenType::kMatchAttr:
    case TokenType::kMatchParentsAttr:
      return MatchAttr(t, dev);
    case TokenType::kMatchSysctl:
      return MatchSysctl(t, dev);
    case TokenType::kMatchTest:
      return MatchTest(t, dev);
    case TokenType::kMatchProgram:
      return MatchProgram(t, dev);
    case TokenType::kMatchImportFile:
      return MatchImportFile(t, dev);
    case TokenType::kMatchImportProgram:
      return MatchImportProgram(t, dev);
    case TokenType::kMatchImportBuiltin:
      return MatchImportBuiltin(t, dev);
    case TokenType::kMatchImportDb:
      return MatchImportDb(t, dev);
    case TokenType::kMatchImportCmdline:
      return MatchImportCmdline(t, dev);
    case TokenType::kMatchImportParent:
      return MatchImportParent(t, dev);
    case TokenType::kMatchResult:
      return ResultOf(MatchString(t, has_result_ ? program_result_ : absl::string_view()));
    case TokenType::kAssignStringEscapeNone:
      esc_ = EscapeMode::kNone;
      return TokenResult::kMatch;
    case TokenType::kAssignStringEscapeReplace:
      esc_ = EscapeMode::kReplace;
      return TokenResult::kMatch;
    case TokenType::kAssignDbPersist:
      db_persist_ = true;
      return TokenResult::kMatch;
    case TokenType::kAssignWatch:
      if (watch_final_) return TokenResult::kMatch;
      if (t.op == Op::kAssignFinal) watch_final_ = true;
      watch_ = t.number != 0;
      return TokenResult::kMatch;
    case TokenType::kAssignLinkPriority:
      link_priority_ = static_cast<int>(t.number);
      return TokenResult::kMatch;
    case TokenType::kAssignLogLevel:
      log_level_ = static_cast<int>(t.number);
      return TokenResult::kMatch;
    case TokenType::kAssignOwner:
    case TokenType::kAssignGroup:
      return AssignOwnerOrGroup(t, dev);
    case TokenType::kAssignMode:
      return AssignMode(t, dev);
    case TokenType::kAssignOwnerId:
    case TokenType::kAssignGroupId:
    case TokenType::kAssignModeId:
      return AssignId(t, dev);
    case TokenType::kAssignSeclabel:
      return AssignSeclabel(t, dev);
    case TokenType::kAssignEnv:
      return AssignEnv(t, dev);
    case TokenType::kAssignTag:
      return AssignTag(t, dev);
    case TokenType::kAssignName:
      return AssignName(t, dev);
    case TokenType::kAssignDevlink:
      return AssignDevlink(t, dev);
    case TokenType::kAssignAttr:
      return AssignAttr(t, dev);
    case TokenType::kAssignSysctl:
      return AssignSysctl(t, dev);
    case TokenType::kAssignRunBuiltin:
    case TokenType::kAssignRunProgram:
      return AssignRun(t, dev);
    case TokenType::kAssignStaticNode:
      return TokenResult::kMatch;
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::MatchDevlink(const Token& t, int dev) {
  // "!=": true only when no link matches.
  for (absl::string_view l : links_) {
    absl::ConsumePrefix(&l, kDevPrefix);
    if (Matches(t, l)) return ResultOf(t.op == Op::kMatch);
  }
  return ResultOf(t.op == Op::kNoMatch);
}

TokenResult ExecutorState::MatchEnv(const Token& t, int dev) {
  const absl::string_view key = rules_->str(t.attr);
  std::optional<absl::string_view> v = GetProperty(key);
  if (!v.has_value()) {
    for (const auto& [k, value] : options_->global_properties) {
      if (k == key) v = value;
    }
  }
  return ResultOf(MatchString(t, v.value_or(absl::string_view())));
}

TokenResult ExecutorState::MatchAttr(const Token& t, int dev) {
  absl::string_view value;
  switch (t.attr_kind) {
    case AttrKind::kSubsys:
      if (!ResolveSubsys(rules_->format(t.attr).source(), true, &value_)) return TokenResult::kNoMatch;
      value = value_;
      break;
    case AttrKind::kFormat:
      if (Expand(t.attr, kUdevNameSize, &name_buf_)) return TokenResult::kNoMatch;
      [[fallthrough]];
    default: {
      const absl::string_view name =
          t.attr_kind == AttrKind::kFormat ? absl::string_view(name_buf_) : rules_->format(t.attr).source();
      std::optional<absl::string_view> v = Attribute(dev, name);
      // A missing attribute matches neither "==" nor "!=" (udevd returns false).
      if (!v.has_value()) return TokenResult::kNoMatch;
      value = *v;
    }
  }
  // Trimming goes through udevd's fixed buffer, which also cuts the value.
  if (t.trim_subject) value = StripTrailingSpace(value.substr(0, kUdevNameSize - 1));
  return ResultOf(MatchString(t, value));
}

TokenResult ExecutorState::MatchSysctl(const Token& t, int dev) {
  if (Expand(t.attr, kUdevPathSize, &name_buf_)) return TokenResult::kNoMatch;
  std::string name = name_buf_;
  // sysctl_normalize: "a.b.c" is "a/b/c" unless the first separator is a '/'.
  const size_t sep = name.find_first_of("/.");
  if (sep != std::string::npos && name[sep] == '.') {
    for (char& c : name) c = c == '.' ? '/' : c == '/' ? '.' : c;
  }
  absl::string_view value;
  if (host_->ReadSysctl(name, &host_buf_)) value = Strip(host_buf_);
  return ResultOf(MatchString(t, value));
}

TokenResult ExecutorState::MatchTest(const Token& t, int dev) {
  if (Expand(t.value, kUdevPathSize, &path_buf_)) {
    value_ = path_buf_;
    Truncated("file name", t.value, "TEST", true);
    return TokenResult::kNoMatch;
  }
  if (path_buf_.empty() || path_buf_[0] != '/') {
    if (ResolveSubsys(path_buf_, false, &name_buf_)) {
      path_buf_.swap(name_buf_);
    } else {
      // The device's own directory: "/sys" DEVPATH "/" NAME.
      name_buf_.assign("/sys");
      name_buf_.append(devpath_.data(), devpath_.size());
      name_buf_.push_back('/');
      name_buf_.append(path_buf_);
      path_buf_.swap(name_buf_);
    }
  }
  if (!SubstSubdir(&path_buf_)) return ResultOf(t.op == Op::kNoMatch);
  const std::optional<uint32_t> mode = host_->FileMode(path_buf_);
  if (!mode.has_value()) return ResultOf(t.op == Op::kNoMatch);
  if (t.number < 0) return ResultOf(t.op == Op::kMatch);
  const bool match = (*mode & static_cast<uint32_t>(t.number)) > 0;
  return ResultOf((t.op == Op::kMatch) == match);
}

TokenResult ExecutorState::MatchProgram(const Token& t, int dev) {
  has_result_ = false;
  Expand(t.value, kUdevPathSize, &value_);
  if (Debugging()) Log(absl::StrCat("Running PROGRAM '", value_, "'"));
  const absl::Status status = RunProgram(value_, &host_buf_);
  if (!status.ok()) {
    if (Debugging()) Log(absl::StrCat("Command \"", value_, "\" failed: ", status.message()));
    return ResultOf(t.op == Op::kNoMatch);
  }
  while (!host_buf_.empty() && host_buf_.back() == '\n') host_buf_.pop_back();
  ReplaceChars(&host_buf_, kAllowedInputChars);
  program_result_ = arena_.Copy(host_buf_);
  has_result_ = true;
  return ResultOf(t.op == Op::kMatch);
}

TokenResult ExecutorState::MatchImportFile(const Token& t, int dev) {
  if (Expand(t.value, kUdevPathSize, &value_)) {
    Truncated("file name to be imported", t.value, "IMPORT", true);
    return TokenResult::kNoMatch;
  }
  if (Debugging()) Log(absl::StrCat("Importing properties from '", value_, "'"));
  const absl::Status status = host_->ReadFile(value_, kMaxImportFile, &host_buf_);
  if (absl::IsNotFound(status)) return ResultOf(t.op == Op::kNoMatch);
  if (!status.ok()) {
    Log(absl::StrCat("Failed to open '", value_, "': ", status.message()));
    outcome_->status = status;
    return TokenResult::kAbort;
  }
  ImportLines(host_buf_, true);
  return ResultOf(t.op == Op::kMatch);
}

TokenResult ExecutorState::MatchImportProgram(const Token& t, int dev) {
  Expand(t.value, kUdevPathSize, &value_);
  if (Debugging()) Log(absl::StrCat("Importing properties from results of '", value_, "'"));
  const absl::Status status = RunProgram(value_, &host_buf_);
  if (!status.ok()) {
    if (Debugging()) Log(absl::StrCat("Command \"", value_, "\" failed, ignoring: ", status.message()));
    return ResultOf(t.op == Op::kNoMatch);
  }
  ImportLines(host_buf_, false);
  return ResultOf(t.op == Op::kMatch);
}

TokenResult ExecutorState::MatchImportBuiltin(const Token& t, int dev) {
  const int index = static_cast<int>(t.number);
  const BuiltinInfo& builtin = rules_->builtins()[static_cast<size_t>(index)];
  const uint64_t mask = uint64_t{1} << (index & 63);
  if (builtin.run_once) {
    if ((builtin_ran_ & mask) != 0) {
      if (Debugging()) Log(absl::StrCat("Skipping builtin '", builtin.name, "' in IMPORT key"));
      return ResultOf(t.op == ((builtin_failed_ & mask) != 0 ? Op::kNoMatch : Op::kMatch));
    }
    builtin_ran_ |= mask;
  }
  if (Expand(t.value, kUdevPathSize, &value_)) {
    Truncated("builtin command", t.value, "IMPORT", true);
    return TokenResult::kNoMatch;
  }
  if (Debugging()) Log(absl::StrCat("Importing properties from results of builtin command '", value_, "'"));
  const size_t words = SplitCommandWords(value_, &argv_);
  imported_.clear();
  const absl::Status status = host_->RunBuiltin(builtin.name, value_, absl::MakeConstSpan(argv_.data(), words),
                                                devpath_, ProgramEnvironment(true), &imported_);
  if (!status.ok()) {
    if (Debugging()) Log(absl::StrCat("Failed to run builtin '", value_, "': ", status.message()));
    builtin_failed_ |= mask;
    return ResultOf(t.op == Op::kNoMatch);
  }
  for (const auto& [k, v] : imported_) SetProperty(arena_.Copy(k), arena_.Copy(v));
  return ResultOf(t.op == Op::kMatch);
}

TokenResult ExecutorState::MatchImportDb(const Token& t, int dev) {
  if (!have_db_) return ResultOf(t.op == Op::kNoMatch);
  const absl::string_view key = rules_->format(t.value).source();
  for (const auto& [k, v] : db_.properties) {
    if (k == key) {
      SetProperty(arena_.Copy(k), arena_.Copy(v));
      return ResultOf(t.op == Op::kMatch);
    }
  }
  return ResultOf(t.op == Op::kNoMatch);
}

TokenResult ExecutorState::MatchImportCmdline(const Token& t, int dev) {
  const absl::string_view key = rules_->format(t.value).source();
  const std::vector<std::string> words = SplitCommand(host_->KernelCommandLine());
  bool found = false;
  std::optional<std::string> value;
  for (const std::string& word : words) {
    // proc_cmdline_key_startswith: '-' and '_' are the same in keys.
    if (word.size() < key.size()) continue;
    bool same = true;
    for (size_t i = 0; i < key.size() && same; ++i) {
      const char a = word[i] == '-' ? '_' : word[i];
      const char b = key[i] == '-' ? '_' : key[i];
      same = a == b;
    }
    if (!same) continue;
    if (word.size() == key.size()) {
      found = true;
    } else if (word[key.size()] == '=') {
      found = true;
      value = word.substr(key.size() + 1);
    }
  }
  if (!found) return ResultOf(t.op == Op::kNoMatch);
  SetProperty(key, arena_.Copy(value.value_or("1")));
  return ResultOf(t.op == Op::kMatch);
}

TokenResult ExecutorState::MatchImportParent(const Token& t, int dev) {
  if (Expand(t.value, kUdevPathSize, &value_)) {
    Truncated("property name", t.value, "IMPORT", true);
    return TokenResult::kNoMatch;
  }
  if (!EnsureParent(0)) return ResultOf(t.op == Op::kNoMatch);
  if (!host_->DeviceProperties(parents_[0].devpath, &imported_)) return ResultOf(t.op == Op::kNoMatch);
  bool driver_listed = false;
  for (const auto& [k, v] : imported_) {
    if (k == "DRIVER") driver_listed = true;
    if (GlobMatch(value_, k)) SetProperty(arena_.Copy(k), arena_.Copy(v));
  }
  // A bound device's uevent file names its driver; the link is read (once, shared with DRIVERS==)
  // only where the file does not and the pattern takes DRIVER: most imports ("ID_SEAT", "ID_*")
  // never do, and a readlink that fails is most of what an unbound parent costs.
  if (!driver_listed && GlobMatch(value_, "DRIVER")) {
    if (std::optional<absl::string_view> driver = DriverOf(0); driver.has_value()) {
      SetProperty("DRIVER", *driver);
    }
  }
  return ResultOf(t.op == Op::kMatch);
}

TokenResult ExecutorState::AssignOwnerOrGroup(const Token& t, int dev) {
  const bool owner = t.type == TokenType::kAssignOwner;
  bool& final = owner ? owner_final_ : group_final_;
  if (final) return TokenResult::kMatch;
  if (t.op == Op::kAssignFinal) final = true;
  if (Expand(t.value, kUdevNameSize, &value_)) {
    Truncated(owner ? "user name" : "group name", t.value, owner ? "OWNER" : "GROUP", false);
    return TokenResult::kMatch;
  }
  const std::optional<uint32_t> id = owner ? host_->UserId(value_) : host_->GroupId(value_);
  if (!id.has_value()) {
    Log(absl::StrCat("Unknown ", owner ? "user" : "group", " '", value_, "', ignoring"));
  } else {
    (owner ? uid_ : gid_) = *id;
    if (Debugging()) Log(absl::StrCat(owner ? "OWNER " : "GROUP ", value_, "(", *id, ")"));
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignMode(const Token& t, int dev) {
  if (mode_final_) return TokenResult::kMatch;
  if (t.op == Op::kAssignFinal) mode_final_ = true;
  if (Expand(t.value, kUdevNameSize, &value_)) {
    Truncated("mode", t.value, "MODE", false);
    return TokenResult::kMatch;
  }
  uint32_t mode = 0;
  if (!ParseOctalMode(value_, &mode)) {
    Log(absl::StrCat("Failed to parse mode '", value_, "', ignoring: Invalid argument"));
  } else {
    mode_ = mode;
    if (Debugging()) Log(absl::StrFormat("MODE %#o", mode));
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignId(const Token& t, int dev) {
  bool& final = t.type == TokenType::kAssignOwnerId   ? owner_final_
                : t.type == TokenType::kAssignGroupId ? group_final_
                                                      : mode_final_;
  std::optional<uint32_t>& target = t.type == TokenType::kAssignOwnerId   ? uid_
                                    : t.type == TokenType::kAssignGroupId ? gid_
                                                                          : mode_;
  if (final) return TokenResult::kMatch;
  if (t.op == Op::kAssignFinal) final = true;
  if (t.number < 0) {
    target.reset();  // a name that did not resolve when the rules loaded
  } else {
    target = static_cast<uint32_t>(t.number);
    if (Debugging()) Log(t.type == TokenType::kAssignModeId ? absl::StrFormat("MODE %#o", t.number)
          : absl::StrCat(t.type == TokenType::kAssignOwnerId ? "OWNER " : "GROUP ", t.number));
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignSeclabel(const Token& t, int dev) {
  if (Expand(t.value, kUdevLineSize, &value_)) {
    Truncated("security label", t.value, "SECLABEL", false);
    return TokenResult::kMatch;
  }
  const absl::string_view module = rules_->str(t.attr);
  const absl::string_view label =
      value_.empty() ? absl::string_view(rules_->format(t.value).source()) : absl::string_view(value_);
  if (t.op == Op::kAssign) seclabels_.clear();
  for (const auto& [m, l] : seclabels_) {
    if (m == module) {
      // udevd's ordered map refuses the second label of a module and gives up the event.
      Log(absl::StrCat("Failed to store SECLABEL{", module, "}='", label, "': File exists"));
      outcome_->status = absl::AlreadyExistsError(absl::StrCat("SECLABEL{", module, "} given twice"));
      return TokenResult::kAbort;
    }
  }
  seclabels_.emplace_back(module, arena_.Copy(label));
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignEnv(const Token& t, int dev) {
  const absl::string_view name = rules_->str(t.attr);
  const Format& f = rules_->format(t.value);
  if (f.source().empty()) {
    if (t.op == Op::kAdd) return TokenResult::kMatch;
    DeleteProperty(name);
    return TokenResult::kMatch;
  }
  std::string prefix;
  if (t.op == Op::kAdd) {
    if (std::optional<absl::string_view> old = GetProperty(name); old.has_value()) {
      prefix = absl::StrCat(*old, " ");
    }
  }
  // One udevd buffer holds the old value, the space and the new one.
  const size_t room = prefix.size() < kUdevNameSize ? kUdevNameSize - prefix.size() : 1;
  if (Expand(t.value, room, &value_)) {
    Log(absl::StrCat("The property value '", prefix, value_, "' is truncated while substituting into '",
                     f.source(), "', refusing to add property '", name, "'."));
    return TokenResult::kMatch;
  }
  if (esc_ == EscapeMode::kReplace) ReplaceChars(&value_, "");
  prefix.append(value_);
  SetProperty(name, arena_.Copy(prefix));
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignTag(const Token& t, int dev) {
  if (Expand(t.value, kUdevPathSize, &value_)) {
    Truncated("tag name", t.value, "TAG", false);
    return TokenResult::kMatch;
  }
  if (t.op == Op::kAssign) tags_.clear();
  for (char c : value_) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      Log(absl::StrCat("Invalid tag name '", value_, "', ignoring"));
      return TokenResult::kMatch;
    }
  }
  if (value_.empty()) return TokenResult::kMatch;  // udevd adds nothing and goes on
  if (t.op == Op::kRemove) {
    // Only this event's tags lose it: TAGS keeps every tag the device ever had.
    for (Tag& tag : tags_) {
      if (tag.name == value_) tag.current = false;
    }
  } else {
    bool found = false;
    for (Tag& tag : tags_) {
      if (tag.name == value_) {
        tag.current = true;
        found = true;
      }
    }
    if (!found) tags_.push_back(Tag{arena_.Copy(value_), true});
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignName(const Token& t, int dev) {
  if (name_final_) return TokenResult::kMatch;
  if (t.op == Op::kAssignFinal) name_final_ = true;
  if (!has_ifindex_) {
    Log(absl::StrCat("Only network interfaces can be renamed, ignoring NAME=\"",
                     rules_->format(t.value).source(), "\"."));
    return TokenResult::kMatch;
  }
  if (Expand(t.value, kUdevPathSize, &value_)) {
    Truncated("network interface name", t.value, "NAME", false);
    return TokenResult::kMatch;
  }
  if (esc_ != EscapeMode::kNone) ReplaceIfnameChars(&value_);
  name_ = arena_.Copy(value_);
  has_name_ = true;
  if (Debugging()) Log(absl::StrCat("NAME '", value_, "'"));
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignDevlink(const Token& t, int dev) {
  if (devlink_final_) return TokenResult::kMatch;
  if (!has_devnum_) return TokenResult::kMatch;
  if (t.op == Op::kAssignFinal) devlink_final_ = true;
  if (t.op == Op::kAssign || t.op == Op::kAssignFinal) links_.clear();
  if (Expand(t.value, kUdevPathSize, &value_, esc_ != EscapeMode::kNone)) {
    Truncated("symbolic link path", t.value, "SYMLINK", false);
    return TokenResult::kMatch;
  }
  if (esc_ == EscapeMode::kUnset) {
    ReplaceChars(&value_, "/ ");
  } else if (esc_ == EscapeMode::kReplace) {
    ReplaceChars(&value_, "/");
  }
  size_t i = 0;
  while (i < value_.size() && IsSpace(value_[i])) ++i;
  while (i < value_.size()) {
    size_t next = value_.find(' ', i);
    const absl::string_view link =
        absl::string_view(value_).substr(i, next == std::string::npos ? std::string::npos : next - i);
    path_buf_.assign(kDevPrefix.data(), kDevPrefix.size());
    path_buf_.append(link.data(), link.size());
    AddLink(path_buf_);
    if (Debugging()) Log(absl::StrCat("LINK '", link, "'"));
    if (next == std::string::npos) break;
    i = next + 1;
    while (i < value_.size() && IsSpace(value_[i])) ++i;
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignAttr(const Token& t, int dev) {
  const absl::string_view key = rules_->format(t.attr).source();
  std::string path;
  if (!ResolveSubsys(key, false, &path)) path = absl::StrCat("/sys", devpath_, "/", key);
  if (!SubstSubdir(&path)) {
    Log(absl::StrCat("Could not find file matches '", path, "', ignoring: No such file or directory"));
    return TokenResult::kMatch;
  }
  if (Expand(t.value, kUdevNameSize, &value_)) {
    Truncated("attribute value", t.value, "ATTR", false);
    return TokenResult::kMatch;
  }
  if (Debugging()) Log(absl::StrCat("ATTR '", path, "' writing '", value_, "'"));
  if (const absl::Status s = host_->WriteAttribute(path, value_); !s.ok()) {
    Log(absl::StrCat("Failed to write ATTR{", path, "}, ignoring: ", s.message()));
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignSysctl(const Token& t, int dev) {
  if (Expand(t.attr, kUdevPathSize, &name_buf_)) {
    value_ = name_buf_;
    Truncated("sysctl entry name", t.attr, "SYSCTL", false);
    return TokenResult::kMatch;
  }
  if (Expand(t.value, kUdevNameSize, &value_)) {
    Truncated("sysctl value", t.value, "SYSCTL", false);
    return TokenResult::kMatch;
  }
  std::string name = name_buf_;
  const size_t sep = name.find_first_of("/.");
  if (sep != std::string::npos && name[sep] == '.') {
    for (char& c : name) c = c == '.' ? '/' : c == '/' ? '.' : c;
  }
  if (Debugging()) Log(absl::StrCat("SYSCTL '", name, "' writing '", value_, "'"));
  if (const absl::Status s = host_->WriteSysctl(name, value_); !s.ok()) {
    Log(absl::StrCat("Failed to write SYSCTL{", name, "}='", value_, "', ignoring: ", s.message()));
  }
  return TokenResult::kMatch;
}

TokenResult ExecutorState::AssignRun(const Token& t, int dev) {
  if (run_final_) return TokenResult::kMatch;
  if (t.op == Op::kAssignFinal) run_final_ = true;
  if (t.op == Op::kAssign || t.op == Op::kAssignFinal) run_.clear();
  Expand(t.value, kUdevPathSize, &value_);
  const bool builtin = t.type == TokenType::kAssignRunBuiltin;
  run_.push_back(RunItem{builtin, builtin ? static_cast<int>(t.number) : -1, arena_.Copy(value_)});
  if (Debugging()) Log(absl::StrCat("RUN '", rules_->format(t.value).source(), "'"));
  return TokenResult::kMatch;
}

}  // namespace hotring::hotplug::udevrules

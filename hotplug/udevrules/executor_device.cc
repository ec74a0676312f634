// The executor's device: the event's properties, its parents and attributes, tags and links,
// and what substitutions stand for.
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
#include "hotplug/udev/ifindex.h"
#include "absl/strings/strip.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {
namespace {

// How a path is compared for links: "a//b/" and "a/b" are the same (systemd's path_equal).
bool SamePath(absl::string_view a, absl::string_view b) {
  size_t i = 0;
  size_t j = 0;
  while (true) {
    while (i < a.size() && a[i] == '/') ++i;
    while (j < b.size() && b[j] == '/') ++j;
    const size_t ei = std::min(a.find('/', i), a.size());
    const size_t ej = std::min(b.find('/', j), b.size());
    if (a.substr(i, ei - i) != b.substr(j, ej - j)) return false;
    if (ei >= a.size() && ej >= b.size()) return true;
    if (ei >= a.size() || ej >= b.size()) {
      // One has only slashes left.
      size_t ri = ei;
      size_t rj = ej;
      while (ri < a.size() && a[ri] == '/') ++ri;
      while (rj < b.size() && b[rj] == '/') ++rj;
      return ri >= a.size() && rj >= b.size();
    }
    i = ei;
    j = ej;
  }
}

}  // namespace

void ExecutorState::Reset() {
  arena_.Reset();
  properties_.clear();
  property_index_.Reset();
  parents_.clear();
  parents_complete_ = false;
  parent_tags_.clear();
  attribute_index_.Reset();
  attribute_values_.clear();
  tags_.clear();
  links_.clear();
  run_.clear();
  seclabels_.clear();
  have_db_ = false;
  dev_parent_ = kNoDevice;
  has_name_ = false;
  name_ = {};
  has_result_ = false;
  program_result_ = {};
  esc_ = EscapeMode::kUnset;
  name_final_ = devlink_final_ = owner_final_ = group_final_ = mode_final_ = run_final_ =
      watch_final_ = false;
  uid_.reset();
  gid_.reset();
  mode_.reset();
  watch_.reset();
  log_level_.reset();
  link_priority_ = 0;
  db_persist_ = false;
  builtin_ran_ = builtin_failed_ = 0;
  has_subsystem_ = has_driver_ = driver_known_ = has_devnum_ = has_ifindex_ = false;
  devname_ = {};
}

void ExecutorState::LoadEvent(const EventInput& event) {
  action_ = event.action;
  remove_ = event.action == "remove";
  devpath_ = event.devpath;
  const size_t slash = devpath_.rfind('/');
  absl::string_view last = slash == absl::string_view::npos ? devpath_ : devpath_.substr(slash + 1);
  if (last.find('!') != absl::string_view::npos) {
    std::string s(last);
    std::replace(s.begin(), s.end(), '!', '/');
    last = arena_.Copy(s);
  }
  sysname_ = last;
  size_t digits = sysname_.size();
  while (digits > 0 && absl::ascii_isdigit(static_cast<unsigned char>(sysname_[digits - 1]))) --digits;
  sysnum_ = digits < sysname_.size() ? sysname_.substr(digits) : absl::string_view();
  bool have_major = false;
  bool have_minor = false;
  for (const auto& [key, value] : event.properties) {
    absl::string_view v = value;
    if (key == "SUBSYSTEM") {
      subsystem_ = value;
      has_subsystem_ = true;
    } else if (key == "DRIVER") {
      driver_ = value;
      has_driver_ = driver_known_ = true;
    } else if (key == "DEVNAME") {
      if (!value.empty() && value[0] != '/') {
        path_buf_.assign(kDevPrefix.data(), kDevPrefix.size());
        path_buf_.append(value.data(), value.size());
        v = arena_.Copy(path_buf_);
      }
      devname_ = v;
    } else if (key == "MAJOR") {
      have_major = absl::SimpleAtoi(value, &major_);
    } else if (key == "MINOR") {
      have_minor = absl::SimpleAtoi(value, &minor_);
    } else if (key == "IFINDEX") {
      has_ifindex_ = udev::ParseIfindex(value).has_value();
    }
    SetProperty(key, v);
  }
  has_devnum_ = have_major && have_minor;
  if (!has_subsystem_) {
    // A device read from sysfs: udevd looks at its link.
    if (host_->Subsystem(devpath_, &host_buf_)) {
      subsystem_ = arena_.Copy(host_buf_);
      has_subsystem_ = true;
      SetProperty("SUBSYSTEM", subsystem_);
    }
  }
  have_db_ = host_->ReadDatabase(devpath_, &db_);
  if (remove_ && have_db_) {
    // udevd reads the whole entry into a removed device: its properties, tags and links.
    for (const auto& [k, v] : db_.properties) {
      if (!GetProperty(k).has_value()) SetProperty(arena_.Copy(k), arena_.Copy(v));
    }
    AddTagsFrom(db_.tags, false);
    AddTagsFrom(db_.current_tags, true);
    for (const std::string& link : db_.links) {
      links_.push_back(arena_.Copy(absl::StrCat(kDevPrefix, link)));
    }
    link_priority_ = db_.link_priority;
  } else if (have_db_) {
    // Tags of earlier events stay (TAGS), not current. Properties do not, on `move` neither:
    // udevd 252 starts every event but remove from the uevent alone (in the guest comparison a
    // renamed interface's move gives SYSTEMD_ALIAS once, not the database's value twice).
    AddTagsFrom(db_.tags, false);
  }
  // udevd drops it before the rules, so that IMPORT{db}="ID_RENAMING" cannot bring it back.
  DeleteProperty("ID_RENAMING");
}

bool ExecutorState::AddTagsFrom(absl::Span<const std::string> tags, bool current) {
  for (const std::string& t : tags) {
    bool found = false;
    for (Tag& existing : tags_) {
      if (existing.name == t) {
        existing.current = existing.current || current;
        found = true;
      }
    }
    if (!found) tags_.push_back(Tag{arena_.Copy(t), current});
  }
  return true;
}

std::optional<absl::string_view> ExecutorState::GetProperty(absl::string_view key) {
  // Derived properties, as sd_device prepares them before each read.
  if (key == "DEVLINKS" || key == "TAGS" || key == "CURRENT_TAGS") {
    dynamic_buf_.clear();
    if (key == "DEVLINKS") {
      if (links_.empty()) return std::nullopt;
      for (absl::string_view l : links_) {
        if (!dynamic_buf_.empty()) dynamic_buf_.push_back(' ');
        dynamic_buf_.append(l.data(), l.size());
      }
    } else {
      const bool current = key == "CURRENT_TAGS";
      for (const Tag& t : tags_) {
        if (current && !t.current) continue;
        if (dynamic_buf_.empty()) dynamic_buf_.push_back(':');
        dynamic_buf_.append(t.name.data(), t.name.size());
        dynamic_buf_.push_back(':');
      }
      if (dynamic_buf_.empty()) return std::nullopt;
    }
    return arena_.Copy(dynamic_buf_);
  }
  const uint32_t* i = property_index_.Find(0, key);
  if (i == nullptr || properties_[*i].deleted) return std::nullopt;
  return properties_[*i].value;
}

void ExecutorState::SetProperty(absl::string_view key, absl::string_view value) {
  const uint32_t* i = property_index_.Find(0, key);
  if (i != nullptr && !properties_[*i].deleted) {
    properties_[*i].value = value;
    return;
  }
  // New, or deleted before: it goes last (an ordered map's remove and insert).
  property_index_.Put(0, key, static_cast<uint32_t>(properties_.size()));
  properties_.push_back(Property{key, value, false});
}

void ExecutorState::DeleteProperty(absl::string_view key) {
  const uint32_t* i = property_index_.Find(0, key);
  if (i != nullptr) properties_[*i].deleted = true;
}

absl::Span<const PropertyView> ExecutorState::ProgramEnvironment(bool include_hidden) {
  env_.clear();
  for (const Property& p : properties_) {
    if (p.deleted || (!include_hidden && absl::StartsWith(p.key, "."))) continue;
    if (p.key == "DEVLINKS" || p.key == "TAGS" || p.key == "CURRENT_TAGS") continue;
    env_.emplace_back(p.key, p.value);
  }
  for (absl::string_view key : {"DEVLINKS", "TAGS", "CURRENT_TAGS"}) {
    if (std::optional<absl::string_view> v = GetProperty(key); v.has_value()) env_.emplace_back(key, *v);
  }
  return env_;
}

bool ExecutorState::EnsureParent(int index) {
  while (static_cast<int>(parents_.size()) <= index) {
    if (parents_complete_) return false;
    const absl::string_view from = parents_.empty() ? devpath_ : parents_.back().devpath;
    if (!host_->Parent(from, &host_buf_)) {
      parents_complete_ = true;
      return false;
    }
    Parent p;
    p.devpath = arena_.Copy(host_buf_);
    const size_t slash = p.devpath.rfind('/');
    absl::string_view last = slash == absl::string_view::npos ? p.devpath : p.devpath.substr(slash + 1);
    if (last.find('!') != absl::string_view::npos) {
      std::string s(last);
      std::replace(s.begin(), s.end(), '!', '/');
      last = arena_.Copy(s);
    }
    p.sysname = last;
    parents_.push_back(p);
  }
  return true;
}

absl::string_view ExecutorState::Sysname(int dev) {
  return dev == kEventDevice ? sysname_ : parents_[dev].sysname;
}

absl::string_view ExecutorState::Devpath(int dev) {
  return dev == kEventDevice ? devpath_ : parents_[dev].devpath;
}

std::optional<absl::string_view> ExecutorState::SubsystemOf(int dev) {
  if (dev == kEventDevice) {
    return has_subsystem_ ? std::optional<absl::string_view>(subsystem_) : std::nullopt;
  }
  Parent& p = parents_[dev];
  if (!p.subsystem_known) {
    p.subsystem_known = true;
    p.has_subsystem = host_->Subsystem(p.devpath, &host_buf_);
    if (p.has_subsystem) p.subsystem = arena_.Copy(host_buf_);
  }
  return p.has_subsystem ? std::optional<absl::string_view>(p.subsystem) : std::nullopt;
}

std::optional<absl::string_view> ExecutorState::DriverOf(int dev) {
  if (dev == kEventDevice) {
    if (!driver_known_) {
      driver_known_ = true;
      has_driver_ = host_->Driver(devpath_, &host_buf_);
      if (has_driver_) {
        driver_ = arena_.Copy(host_buf_);
        SetProperty("DRIVER", driver_);  // sd_device records what it read
      }
    }
    return has_driver_ ? std::optional<absl::string_view>(driver_) : std::nullopt;
  }
  Parent& p = parents_[dev];
  if (!p.driver_known) {
    p.driver_known = true;
    p.has_driver = host_->Driver(p.devpath, &host_buf_);
    if (p.has_driver) p.driver = arena_.Copy(host_buf_);
  }
  return p.has_driver ? std::optional<absl::string_view>(p.driver) : std::nullopt;
}

std::optional<absl::string_view> ExecutorState::Attribute(int dev, absl::string_view name) {
  // sd_device keeps what it read (also "missing") for the rest of the event.
  if (const uint32_t* i = attribute_index_.Find(dev, name); i != nullptr) return attribute_values_[*i];
  const absl::string_view key = arena_.Copy(name);
  std::optional<absl::string_view> value;
  if (host_->ReadAttribute(Devpath(dev), name, &host_buf_)) value = arena_.Copy(host_buf_);
  attribute_index_.Put(dev, key, static_cast<uint32_t>(attribute_values_.size()));
  attribute_values_.push_back(value);
  return value;
}

bool ExecutorState::ResolveSubsys(absl::string_view text, bool read_value, std::string* out) {
  if (text.empty() || text[0] != '[') return false;
  const size_t slash = text.find('/', 1);
  if (slash == absl::string_view::npos) return false;
  const size_t close = text.find(']', slash + 1);
  if (close == absl::string_view::npos) return false;
  const absl::string_view subsystem = text.substr(1, slash - 1);
  const absl::string_view sysname = text.substr(slash + 1, close - slash - 1);
  absl::string_view attr = text.substr(close + 1);
  if (!attr.empty() && attr[0] == '/') attr.remove_prefix(1);
  if (read_value && attr.empty()) return false;
  if (!host_->FindDevice(subsystem, sysname, &found_buf_)) return false;
  if (read_value) {
    if (!host_->ReadAttribute(found_buf_, attr, out)) out->clear();
  } else {
    out->assign("/sys");
    out->append(found_buf_);
    if (!attr.empty()) {
      out->push_back('/');
      out->append(attr.data(), attr.size());
    }
  }
  return true;
}

bool ExecutorState::HasTag(int dev, const Token& t) {
  if (dev == kEventDevice) {
    for (const Tag& tag : tags_) {
      if (Matches(t, tag.name)) return true;
    }
    return false;
  }
  Parent& p = parents_[dev];
  if (!p.tags_known) {
    p.tags_known = true;
    names_.clear();
    host_->DeviceTags(p.devpath, &names_);
    p.tags_begin = static_cast<uint32_t>(parent_tags_.size());
    for (const std::string& n : names_) parent_tags_.push_back(arena_.Copy(n));
    p.tags_end = static_cast<uint32_t>(parent_tags_.size());
  }
  for (uint32_t i = p.tags_begin; i < p.tags_end; ++i) {
    if (Matches(t, parent_tags_[i])) return true;
  }
  return false;
}

bool ExecutorState::Matches(const Token& t, absl::string_view subject) const {
  bool match = false;
  switch (t.match) {
    case MatchKind::kEmpty:
      match = subject.empty();
      break;
    case MatchKind::kSubsystem:
      match = subject == "subsystem" || subject == "class" || subject == "bus";
      break;
    case MatchKind::kPlainWithEmpty:
      if (subject.empty()) {
        match = true;
        break;
      }
      [[fallthrough]];
    case MatchKind::kPlain:
      for (uint32_t i = 0; i < t.alternative_count && !match; ++i) {
        match = rules_->str(t.alternatives + i) == subject;
      }
      break;
    case MatchKind::kGlobWithEmpty:
      if (subject.empty()) {
        match = true;
        break;
      }
      [[fallthrough]];
    case MatchKind::kGlob:
      for (uint32_t i = 0; i < t.alternative_count && !match; ++i) {
        match = GlobMatch(rules_->str(t.alternatives + i), subject);
      }
      break;
  }
  return match;
}

bool ExecutorState::Expand(uint32_t format, size_t size, std::string* out, bool fold_whitespace) {
  const Format& f = rules_->format(format);
  const ExpandResult r = ExpandFormat(f, *this, size, fold_whitespace, out);
  if (!r.complete) Log(absl::StrCat("Invalid format string, ignoring: ", f.source()));
  return r.truncated;
}

void ExecutorState::Truncated(absl::string_view what, uint32_t format, absl::string_view key,
                              bool is_match) {
  Log(absl::StrCat("The ", what, " '", value_, "' is truncated while substituting into '",
                   rules_->format(format).source(), "', ",
                   is_match ? absl::StrCat("assuming the ", key, " key does not match.")
                            : absl::StrCat("refusing to apply the ", key, " key.")));
}

bool ExecutorState::SubstSubdir(std::string* path) {
  const size_t star = path->find("/*/");
  if (star == std::string::npos) return true;
  const std::string dir = path->substr(0, star + 1);
  const std::string tail = path->substr(star + 2);
  names_.clear();
  if (!host_->ListDirectory(dir, &names_)) return false;
  for (const std::string& entry : names_) {
    if (entry.empty() || entry[0] == '.') continue;
    // udevd 252 builds the candidate in a buffer only as long as the directory's part (its
    // attr_subst_subdir takes strnpcpy's remaining size for the length copied), and skips a
    // candidate that does not fit: only short "ENTRY/TAIL" can ever match.
    if (entry.size() + tail.size() >= dir.size()) continue;
    std::string candidate = absl::StrCat(dir, entry, tail);
    if (host_->FileMode(candidate).has_value()) {
      *path = std::move(candidate);
      return true;
    }
  }
  return false;
}

void ExecutorState::AddLink(absl::string_view link) {
  for (absl::string_view existing : links_) {
    if (SamePath(existing, link)) return;
  }
  links_.push_back(arena_.Copy(link));
}

void ExecutorState::Log(absl::string_view message) {
  outcome_->log.push_back(line_ != nullptr ? absl::StrCat(rules_->Where(*line_), " ", message)
                                           : std::string(message));
}

absl::Status ExecutorState::RunProgram(absl::string_view command, std::string* out) {
  const size_t words = SplitCommandWords(command, &argv_);
  if (words == 0 || argv_[0].empty()) {
    return absl::InvalidArgumentError(absl::StrCat("Invalid command '", command, "'"));
  }
  if (argv_[0][0] != '/') argv_[0].insert(0, kProgramDir.data(), kProgramDir.size());
  return host_->RunProgram(absl::MakeConstSpan(argv_.data(), words), ProgramEnvironment(false),
                           options_->program_timeout, kUdevLineSize - 1, out);
}

// KEY=VALUE lines of IMPORT{file} and IMPORT{program}, as udevd's get_property_from_string:
// whitespace around key and value dropped, empty keys and values refused, one level of '...'
// or "..." quotes removed, '#' comments.
void ExecutorState::ImportLines(absl::string_view text, bool file_lines) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = pos;
    while (eol < text.size() && text[eol] != '\n' && text[eol] != '\r' &&
           (!file_lines || text[eol] != '\0')) {
      ++eol;
    }
    absl::string_view line = text.substr(pos, eol - pos);
    pos = eol;
    if (pos < text.size()) {
      if (text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ++pos;
      ++pos;
    }
    while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key = Strip(line.substr(0, eq));
    absl::string_view value = Strip(line.substr(eq + 1));
    if (key.empty() || value.empty()) continue;
    if (value[0] == '"' || value[0] == '\'') {
      if (value.size() == 1 || value.back() != value[0]) continue;
      value = value.substr(1, value.size() - 2);
    }
    SetProperty(arena_.Copy(key), arena_.Copy(value));
  }
}

// %c{N}, %c{N+}: words of the last PROGRAM's result.
bool ExecutorState::SubstituteResult(absl::string_view attr, std::string* out) {
  if (!has_result_) return true;
  if (attr.empty()) {
    absl::StrAppend(out, program_result_);
    return true;
  }
  absl::string_view number = attr;
  const bool plus = absl::ConsumeSuffix(&number, "+");
  unsigned index = 0;
  if (number.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(number[0])) ||
      !absl::SimpleAtoi(number, &index)) {
    return false;
  }
  if (index == 0) {
    absl::StrAppend(out, program_result_);
    return true;
  }
  absl::string_view p = program_result_;
  const auto skip_space = [&p] {
    while (!p.empty() && (p[0] == ' ' || p[0] == '\t' || p[0] == '\n' || p[0] == '\r')) p.remove_prefix(1);
  };
  const auto skip_word = [&p] {
    while (!p.empty() && !(p[0] == ' ' || p[0] == '\t' || p[0] == '\n' || p[0] == '\r')) p.remove_prefix(1);
  };
  skip_space();
  unsigned i = 1;
  for (; i < index; ++i) {
    skip_word();
    skip_space();
    if (p.empty()) break;
  }
  if (i != index) return true;  // "requested part of result string not found"
  if (plus) {
    absl::StrAppend(out, p);
  } else {
    absl::string_view word = p;
    skip_word();
    absl::StrAppend(out, word.substr(0, word.size() - p.size()));
  }
  return true;
}

// $attr{NAME}: the device's attribute, else the one of the parent the rule's parent keys
// matched, cleaned as udevd cleans values read from devices.
bool ExecutorState::SubstituteAttribute(absl::string_view attr, std::string* out) {
  if (attr.empty()) return false;
  std::optional<absl::string_view> value;
  if (ResolveSubsys(attr, true, &subst_buf_)) {
    value = subst_buf_;
  } else if (value = Attribute(kEventDevice, attr); !value.has_value() && dev_parent_ >= 0) {
    value = Attribute(dev_parent_, attr);
  }
  if (!value.has_value()) return true;
  absl::string_view v = value->substr(0, kUdevNameSize - 1);
  v = StripTrailingSpace(v);
  const size_t start = out->size();
  out->append(v.data(), v.size());
  ReplaceChars(out, kAllowedInputChars, start);
  return true;
}

// $parent: the node name of the nearest parent.
bool ExecutorState::SubstituteParent(std::string* out) {
  if (!EnsureParent(0)) return true;
  if (!host_->ReadAttribute(parents_[0].devpath, "uevent", &host_buf_)) return true;
  for (absl::string_view l : absl::StrSplit(host_buf_, '\n')) {
    if (absl::ConsumePrefix(&l, "DEVNAME=")) {
      absl::ConsumePrefix(&l, kDevPrefix);
      absl::StrAppend(out, l);
      break;
    }
  }
  return true;
}

bool ExecutorState::Substitute(Subst subst, absl::string_view attr, std::string* out) {
  switch (subst) {
    case Subst::kDevpath:
      absl::StrAppend(out, devpath_);
      return true;
    case Subst::kKernel:
      absl::StrAppend(out, sysname_);
      return true;
    case Subst::kNumber:
      absl::StrAppend(out, sysnum_);
      return true;
    case Subst::kId:
      if (dev_parent_ != kNoDevice) absl::StrAppend(out, Sysname(dev_parent_));
      return true;
    case Subst::kDriver:
      if (dev_parent_ != kNoDevice) {
        if (std::optional<absl::string_view> d = DriverOf(dev_parent_); d.has_value()) {
          absl::StrAppend(out, *d);
        }
      }
      return true;
    case Subst::kMajor:
      absl::StrAppend(out, has_devnum_ ? major_ : 0);
      return true;
    case Subst::kMinor:
      absl::StrAppend(out, has_devnum_ ? minor_ : 0);
      return true;
    case Subst::kResult:
      return SubstituteResult(attr, out);
    case Subst::kAttr:
      return SubstituteAttribute(attr, out);
    case Subst::kParent:
      return SubstituteParent(out);
    case Subst::kDevnode:
      absl::StrAppend(out, devname_);
      return true;
    case Subst::kName:
      if (has_name_) {
        absl::StrAppend(out, name_);
      } else if (!devname_.empty()) {
        absl::string_view n = devname_;
        absl::ConsumePrefix(&n, kDevPrefix);
        absl::StrAppend(out, n);
      } else {
        absl::StrAppend(out, sysname_);
      }
      return true;
    case Subst::kLinks: {
      bool first = true;
      for (absl::string_view l : links_) {
        absl::ConsumePrefix(&l, kDevPrefix);
        if (!first) out->push_back(' ');
        absl::StrAppend(out, l);
        first = false;
      }
      return true;
    }
    case Subst::kRoot:
      absl::StrAppend(out, "/dev");
      return true;
    case Subst::kSys:
      absl::StrAppend(out, "/sys");
      return true;
    case Subst::kEnv: {
      if (attr.empty()) return false;
      if (std::optional<absl::string_view> v = GetProperty(attr); v.has_value()) absl::StrAppend(out, *v);
      return true;
    }
  }
  return false;
}

}  // namespace hotring::hotplug::udevrules

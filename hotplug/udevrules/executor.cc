#include "hotplug/udevrules/executor.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {
namespace {

constexpr absl::string_view kDevPrefix = "/dev/";
constexpr absl::string_view kProgramDir = "/lib/udev/";  // udevd's UDEVLIBEXECDIR on Debian 12
// The most IMPORT{file} reads of a file (systemd reads lines of up to LONG_LINE_MAX, 1 MiB).
constexpr size_t kMaxImportFile = 1u << 20;

bool IsSpace(char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }

absl::string_view StripTrailingSpace(absl::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

absl::string_view Strip(absl::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return StripTrailingSpace(s);
}

// Strings of one event: a bump allocator whose blocks are kept from event to event.
class Arena {
 public:
  absl::string_view Copy(absl::string_view s) {
    if (s.empty()) return absl::string_view();
    char* p = Allocate(s.size());
    std::memcpy(p, s.data(), s.size());
    return absl::string_view(p, s.size());
  }
  void Reset() {
    block_ = 0;
    used_ = 0;
    big_.clear();
  }

 private:
  static constexpr size_t kBlock = 64 * 1024;
  char* Allocate(size_t n) {
    if (n > kBlock / 4) {
      big_.push_back(std::make_unique<char[]>(n));
      return big_.back().get();
    }
    if (block_ < blocks_.size() && used_ + n > kBlock) {
      ++block_;
      used_ = 0;
    }
    if (block_ >= blocks_.size()) {
      blocks_.push_back(std::make_unique<char[]>(kBlock));
      used_ = 0;
    }
    char* p = blocks_[block_].get() + used_;
    used_ += n;
    return p;
  }
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_ = 0;
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> big_;
};

// (tag, key) -> value, emptied in O(1) by a generation count, so that a steady stream of events
// allocates nothing. Keys must stay valid until the next Reset.
class ViewIndex {
 public:
  void Reset() {
    if (++generation_ == 0) {
      for (Slot& s : slots_) s.generation = 0;
      generation_ = 1;
    }
    size_ = 0;
  }
  const uint32_t* Find(int32_t tag, absl::string_view key) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(tag, key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.generation != generation_) return nullptr;
      if (s.tag == tag && s.key == key) return &s.value;
    }
  }
  // Inserts or replaces.
  void Put(int32_t tag, absl::string_view key, uint32_t value) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(tag, key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.generation != generation_) {
        s = Slot{generation_, tag, key, value};
        ++size_;
        return;
      }
      if (s.tag == tag && s.key == key) {
        s.value = value;
        return;
      }
    }
  }

 private:
  struct Slot {
    uint32_t generation = 0;
    int32_t tag = 0;
    absl::string_view key;
    uint32_t value = 0;
  };
  static size_t Hash(int32_t tag, absl::string_view key) {
    return absl::HashOf(tag, key);
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    const uint32_t live = generation_;
    generation_ = 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.generation == live) Put(s.tag, s.key, s.value);
    }
  }
  std::vector<Slot> slots_;
  uint32_t generation_ = 1;
  size_t size_ = 0;
};

enum class Escape : uint8_t { kUnset, kNone, kReplace };

// A token's result: no match, match, or "udevd gives up on this event".
enum class Result : uint8_t { kNoMatch, kMatch, kAbort };

Result FromBool(bool b) { return b ? Result::kMatch : Result::kNoMatch; }

// The device reference of the event device itself; parents are 0, 1, ... (nearest first);
// kNoDevice: none (udevd's NULL dev_parent).
constexpr int kEventDevice = -1;
constexpr int kNoDevice = -2;

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

void Outcome::Clear() {
  // Vectors keep their elements' storage for the next Run (see BuildOutcome); only scalars and
  // the log are reset here.
  name.reset();
  name_final = false;
  link_priority = 0;
  links_final = false;
  uid.reset();
  gid.reset();
  mode.reset();
  uid_final = gid_final = mode_final = false;
  run_final = false;
  db_persist = false;
  watch.reset();
  log_level.reset();
  log.clear();
  status = absl::OkStatus();
  lines_applied = 0;
  lines_matched = 0;
}

std::optional<absl::string_view> Outcome::Property(absl::string_view key) const {
  for (const auto& [k, v] : properties) {
    if (k == key) return v;
  }
  return std::nullopt;
}

NodePermissions PermissionsFor(const Outcome& outcome, absl::Span<const PropertyView> event) {
  NodePermissions p;
  std::optional<uint32_t> uid = outcome.uid;
  std::optional<uint32_t> gid = outcome.gid;
  std::optional<uint32_t> mode = outcome.mode;
  for (const auto& [key, value] : event) {
    uint32_t n = 0;
    if (key == "DEVUID" && !uid.has_value() && absl::SimpleAtoi(value, &n)) uid = n;
    if (key == "DEVGID" && !gid.has_value() && absl::SimpleAtoi(value, &n)) gid = n;
    if (key == "DEVMODE" && !mode.has_value() && ParseOctalMode(value, &n)) mode = n;
  }
  p.uid = uid.value_or(0);
  p.gid = gid.value_or(0);
  p.mode = mode.value_or(p.gid > 0 ? 0660 : 0600);
  return p;
}

// One event's state and the buffers kept from event to event.
class ExecutorState final : public FormatSource {
 public:
  void Run(const CompiledRules& rules, const EventInput& event, RuleHost& host,
           const ExecuteOptions& options, Outcome* outcome);

  bool Substitute(Subst subst, absl::string_view attribute, std::string* out) override;

 private:
  struct Property {
    absl::string_view key;
    absl::string_view value;
    bool deleted = false;
  };
  struct Parent {
    absl::string_view devpath;
    absl::string_view sysname;
    bool subsystem_known = false;
    bool has_subsystem = false;
    absl::string_view subsystem;
    bool driver_known = false;
    bool has_driver = false;
    absl::string_view driver;
    bool tags_known = false;
    uint32_t tags_begin = 0;
    uint32_t tags_end = 0;
  };
  struct Tag {
    absl::string_view name;
    bool current = false;
  };
  struct RunItem {
    bool builtin = false;
    int builtin_index = -1;
    absl::string_view command;
  };

  // --- setup and results ---
  void Reset();
  void LoadEvent(const EventInput& event);
  void BuildOutcome(const EventInput& event);

  // --- the line loop ---
  Result ApplyLine(const Line& line);
  Result ApplyParentTokens(uint32_t first, uint32_t end);
  Result ApplyToken(const Token& t, int dev);

  // --- properties ---
  std::optional<absl::string_view> GetProperty(absl::string_view key);
  void SetProperty(absl::string_view key, absl::string_view value);
  void DeleteProperty(absl::string_view key);
  // The properties a program sees (no keys starting with '.'), in scratch storage.
  absl::Span<const PropertyView> ProgramEnvironment(bool include_hidden);

  // --- devices ---
  bool EnsureParent(int index);
  absl::string_view Sysname(int dev);
  absl::string_view Devpath(int dev);
  std::optional<absl::string_view> SubsystemOf(int dev);
  std::optional<absl::string_view> DriverOf(int dev);
  std::optional<absl::string_view> Attribute(int dev, absl::string_view name);
  // "[subsystem/sysname]attribute": read_value: the attribute's value (empty when the device
  // has none); else its path under /sys. False when the device is not found or the form bad.
  bool ResolveSubsys(absl::string_view text, bool read_value, std::string* out);
  bool HasTag(int dev, const Token& t);

  // --- helpers ---
  // Whether the subject matches the token's value (the operator not applied).
  bool Matches(const Token& t, absl::string_view subject) const;
  // token_match_string: the operator applied.
  bool MatchString(const Token& t, absl::string_view subject) const {
    return (t.op == Op::kMatch) == Matches(t, subject);
  }
  // Expands a token's format into *out (udevd's buffer `size`); true when it was cut short to
  // fit, which udevd 252 reports and treats as "no match" or "refuse the assignment" for most
  // keys.
  bool Expand(uint32_t format, size_t size, std::string* out, bool fold_whitespace = false);
  // udevd's message for a value cut short.
  void Truncated(absl::string_view what, uint32_t format, absl::string_view key, bool is_match);
  // udevd's attr_subst_subdir: the first "dir/*/tail" that exists. False when none.
  bool SubstSubdir(std::string* path);
  bool AddTagsFrom(absl::Span<const std::string> tags, bool current);
  void AddLink(absl::string_view link);
  void Log(absl::string_view message);
  // udevd's debug lines; build them only when asked for (they cost allocations).
  bool Debugging() const { return options_->debug; }
  absl::Status RunProgram(absl::string_view command, std::string* out);
  void ImportLines(absl::string_view text, bool file_lines);

  // The rules and the event being run.
  const CompiledRules* rules_ = nullptr;
  RuleHost* host_ = nullptr;
  const ExecuteOptions* options_ = nullptr;
  Outcome* outcome_ = nullptr;
  const Line* line_ = nullptr;

  Arena arena_;
  // The device.
  absl::string_view action_;
  absl::string_view devpath_;
  absl::string_view sysname_;
  absl::string_view sysnum_;
  absl::string_view subsystem_;
  bool has_subsystem_ = false;
  bool driver_known_ = false;
  bool has_driver_ = false;
  absl::string_view driver_;
  absl::string_view devname_;  // "/dev/..." or empty
  bool has_devnum_ = false;
  uint32_t major_ = 0;
  uint32_t minor_ = 0;
  bool has_ifindex_ = false;
  bool remove_ = false;

  std::vector<Property> properties_;
  ViewIndex property_index_;  // tag 0: key -> properties_ index
  std::vector<Parent> parents_;
  bool parents_complete_ = false;
  std::vector<absl::string_view> parent_tags_;
  ViewIndex attribute_index_;  // tag: device, key: attribute name -> attribute_values_ index
  std::vector<std::optional<absl::string_view>> attribute_values_;
  std::vector<Tag> tags_;
  std::vector<absl::string_view> links_;
  std::vector<RunItem> run_;
  std::vector<std::pair<absl::string_view, absl::string_view>> seclabels_;
  bool have_db_ = false;
  DatabaseEntry db_;

  // udevd's UdevEvent fields.
  int dev_parent_ = kNoDevice;
  bool has_name_ = false;
  absl::string_view name_;
  bool has_result_ = false;
  absl::string_view program_result_;
  Escape esc_ = Escape::kUnset;
  bool name_final_ = false, devlink_final_ = false, owner_final_ = false, group_final_ = false,
       mode_final_ = false, run_final_ = false, watch_final_ = false;
  std::optional<uint32_t> uid_, gid_, mode_;
  std::optional<bool> watch_;
  std::optional<int> log_level_;
  int link_priority_ = 0;
  bool db_persist_ = false;
  uint64_t builtin_ran_ = 0;
  uint64_t builtin_failed_ = 0;

  // Scratch buffers, kept.
  std::string value_;
  std::string name_buf_;
  std::string host_buf_;
  std::string path_buf_;
  std::string dynamic_buf_;
  std::string subst_buf_;
  std::string found_buf_;
  std::vector<PropertyView> env_;
  std::vector<std::string> names_;
  std::vector<std::string> argv_;
  OwnedProperties imported_;
};

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
  esc_ = Escape::kUnset;
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
      int ifindex = 0;
      has_ifindex_ = absl::SimpleAtoi(value, &ifindex) && ifindex > 0;
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
    // Tags of earlier events stay (TAGS), not current.
    AddTagsFrom(db_.tags, false);
    if (action_ == "move") {
      for (const auto& [k, v] : db_.properties) {
        if (!GetProperty(k).has_value()) SetProperty(arena_.Copy(k), arena_.Copy(v));
      }
    }
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
    case Subst::kResult: {
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
    case Subst::kAttr: {
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
    case Subst::kParent: {
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

Result ExecutorState::ApplyToken(const Token& t, int dev) {
  switch (t.type) {
    case TokenType::kMatchAction:
      return FromBool(MatchString(t, action_));
    case TokenType::kMatchDevpath:
      return FromBool(MatchString(t, devpath_));
    case TokenType::kMatchKernel:
    case TokenType::kMatchParentsKernel:
      return FromBool(MatchString(t, Sysname(dev)));
    case TokenType::kMatchDevlink: {
      // "!=": true only when no link matches.
      for (absl::string_view l : links_) {
        absl::ConsumePrefix(&l, kDevPrefix);
        if (Matches(t, l)) return FromBool(t.op == Op::kMatch);
      }
      return FromBool(t.op == Op::kNoMatch);
    }
    case TokenType::kMatchName:
      return FromBool(MatchString(t, has_name_ ? name_ : absl::string_view()));
    case TokenType::kMatchEnv: {
      const absl::string_view key = rules_->str(t.attr);
      std::optional<absl::string_view> v = GetProperty(key);
      if (!v.has_value()) {
        for (const auto& [k, value] : options_->global_properties) {
          if (k == key) v = value;
        }
      }
      return FromBool(MatchString(t, v.value_or(absl::string_view())));
    }
    case TokenType::kMatchConst:
      return FromBool(MatchString(t, host_->Constant(rules_->str(t.attr))));
    case TokenType::kMatchTag:
    case TokenType::kMatchParentsTag:
      return FromBool(HasTag(dev, t) ? t.op == Op::kMatch : t.op == Op::kNoMatch);
    case TokenType::kMatchSubsystem:
    case TokenType::kMatchParentsSubsystem:
      return FromBool(MatchString(t, SubsystemOf(dev).value_or(absl::string_view())));
    case TokenType::kMatchDriver:
    case TokenType::kMatchParentsDriver:
      return FromBool(MatchString(t, DriverOf(dev).value_or(absl::string_view())));
    case TokenType::kMatchAttr:
    case TokenType::kMatchParentsAttr: {
      absl::string_view value;
      switch (t.attr_kind) {
        case AttrKind::kSubsys:
          if (!ResolveSubsys(rules_->format(t.attr).source(), true, &value_)) return Result::kNoMatch;
          value = value_;
          break;
        case AttrKind::kFormat:
          if (Expand(t.attr, kUdevNameSize, &name_buf_)) return Result::kNoMatch;
          [[fallthrough]];
        default: {
          const absl::string_view name =
              t.attr_kind == AttrKind::kFormat ? absl::string_view(name_buf_) : rules_->format(t.attr).source();
          std::optional<absl::string_view> v = Attribute(dev, name);
          // A missing attribute matches neither "==" nor "!=" (udevd returns false).
          if (!v.has_value()) return Result::kNoMatch;
          value = *v;
        }
      }
      // Trimming goes through udevd's fixed buffer, which also cuts the value.
      if (t.trim_subject) value = StripTrailingSpace(value.substr(0, kUdevNameSize - 1));
      return FromBool(MatchString(t, value));
    }
    case TokenType::kMatchSysctl: {
      if (Expand(t.attr, kUdevPathSize, &name_buf_)) return Result::kNoMatch;
      std::string name = name_buf_;
      // sysctl_normalize: "a.b.c" is "a/b/c" unless the first separator is a '/'.
      const size_t sep = name.find_first_of("/.");
      if (sep != std::string::npos && name[sep] == '.') {
        for (char& c : name) c = c == '.' ? '/' : c == '/' ? '.' : c;
      }
      absl::string_view value;
      if (host_->ReadSysctl(name, &host_buf_)) value = Strip(host_buf_);
      return FromBool(MatchString(t, value));
    }
    case TokenType::kMatchTest: {
      if (Expand(t.value, kUdevPathSize, &path_buf_)) {
        value_ = path_buf_;
        Truncated("file name", t.value, "TEST", true);
        return Result::kNoMatch;
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
      if (!SubstSubdir(&path_buf_)) return FromBool(t.op == Op::kNoMatch);
      const std::optional<uint32_t> mode = host_->FileMode(path_buf_);
      if (!mode.has_value()) return FromBool(t.op == Op::kNoMatch);
      if (t.number < 0) return FromBool(t.op == Op::kMatch);
      const bool match = (*mode & static_cast<uint32_t>(t.number)) > 0;
      return FromBool((t.op == Op::kMatch) == match);
    }
    case TokenType::kMatchProgram: {
      has_result_ = false;
      Expand(t.value, kUdevPathSize, &value_);
      if (Debugging()) Log(absl::StrCat("Running PROGRAM '", value_, "'"));
      const absl::Status status = RunProgram(value_, &host_buf_);
      if (!status.ok()) {
        if (Debugging()) Log(absl::StrCat("Command \"", value_, "\" failed: ", status.message()));
        return FromBool(t.op == Op::kNoMatch);
      }
      while (!host_buf_.empty() && host_buf_.back() == '\n') host_buf_.pop_back();
      ReplaceChars(&host_buf_, kAllowedInputChars);
      program_result_ = arena_.Copy(host_buf_);
      has_result_ = true;
      return FromBool(t.op == Op::kMatch);
    }
    case TokenType::kMatchImportFile: {
      if (Expand(t.value, kUdevPathSize, &value_)) {
        Truncated("file name to be imported", t.value, "IMPORT", true);
        return Result::kNoMatch;
      }
      if (Debugging()) Log(absl::StrCat("Importing properties from '", value_, "'"));
      const absl::Status status = host_->ReadFile(value_, kMaxImportFile, &host_buf_);
      if (absl::IsNotFound(status)) return FromBool(t.op == Op::kNoMatch);
      if (!status.ok()) {
        Log(absl::StrCat("Failed to open '", value_, "': ", status.message()));
        outcome_->status = status;
        return Result::kAbort;
      }
      ImportLines(host_buf_, true);
      return FromBool(t.op == Op::kMatch);
    }
    case TokenType::kMatchImportProgram: {
      Expand(t.value, kUdevPathSize, &value_);
      if (Debugging()) Log(absl::StrCat("Importing properties from results of '", value_, "'"));
      const absl::Status status = RunProgram(value_, &host_buf_);
      if (!status.ok()) {
        if (Debugging()) Log(absl::StrCat("Command \"", value_, "\" failed, ignoring: ", status.message()));
        return FromBool(t.op == Op::kNoMatch);
      }
      ImportLines(host_buf_, false);
      return FromBool(t.op == Op::kMatch);
    }
    case TokenType::kMatchImportBuiltin: {
      const int index = static_cast<int>(t.number);
      const BuiltinInfo& builtin = rules_->builtins()[static_cast<size_t>(index)];
      const uint64_t mask = uint64_t{1} << (index & 63);
      if (builtin.run_once) {
        if ((builtin_ran_ & mask) != 0) {
          if (Debugging()) Log(absl::StrCat("Skipping builtin '", builtin.name, "' in IMPORT key"));
          return FromBool(t.op == ((builtin_failed_ & mask) != 0 ? Op::kNoMatch : Op::kMatch));
        }
        builtin_ran_ |= mask;
      }
      if (Expand(t.value, kUdevPathSize, &value_)) {
        Truncated("builtin command", t.value, "IMPORT", true);
        return Result::kNoMatch;
      }
      if (Debugging()) Log(absl::StrCat("Importing properties from results of builtin command '", value_, "'"));
      const size_t words = SplitCommandWords(value_, &argv_);
      imported_.clear();
      const absl::Status status = host_->RunBuiltin(builtin.name, value_, absl::MakeConstSpan(argv_.data(), words),
                                                    devpath_, ProgramEnvironment(true), &imported_);
      if (!status.ok()) {
        if (Debugging()) Log(absl::StrCat("Failed to run builtin '", value_, "': ", status.message()));
        builtin_failed_ |= mask;
        return FromBool(t.op == Op::kNoMatch);
      }
      for (const auto& [k, v] : imported_) SetProperty(arena_.Copy(k), arena_.Copy(v));
      return FromBool(t.op == Op::kMatch);
    }
    case TokenType::kMatchImportDb: {
      if (!have_db_) return FromBool(t.op == Op::kNoMatch);
      const absl::string_view key = rules_->format(t.value).source();
      for (const auto& [k, v] : db_.properties) {
        if (k == key) {
          SetProperty(arena_.Copy(k), arena_.Copy(v));
          return FromBool(t.op == Op::kMatch);
        }
      }
      return FromBool(t.op == Op::kNoMatch);
    }
    case TokenType::kMatchImportCmdline: {
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
      if (!found) return FromBool(t.op == Op::kNoMatch);
      SetProperty(key, arena_.Copy(value.value_or("1")));
      return FromBool(t.op == Op::kMatch);
    }
    case TokenType::kMatchImportParent: {
      if (Expand(t.value, kUdevPathSize, &value_)) {
        Truncated("property name", t.value, "IMPORT", true);
        return Result::kNoMatch;
      }
      if (!EnsureParent(0)) return FromBool(t.op == Op::kNoMatch);
      if (!host_->DeviceProperties(parents_[0].devpath, &imported_)) return FromBool(t.op == Op::kNoMatch);
      for (const auto& [k, v] : imported_) {
        if (GlobMatch(value_, k)) SetProperty(arena_.Copy(k), arena_.Copy(v));
      }
      return FromBool(t.op == Op::kMatch);
    }
    case TokenType::kMatchResult:
      return FromBool(MatchString(t, has_result_ ? program_result_ : absl::string_view()));

    case TokenType::kAssignStringEscapeNone:
      esc_ = Escape::kNone;
      return Result::kMatch;
    case TokenType::kAssignStringEscapeReplace:
      esc_ = Escape::kReplace;
      return Result::kMatch;
    case TokenType::kAssignDbPersist:
      db_persist_ = true;
      return Result::kMatch;
    case TokenType::kAssignWatch:
      if (watch_final_) return Result::kMatch;
      if (t.op == Op::kAssignFinal) watch_final_ = true;
      watch_ = t.number != 0;
      return Result::kMatch;
    case TokenType::kAssignLinkPriority:
      link_priority_ = static_cast<int>(t.number);
      return Result::kMatch;
    case TokenType::kAssignLogLevel:
      log_level_ = static_cast<int>(t.number);
      return Result::kMatch;
    case TokenType::kAssignOwner:
    case TokenType::kAssignGroup: {
      const bool owner = t.type == TokenType::kAssignOwner;
      bool& final = owner ? owner_final_ : group_final_;
      if (final) return Result::kMatch;
      if (t.op == Op::kAssignFinal) final = true;
      if (Expand(t.value, kUdevNameSize, &value_)) {
        Truncated(owner ? "user name" : "group name", t.value, owner ? "OWNER" : "GROUP", false);
        return Result::kMatch;
      }
      const std::optional<uint32_t> id = owner ? host_->UserId(value_) : host_->GroupId(value_);
      if (!id.has_value()) {
        Log(absl::StrCat("Unknown ", owner ? "user" : "group", " '", value_, "', ignoring"));
      } else {
        (owner ? uid_ : gid_) = *id;
        if (Debugging()) Log(absl::StrCat(owner ? "OWNER " : "GROUP ", value_, "(", *id, ")"));
      }
      return Result::kMatch;
    }
    case TokenType::kAssignMode: {
      if (mode_final_) return Result::kMatch;
      if (t.op == Op::kAssignFinal) mode_final_ = true;
      if (Expand(t.value, kUdevNameSize, &value_)) {
        Truncated("mode", t.value, "MODE", false);
        return Result::kMatch;
      }
      uint32_t mode = 0;
      if (!ParseOctalMode(value_, &mode)) {
        Log(absl::StrCat("Failed to parse mode '", value_, "', ignoring: Invalid argument"));
      } else {
        mode_ = mode;
        if (Debugging()) Log(absl::StrFormat("MODE %#o", mode));
      }
      return Result::kMatch;
    }
    case TokenType::kAssignOwnerId:
    case TokenType::kAssignGroupId:
    case TokenType::kAssignModeId: {
      bool& final = t.type == TokenType::kAssignOwnerId   ? owner_final_
                    : t.type == TokenType::kAssignGroupId ? group_final_
                                                          : mode_final_;
      std::optional<uint32_t>& target = t.type == TokenType::kAssignOwnerId   ? uid_
                                        : t.type == TokenType::kAssignGroupId ? gid_
                                                                              : mode_;
      if (final) return Result::kMatch;
      if (t.op == Op::kAssignFinal) final = true;
      if (t.number < 0) {
        target.reset();  // a name that did not resolve when the rules loaded
      } else {
        target = static_cast<uint32_t>(t.number);
        if (Debugging()) Log(t.type == TokenType::kAssignModeId ? absl::StrFormat("MODE %#o", t.number)
              : absl::StrCat(t.type == TokenType::kAssignOwnerId ? "OWNER " : "GROUP ", t.number));
      }
      return Result::kMatch;
    }
    case TokenType::kAssignSeclabel: {
      if (Expand(t.value, kUdevLineSize, &value_)) {
        Truncated("security label", t.value, "SECLABEL", false);
        return Result::kMatch;
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
          return Result::kAbort;
        }
      }
      seclabels_.emplace_back(module, arena_.Copy(label));
      return Result::kMatch;
    }
    case TokenType::kAssignEnv: {
      const absl::string_view name = rules_->str(t.attr);
      const Format& f = rules_->format(t.value);
      if (f.source().empty()) {
        if (t.op == Op::kAdd) return Result::kMatch;
        DeleteProperty(name);
        return Result::kMatch;
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
        return Result::kMatch;
      }
      if (esc_ == Escape::kReplace) ReplaceChars(&value_, "");
      prefix.append(value_);
      SetProperty(name, arena_.Copy(prefix));
      return Result::kMatch;
    }
    case TokenType::kAssignTag: {
      if (Expand(t.value, kUdevPathSize, &value_)) {
        Truncated("tag name", t.value, "TAG", false);
        return Result::kMatch;
      }
      if (t.op == Op::kAssign) tags_.clear();
      for (char c : value_) {
        if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
          Log(absl::StrCat("Invalid tag name '", value_, "', ignoring"));
          return Result::kMatch;
        }
      }
      if (value_.empty()) return Result::kMatch;  // udevd adds nothing and goes on
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
      return Result::kMatch;
    }
    case TokenType::kAssignName: {
      if (name_final_) return Result::kMatch;
      if (t.op == Op::kAssignFinal) name_final_ = true;
      if (!has_ifindex_) {
        Log(absl::StrCat("Only network interfaces can be renamed, ignoring NAME=\"",
                         rules_->format(t.value).source(), "\"."));
        return Result::kMatch;
      }
      if (Expand(t.value, kUdevPathSize, &value_)) {
        Truncated("network interface name", t.value, "NAME", false);
        return Result::kMatch;
      }
      if (esc_ != Escape::kNone) ReplaceIfnameChars(&value_);
      name_ = arena_.Copy(value_);
      has_name_ = true;
      if (Debugging()) Log(absl::StrCat("NAME '", value_, "'"));
      return Result::kMatch;
    }
    case TokenType::kAssignDevlink: {
      if (devlink_final_) return Result::kMatch;
      if (!has_devnum_) return Result::kMatch;
      if (t.op == Op::kAssignFinal) devlink_final_ = true;
      if (t.op == Op::kAssign || t.op == Op::kAssignFinal) links_.clear();
      if (Expand(t.value, kUdevPathSize, &value_, esc_ != Escape::kNone)) {
        Truncated("symbolic link path", t.value, "SYMLINK", false);
        return Result::kMatch;
      }
      if (esc_ == Escape::kUnset) {
        ReplaceChars(&value_, "/ ");
      } else if (esc_ == Escape::kReplace) {
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
      return Result::kMatch;
    }
    case TokenType::kAssignAttr: {
      const absl::string_view key = rules_->format(t.attr).source();
      std::string path;
      if (!ResolveSubsys(key, false, &path)) path = absl::StrCat("/sys", devpath_, "/", key);
      if (!SubstSubdir(&path)) {
        Log(absl::StrCat("Could not find file matches '", path, "', ignoring: No such file or directory"));
        return Result::kMatch;
      }
      if (Expand(t.value, kUdevNameSize, &value_)) {
        Truncated("attribute value", t.value, "ATTR", false);
        return Result::kMatch;
      }
      if (Debugging()) Log(absl::StrCat("ATTR '", path, "' writing '", value_, "'"));
      if (const absl::Status s = host_->WriteAttribute(path, value_); !s.ok()) {
        Log(absl::StrCat("Failed to write ATTR{", path, "}, ignoring: ", s.message()));
      }
      return Result::kMatch;
    }
    case TokenType::kAssignSysctl: {
      if (Expand(t.attr, kUdevPathSize, &name_buf_)) {
        value_ = name_buf_;
        Truncated("sysctl entry name", t.attr, "SYSCTL", false);
        return Result::kMatch;
      }
      if (Expand(t.value, kUdevNameSize, &value_)) {
        Truncated("sysctl value", t.value, "SYSCTL", false);
        return Result::kMatch;
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
      return Result::kMatch;
    }
    case TokenType::kAssignRunBuiltin:
    case TokenType::kAssignRunProgram: {
      if (run_final_) return Result::kMatch;
      if (t.op == Op::kAssignFinal) run_final_ = true;
      if (t.op == Op::kAssign || t.op == Op::kAssignFinal) run_.clear();
      Expand(t.value, kUdevPathSize, &value_);
      const bool builtin = t.type == TokenType::kAssignRunBuiltin;
      run_.push_back(RunItem{builtin, builtin ? static_cast<int>(t.number) : -1, arena_.Copy(value_)});
      if (Debugging()) Log(absl::StrCat("RUN '", rules_->format(t.value).source(), "'"));
      return Result::kMatch;
    }
    case TokenType::kAssignStaticNode:
      return Result::kMatch;
  }
  return Result::kMatch;
}

bool IsParentToken(TokenType type) {
  return type >= TokenType::kMatchParentsKernel && type <= TokenType::kMatchParentsTag;
}

Result ExecutorState::ApplyParentTokens(uint32_t first, uint32_t end) {
  // Every parent key must match one and the same device: the event device first, then each
  // ancestor in turn.
  dev_parent_ = kEventDevice;
  for (;;) {
    bool all = true;
    for (uint32_t i = first; i < end; ++i) {
      const Result r = ApplyToken(rules_->token(i), dev_parent_);
      if (r == Result::kAbort) return r;
      if (r == Result::kNoMatch) {
        all = false;
        break;
      }
    }
    if (all) return Result::kMatch;
    if (!EnsureParent(dev_parent_ + 1)) {
      dev_parent_ = kNoDevice;
      return Result::kNoMatch;
    }
    ++dev_parent_;
  }
}

Result ExecutorState::ApplyLine(const Line& line) {
  for (uint32_t i = line.first_token; i < line.end_token;) {
    const Token& t = rules_->token(i);
    if (IsParentToken(t.type)) {
      uint32_t end = i;
      while (end < line.end_token && IsParentToken(rules_->token(end).type)) ++end;
      const Result r = ApplyParentTokens(i, end);
      if (r != Result::kMatch) return r;
      i = end;
      continue;
    }
    const Result r = ApplyToken(t, kEventDevice);
    if (r != Result::kMatch) return r;
    ++i;
  }
  return Result::kMatch;
}

namespace {

// The next element of a vector being refilled: an existing one (its strings keep their
// storage) or a new one. `used` counts what is filled; Trim drops the rest afterwards.
template <typename T>
T& Next(std::vector<T>& v, size_t& used) {
  if (used == v.size()) v.emplace_back();
  return v[used++];
}

template <typename T>
void Trim(std::vector<T>& v, size_t used) {
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(used), v.end());
}

void Assign(std::string& to, absl::string_view from) { to.assign(from.data(), from.size()); }

}  // namespace

void ExecutorState::BuildOutcome(const EventInput& event) {
  Outcome& o = *outcome_;
  size_t n = 0;
  for (const Property& p : properties_) {
    if (p.deleted || p.key == "DEVLINKS" || p.key == "TAGS" || p.key == "CURRENT_TAGS") continue;
    auto& kv = Next(o.properties, n);
    Assign(kv.first, p.key);
    Assign(kv.second, p.value);
  }
  for (absl::string_view key : {"DEVLINKS", "TAGS", "CURRENT_TAGS"}) {
    if (std::optional<absl::string_view> v = GetProperty(key); v.has_value()) {
      auto& kv = Next(o.properties, n);
      Assign(kv.first, key);
      Assign(kv.second, *v);
    }
  }
  Trim(o.properties, n);
  n = 0;
  for (const auto& [key, value] : event.properties) {
    const uint32_t* i = property_index_.Find(0, key);
    if (i != nullptr && properties_[*i].deleted) Assign(Next(o.removed_properties, n), key);
  }
  Trim(o.removed_properties, n);
  if (has_name_) {
    if (!o.name.has_value()) o.name.emplace();
    Assign(*o.name, name_);
  }
  o.name_final = name_final_;
  n = 0;
  size_t refused = 0;
  for (absl::string_view link : links_) {
    absl::string_view rel = link;
    absl::ConsumePrefix(&rel, kDevPrefix);
    // Normalized: no empty or "." components; ".." would leave /dev (udevd fails such a link).
    std::string& normal = Next(o.links, n);
    normal.clear();
    bool escapes = false;
    for (absl::string_view part : absl::StrSplit(rel, '/')) {
      if (part.empty() || part == ".") continue;
      if (part == "..") escapes = true;
      if (!normal.empty()) normal.push_back('/');
      normal.append(part.data(), part.size());
    }
    if (escapes || normal.empty()) {
      --n;
      Assign(Next(o.refused_links, refused), rel);
      o.log.push_back(absl::StrCat("Refusing link '", link, "': it would leave /dev"));
    }
  }
  Trim(o.links, n);
  Trim(o.refused_links, refused);
  o.link_priority = link_priority_;
  o.links_final = devlink_final_;
  o.uid = uid_;
  o.gid = gid_;
  o.mode = mode_;
  o.uid_final = owner_final_;
  o.gid_final = group_final_;
  o.mode_final = mode_final_;
  n = 0;
  size_t current = 0;
  for (const Tag& t : tags_) {
    Assign(Next(o.tags, n), t.name);
    if (t.current) Assign(Next(o.current_tags, current), t.name);
  }
  Trim(o.tags, n);
  Trim(o.current_tags, current);
  n = 0;
  for (const RunItem& r : run_) {
    RunEntry& e = Next(o.run, n);
    e.builtin = r.builtin;
    Assign(e.command, r.command);
    SplitCommandInto(r.command, &e.argv);
    if (r.builtin) {
      Assign(e.builtin_name, rules_->builtins()[static_cast<size_t>(r.builtin_index)].name);
    } else {
      e.builtin_name.clear();
      if (!e.argv.empty() && !e.argv[0].empty() && e.argv[0][0] != '/') {
        e.argv[0].insert(0, kProgramDir.data(), kProgramDir.size());
      }
    }
  }
  Trim(o.run, n);
  o.run_final = run_final_;
  o.db_persist = db_persist_;
  o.watch = watch_;
  o.log_level = log_level_;
  n = 0;
  for (const auto& [m, l] : seclabels_) {
    auto& kv = Next(o.seclabels, n);
    Assign(kv.first, m);
    Assign(kv.second, l);
  }
  Trim(o.seclabels, n);
}

void ExecutorState::Run(const CompiledRules& rules, const EventInput& event, RuleHost& host,
                        const ExecuteOptions& options, Outcome* outcome) {
  rules_ = &rules;
  host_ = &host;
  options_ = &options;
  outcome_ = outcome;
  line_ = nullptr;
  outcome->Clear();
  Reset();
  LoadEvent(event);
  uint8_t mask = kLineHasGoto | kLineUpdatesSomething;
  if (!remove_) {
    if (has_devnum_) mask |= kLineHasDevlink;
    if (has_ifindex_) mask |= kLineHasName;
  }
  const absl::Span<const Line> lines = rules.lines();
  for (size_t i = 0; i < lines.size();) {
    const Line& line = lines[i];
    size_t next = i + 1;
    if ((line.flags & mask) != 0) {
      line_ = &line;
      esc_ = Escape::kUnset;
      ++outcome->lines_applied;
      const Result r = ApplyLine(line);
      if (r == Result::kAbort) break;
      if (r == Result::kMatch) {
        ++outcome->lines_matched;
        // A GOTO only ever jumps forward: the loop ends.
        if (line.goto_line != kNoIndex) next = line.goto_line;
      }
    }
    i = next;
  }
  line_ = nullptr;
  BuildOutcome(event);
}

Executor::Executor() : state_(std::make_unique<ExecutorState>()) {}
Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;

void Executor::Run(const CompiledRules& rules, const EventInput& event, RuleHost& host,
                   const ExecuteOptions& options, Outcome* outcome) {
  state_->Run(rules, event, host, options, outcome);
}

Outcome ExecuteRules(const CompiledRules& rules, const EventInput& event, RuleHost& host,
                     const ExecuteOptions& options) {
  Executor executor;
  Outcome outcome;
  executor.Run(rules, event, host, options, &outcome);
  return outcome;
}

}  // namespace hotring::hotplug::udevrules

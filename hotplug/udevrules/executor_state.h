// The executor's inside: one event's state (ExecutorState) and the pieces it is made of, shared
// by executor.cc (the line loop and the outcome), executor_device.cc (the device, its properties
// and substitutions) and executor_tokens.cc (what each key does). Not part of the package's API.
#ifndef HOTRING_HOTPLUG_UDEVRULES_EXECUTOR_STATE_H_
#define HOTRING_HOTPLUG_UDEVRULES_EXECUTOR_STATE_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/format.h"
#include "hotplug/udevrules/rule_host.h"

namespace hotring::hotplug::udevrules {

inline constexpr absl::string_view kDevPrefix = "/dev/";
inline constexpr absl::string_view kProgramDir = "/lib/udev/";  // udevd's UDEVLIBEXECDIR on Debian 12
// The most IMPORT{file} reads of a file (systemd reads lines of up to LONG_LINE_MAX, 1 MiB).
inline constexpr size_t kMaxImportFile = 1u << 20;

inline bool IsSpace(char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }

inline absl::string_view StripTrailingSpace(absl::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

inline absl::string_view Strip(absl::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return StripTrailingSpace(s);
}

// Strings of one event: a bump allocator whose blocks are kept from event to event.
class EventArena {
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
      big_.push_back(std::make_unique_for_overwrite<char[]>(n));
      return big_.back().get();
    }
    if (block_ < blocks_.size() && used_ + n > kBlock) {
      ++block_;
      used_ = 0;
    }
    if (block_ >= blocks_.size()) {
      // Not zeroed: a fresh block's pages are touched only as strings fill them.
      blocks_.push_back(std::make_unique_for_overwrite<char[]>(kBlock));
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

enum class EscapeMode : uint8_t { kUnset, kNone, kReplace };

// A token's result: no match, match, or "udevd gives up on this event".
enum class TokenResult : uint8_t { kNoMatch, kMatch, kAbort };

inline TokenResult ResultOf(bool b) { return b ? TokenResult::kMatch : TokenResult::kNoMatch; }

// The device reference of the event device itself; parents are 0, 1, ... (nearest first);
// kNoDevice: none (udevd's NULL dev_parent).
inline constexpr int kEventDevice = -1;
inline constexpr int kNoDevice = -2;

inline bool IsParentToken(TokenType type) {
  return type >= TokenType::kMatchParentsKernel && type <= TokenType::kMatchParentsTag;
}

// One event's state and the buffers kept from event to event. Owns the buffers; borrows the
// rules, the host, the options and the outcome for the length of Run.
class ExecutorState final : public FormatSource {
 public:
  void Run(const CompiledRules& rules, const EventInput& event, RuleHost& host,
           const ExecuteOptions& options, Outcome* outcome);

  bool Substitute(Subst subst, absl::string_view attribute, std::string* out) override;
  bool SubstituteResult(absl::string_view attr, std::string* out);
  bool SubstituteAttribute(absl::string_view attr, std::string* out);
  bool SubstituteParent(std::string* out);

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
  TokenResult ApplyLine(const Line& line);
  TokenResult ApplyParentTokens(uint32_t first, uint32_t end);
  TokenResult ApplyToken(const Token& t, int dev);
  // ApplyToken's keys that take more than a line (executor_tokens.cc).
  TokenResult MatchDevlink(const Token& t, int dev);
  TokenResult MatchEnv(const Token& t, int dev);
  TokenResult MatchAttr(const Token& t, int dev);
  TokenResult MatchSysctl(const Token& t, int dev);
  TokenResult MatchTest(const Token& t, int dev);
  TokenResult MatchProgram(const Token& t, int dev);
  TokenResult MatchImportFile(const Token& t, int dev);
  TokenResult MatchImportProgram(const Token& t, int dev);
  TokenResult MatchImportBuiltin(const Token& t, int dev);
  TokenResult MatchImportDb(const Token& t, int dev);
  TokenResult MatchImportCmdline(const Token& t, int dev);
  TokenResult MatchImportParent(const Token& t, int dev);
  TokenResult AssignOwnerOrGroup(const Token& t, int dev);
  TokenResult AssignMode(const Token& t, int dev);
  TokenResult AssignId(const Token& t, int dev);
  TokenResult AssignSeclabel(const Token& t, int dev);
  TokenResult AssignEnv(const Token& t, int dev);
  TokenResult AssignTag(const Token& t, int dev);
  TokenResult AssignName(const Token& t, int dev);
  TokenResult AssignDevlink(const Token& t, int dev);
  TokenResult AssignAttr(const Token& t, int dev);
  TokenResult AssignSysctl(const Token& t, int dev);
  TokenResult AssignRun(const Token& t, int dev);

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

  EventArena arena_;
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
  EscapeMode esc_ = EscapeMode::kUnset;
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

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_EXECUTOR_STATE_H_

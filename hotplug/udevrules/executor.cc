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
#include "hotplug/udevrules/executor_state.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {

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


TokenResult ExecutorState::ApplyParentTokens(uint32_t first, uint32_t end) {
  // Every parent key must match one and the same device: the event device first, then each
  // ancestor in turn.
  dev_parent_ = kEventDevice;
  for (;;) {
    bool all = true;
    for (uint32_t i = first; i < end; ++i) {
      const TokenResult r = ApplyToken(rules_->token(i), dev_parent_);
      if (r == TokenResult::kAbort) return r;
      if (r == TokenResult::kNoMatch) {
        all = false;
        break;
      }
    }
    if (all) return TokenResult::kMatch;
    if (!EnsureParent(dev_parent_ + 1)) {
      dev_parent_ = kNoDevice;
      return TokenResult::kNoMatch;
    }
    ++dev_parent_;
  }
}

TokenResult ExecutorState::ApplyLine(const Line& line) {
  for (uint32_t i = line.first_token; i < line.end_token;) {
    const Token& t = rules_->token(i);
    if (IsParentToken(t.type)) {
      uint32_t end = i;
      while (end < line.end_token && IsParentToken(rules_->token(end).type)) ++end;
      const TokenResult r = ApplyParentTokens(i, end);
      if (r != TokenResult::kMatch) return r;
      i = end;
      continue;
    }
    const TokenResult r = ApplyToken(t, kEventDevice);
    if (r != TokenResult::kMatch) return r;
    ++i;
  }
  return TokenResult::kMatch;
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
      esc_ = EscapeMode::kUnset;
      ++outcome->lines_applied;
      const TokenResult r = ApplyLine(line);
      if (r == TokenResult::kAbort) break;
      if (r == TokenResult::kMatch) {
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

// mdev.conf: the parsed, immutable rule set and its parser. Busybox's syntax, one rule a line:
//
//   [-][ENVVAR=regex;]...<device regex> <user>:<group> <mode> [=path|>path|!] [@|$|*command]
//   [-][ENVVAR=regex;]...@<major>,<minor>[-<minor2>] ...
//   [-][ENVVAR=regex;]...$ENVVAR=<regex> ...
//
// Lines are split on blanks into at most four fields, the fourth taking the rest of the line;
// '#' starts a comment only where a field would start; a trailing '\' joins the next line.
// Regexes are POSIX extended, compiled once here; device and $ENVVAR regexes must match the
// whole value, ENVVAR=regex; prefixes anywhere in it (busybox). The first matching rule ends the
// search unless its line starts with '-'; when the search falls off the end (no rule, or only
// '-' rules matched) busybox's built-in default applies: root:root 0660.
#ifndef HOTRING_HOTPLUG_RULES_RULE_SET_H_
#define HOTRING_HOTPLUG_RULES_RULE_SET_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/devroot/user_db.h"
#include "hotplug/rules/device.h"
#include "hotplug/rules/regex.h"

namespace hotring::hotplug::rules {

using devroot::Owner;
using devroot::UserDb;

// An ENVVAR=regex; prefix: the variable must exist and the regex match somewhere in it.
struct EnvMatch {
  std::string name;
  Regex regex;
};

// What the first field matches.
enum class MatchKind {
  kName,        // <regex> against Device::name, whole
  kEnv,         // $ENVVAR=<regex> against that variable, whole (absent variable: no match)
  kDevNumber,   // @major,minor[-minor2] against Device::number
  kAll,         // the built-in default rule: matches everything
};

// The optional fourth field.
enum class NodeAction {
  kKeep,         // no field: the node is Device::name
  kMove,         // =path: the node is at path (trailing '/': path + name)
  kMoveAndLink,  // >path: as kMove, plus a symlink at Device::name pointing to it
  kNoNode,       // !: no node is created or removed (commands still run)
};

// When the command runs.
enum class CommandWhen {
  kNever,    // no command
  kAdd,      // @command: after the node is created
  kRemove,   // $command: before the node is removed
  kAlways,   // *command: both, and for every other action too (busybox runs it on change)
};

// One line of mdev.conf. Owns its compiled regexes; move-only.
struct Rule {
  std::string file;  // where it was read: for logs ("/etc/mdev.conf:12")
  int line = 0;      // 1-based physical line of the rule's start; 0 for the built-in default
  bool keep_matching = false;  // the line started with '-'
  std::vector<EnvMatch> env_matches;
  MatchKind kind = MatchKind::kAll;
  std::optional<Regex> regex;  // kName and kEnv
  std::string env_name;        // kEnv
  uint32_t major = 0;          // kDevNumber: major, minors [minor_first, minor_last]
  uint32_t minor_first = 0;
  uint32_t minor_last = 0;
  Owner owner;
  mode_t mode = 0660;  // permission bits only (07777)
  NodeAction node_action = NodeAction::kKeep;
  std::string path;    // kMove / kMoveAndLink: the text after '=' or '>', %0..%9 unexpanded
  bool path_uses_groups = false;  // `path` has a '%': Match computes the regex's captures
  CommandWhen command_when = CommandWhen::kNever;
  std::string command;  // without its '@'/'$'/'*'; run as /bin/sh -c COMMAND

  // "FILE:LINE", or "built-in default".
  [[nodiscard]] std::string Origin() const;
};

// How the parser treats a bad line.
struct ParseOptions {
  // false (the daemon): the first bad line fails the whole parse with "FILE:LINE: problem".
  // true (busybox mdev's behaviour): a bad line is skipped and its error kept in warnings().
  bool skip_bad_lines = false;
};

// The rules of one configuration (mdev.conf and its conf.d files), in order. Immutable once
// built; shared by the daemon's concurrent events and replaced whole on reload.
class RuleSet {
 public:
  RuleSet() = default;  // no rules: every device gets the built-in default
  RuleSet(std::vector<Rule> rules, std::vector<std::string> warnings,
          std::vector<std::string> sources)
      : rules_(std::move(rules)), warnings_(std::move(warnings)), sources_(std::move(sources)) {}
  RuleSet(RuleSet&&) noexcept = default;
  RuleSet& operator=(RuleSet&&) noexcept = default;

  [[nodiscard]] const std::vector<Rule>& rules() const { return rules_; }
  // Skipped lines' "FILE:LINE: problem" (only with ParseOptions::skip_bad_lines).
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }
  // The files read, in order; empty for the built-in default.
  [[nodiscard]] const std::vector<std::string>& sources() const { return sources_; }

  // The rule the search falls back to: everything, root:root 0660, no path, no command.
  [[nodiscard]] static const Rule& DefaultRule();

  // Calls `on_match` for every rule that applies to `device`, in order: matching rules up to and
  // including the first one not marked '-', or, when none stops the search, DefaultRule() last.
  // `subject` is what the rule's regex matched (the name, or the $ENVVAR's value) and `groups`
  // its captures when the rule's path uses them (Rule::path_uses_groups; otherwise only group 0,
  // the whole subject, is set: captures cost a second regexec); all empty-but-matched for
  // @maj,min, unset for the default. Pure: no I/O; no allocation.
  void Match(const Device& device,
             absl::FunctionRef<void(const Rule& rule, absl::string_view subject,
                                    const MatchGroups& groups)>
                 on_match) const;

 private:
  std::vector<Rule> rules_;
  std::vector<std::string> warnings_;
  std::vector<std::string> sources_;
};

// Parses one file's text. `file_name` only labels errors and rules. Errors (InvalidArgument):
//   "FILE:LINE: <what is wrong>", e.g. "/etc/mdev.conf:3: unknown group 'disk'".
absl::StatusOr<RuleSet> ParseRules(absl::string_view text, absl::string_view file_name,
                                   const UserDb& users, const ParseOptions& options = {});

// Parses one file's text and appends its rules (and warnings) to `rules` (`warnings`); used to
// concatenate mdev.conf and its conf.d files.
absl::Status ParseRulesInto(absl::string_view text, absl::string_view file_name,
                            const UserDb& users, const ParseOptions& options,
                            std::vector<Rule>& rules, std::vector<std::string>& warnings);

// Where a configuration lives.
struct ConfigPaths {
  std::string file = "/etc/mdev.conf";
  // Every *.conf in this directory is read after `file`, in name order, as if appended.
  // Default (empty): `file` + ".d". A missing directory is no error.
  std::string dropin_dir;
};

// Reads `paths.file` then its conf.d files. A missing main file is not an error: its rules are
// then none, and the built-in default applies to every device (busybox). Unreadable files and
// bad lines are errors "FILE:LINE: ..." (or warnings, per `options`).
absl::StatusOr<RuleSet> LoadRules(const ConfigPaths& paths, const UserDb& users,
                                  const ParseOptions& options = {});

// Expands %0..%9 in a path template from `groups` over `subject` (busybox: a '%' not followed by
// a digit, or followed by a group that did not match, stays as it is). Pure.
[[nodiscard]] std::string SubstituteGroups(absl::string_view path_template,
                                           absl::string_view subject, const MatchGroups& groups);

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_RULE_SET_H_

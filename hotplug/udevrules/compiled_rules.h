// udev rules compiled once into one flat token program, in the shape of systemd-udevd 252's
// udev-rules.c: every rule line becomes a run of tokens sorted by type (matches before
// assignments, the parent matches KERNELS/SUBSYSTEMS/DRIVERS/ATTRS/TAGS together, PROGRAM
// before RESULT), strings interned, "a|b" alternatives split, each alternative marked plain
// (compared as a string) or glob, substitutions pre-split (format.h), GOTO resolved to the index
// of the first later line of the same file with that LABEL, OWNER/GROUP names resolved when
// resolve_names=early. A line with a problem udevd refuses is dropped with a "FILE:LINE: what"
// diagnostic, udevd's wording; the rest loads. Immutable once built: share it between threads.
#ifndef HOTRING_HOTPLUG_UDEVRULES_COMPILED_RULES_H_
#define HOTRING_HOTPLUG_UDEVRULES_COMPILED_RULES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hotplug/udevrules/format.h"
#include "hotplug/udevrules/names.h"
#include "hotplug/udevrules/rule_files.h"
#include "hotplug/udevrules/rules_parser.h"

namespace hotring::hotplug::udevrules {

// Token types in udev 252's order, which is the order tokens of one line run in.
enum class TokenType : uint8_t {
  // Matches of the event device.
  kMatchAction,
  kMatchDevpath,
  kMatchKernel,
  kMatchDevlink,
  kMatchName,
  kMatchEnv,
  kMatchConst,
  kMatchTag,
  kMatchSubsystem,
  kMatchDriver,
  kMatchAttr,
  kMatchSysctl,
  // Matches of the device or one of its parents (all on the same one).
  kMatchParentsKernel,
  kMatchParentsSubsystem,
  kMatchParentsDriver,
  kMatchParentsAttr,
  kMatchParentsTag,
  // Matches that do something.
  kMatchTest,
  kMatchProgram,
  kMatchImportFile,
  kMatchImportProgram,
  kMatchImportBuiltin,
  kMatchImportDb,
  kMatchImportCmdline,
  kMatchImportParent,
  kMatchResult,
  // Assignments.
  kAssignStringEscapeNone,
  kAssignStringEscapeReplace,
  kAssignDbPersist,
  kAssignWatch,
  kAssignLinkPriority,
  kAssignLogLevel,
  kAssignOwner,
  kAssignGroup,
  kAssignMode,
  kAssignOwnerId,
  kAssignGroupId,
  kAssignModeId,
  kAssignTag,
  kAssignStaticNode,
  kAssignSeclabel,
  kAssignEnv,
  kAssignName,
  kAssignDevlink,
  kAssignAttr,
  kAssignSysctl,
  kAssignRunBuiltin,
  kAssignRunProgram,
};

// How a match value compares (udev's UdevRuleMatchType).
enum class MatchKind : uint8_t {
  kEmpty,           // "": the subject must be empty (or missing)
  kPlain,           // alternatives compared as strings
  kPlainWithEmpty,  // the same, or an empty subject ("|a")
  kGlob,            // alternatives are fnmatch patterns
  kGlobWithEmpty,
  kSubsystem,       // SUBSYSTEM=="subsystem|bus|class"
};

// How an ATTR{}/ATTRS{} name is given.
enum class AttrKind : uint8_t {
  kNone,
  kPlain,   // a name
  kFormat,  // a name with substitutions
  kSubsys,  // "[subsystem/sysname]attribute": another device's attribute
};

inline constexpr uint32_t kNoIndex = 0xffffffffu;

// One key of a rule. Indices point into the program's tables.
struct Token {
  TokenType type = TokenType::kMatchAction;
  Op op = Op::kMatch;
  MatchKind match = MatchKind::kEmpty;
  AttrKind attr_kind = AttrKind::kNone;
  // ATTR/ATTRS matches drop the subject's trailing whitespace unless the value ends in some.
  bool trim_subject = false;
  uint32_t alternatives = 0;       // matches: first alternative (strings index)
  uint32_t alternative_count = 0;  // matches: how many
  uint32_t value = kNoIndex;       // formats index of the value to substitute
  uint32_t attr = kNoIndex;        // strings index (ENV/CONST key) or formats index (ATTR/SYSCTL
                                   // names, SECLABEL module)
  int64_t number = 0;              // uid, gid, mode, link priority, log level (-1: reset),
                                   // watch (0/1), builtin index, TEST mode (-1: none)
};

// What a line does, to skip lines that cannot matter for an event (udev's UdevRuleLineType).
enum LineFlags : uint8_t {
  kLineHasName = 1 << 0,            // NAME=
  kLineHasDevlink = 1 << 1,         // SYMLINK=, OWNER=, GROUP=, MODE=
  kLineHasStaticNode = 1 << 2,      // OPTIONS=static_node
  kLineHasGoto = 1 << 3,            // GOTO=
  kLineHasLabel = 1 << 4,           // LABEL=
  kLineUpdatesSomething = 1 << 5,   // other assignments, PROGRAM, IMPORT
};

// One rule line: a range of tokens.
struct Line {
  uint32_t first_token = 0;
  uint32_t end_token = 0;
  uint32_t file = 0;         // files() index
  uint32_t line_number = 0;  // in its file
  uint8_t flags = 0;
  // The line a GOTO continues at (kNoIndex: the GOTO found no LABEL, or there is none).
  uint32_t goto_line = kNoIndex;
  // A GOTO whose file was cut short: udevd leaves it unresolved and silent.
  bool goto_unresolved = false;
};

// An OPTIONS+="static_node=NAME" with the permissions and tags of its line, for the node
// udevd's tmpfiles made before it started. Owns its strings.
struct StaticNode {
  std::string node;  // relative to /dev
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint32_t> mode;
  std::vector<std::string> tags;
  std::string where;  // "FILE:LINE"
};

// One builtin command IMPORT{builtin}/RUN{builtin} may name, in udevd's order.
struct BuiltinInfo {
  std::string name;
  bool run_once = false;  // udevd runs it at most once per event and reuses the first answer
};

// Debian 12's systemd-udevd 252 builtins: blkid btrfs hwdb input_id keyboard kmod net_id
// net_setup_link path_id usb_id uaccess.
[[nodiscard]] std::vector<BuiltinInfo> DefaultBuiltins();

struct CompileOptions {
  ResolveNames resolve_names = ResolveNames::kEarly;
  // Names for OWNER/GROUP when resolve_names is early; nullptr: only numbers, "root", "nobody".
  const NameLookup* names = nullptr;
  std::vector<BuiltinInfo> builtins = DefaultBuiltins();
  // Bounds on hostile input; a load that reaches one says so in an error.
  size_t max_rules = 100000;
  size_t max_file_size = 64u << 20;
  size_t max_diagnostics = 1000;
};

// Rules text from somewhere (tests, fuzzing, a file already read). Owns its strings.
struct RulesSource {
  std::string name;  // as diagnostics name it (udevd prints the full path)
  std::string text;
};

// The program. Owns every string it refers to.
class CompiledRules {
 public:
  CompiledRules() = default;
  CompiledRules(const CompiledRules&) = delete;
  CompiledRules& operator=(const CompiledRules&) = delete;
  CompiledRules(CompiledRules&&) = default;
  CompiledRules& operator=(CompiledRules&&) = default;

  [[nodiscard]] absl::Span<const Line> lines() const { return lines_; }
  [[nodiscard]] const Token& token(uint32_t i) const { return tokens_[i]; }
  [[nodiscard]] size_t token_count() const { return tokens_.size(); }
  [[nodiscard]] absl::string_view str(uint32_t i) const { return strings_[i]; }
  [[nodiscard]] const Format& format(uint32_t i) const { return formats_[i]; }
  [[nodiscard]] const std::string& file_name(uint32_t i) const { return files_[i]; }
  [[nodiscard]] size_t file_count() const { return files_.size(); }
  [[nodiscard]] const std::vector<BuiltinInfo>& builtins() const { return builtins_; }
  [[nodiscard]] const std::vector<StaticNode>& static_nodes() const { return static_nodes_; }
  [[nodiscard]] const Diagnostics& diagnostics() const { return diagnostics_; }
  [[nodiscard]] ResolveNames resolve_names() const { return resolve_names_; }
  // "FILE:LINE" of a line, for logs.
  [[nodiscard]] std::string Where(const Line& line) const;

 private:
  friend class Compiler;
  std::vector<Line> lines_;
  std::vector<Token> tokens_;
  std::vector<std::string> strings_;
  std::vector<Format> formats_;
  std::vector<std::string> files_;
  std::vector<BuiltinInfo> builtins_;
  std::vector<StaticNode> static_nodes_;
  Diagnostics diagnostics_;
  ResolveNames resolve_names_ = ResolveNames::kEarly;
};

// Compiles texts in the order given (already sorted as udev would read them).
[[nodiscard]] std::unique_ptr<CompiledRules> CompileRules(absl::Span<const RulesSource> sources,
                                                          const CompileOptions& options = {});

// Lists, reads and compiles the rules of `dirs` (rule_files.h; DefaultRulesDirs() for udevd's).
// Files that cannot be read are reported in the diagnostics and skipped, as udevd does; only a
// directory that cannot be listed is an error.
[[nodiscard]] absl::StatusOr<std::unique_ptr<CompiledRules>> LoadRules(
    absl::Span<const std::string> dirs, const CompileOptions& options = {});

// The same for `paths`, each a rules file or a directory of them (directories listed as
// ListRulesFiles does, each on its own); files are read in the order given.
[[nodiscard]] absl::StatusOr<std::unique_ptr<CompiledRules>> LoadRulesPaths(
    absl::Span<const std::string> paths, const CompileOptions& options = {});

// systemd's parse_mode: octal digits, at most 07777.
[[nodiscard]] bool ParseOctalMode(absl::string_view text, uint32_t* mode);

// What `hotring udevadm verify` prints: one line per problem ("FILE:LINE: what"), then a summary
// ("N rules files, M rules, E errors, W warnings"). ok: no error and no warning.
struct VerifyReport {
  std::string text;
  bool ok = false;
};
[[nodiscard]] VerifyReport VerifyRules(absl::Span<const std::string> paths,
                                       const CompileOptions& options = {});

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_COMPILED_RULES_H_

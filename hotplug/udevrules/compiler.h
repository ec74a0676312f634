// The compiler of udev rules: builds a CompiledRules line by line, as udevd's rule_add_line and
// parse_token do. Internal to compiled_rules.cc, compiler.cc and compiler_keys.cc (what each key
// compiles to); the package's API is compiled_rules.h.
#ifndef HOTRING_HOTPLUG_UDEVRULES_COMPILER_H_
#define HOTRING_HOTPLUG_UDEVRULES_COMPILER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/rules_parser.h"

namespace hotring::hotplug::udevrules {

// Builds one CompiledRules, line by line; owns it until Finish. One instance per load.
class Compiler {
 public:
  explicit Compiler(const CompileOptions& options) : options_(options) {
    rules_ = std::make_unique<CompiledRules>();
    rules_->builtins_ = options.builtins;
    rules_->resolve_names_ = options.resolve_names;
    rules_->diagnostics_ = Diagnostics(options.max_diagnostics);
  }

  // False once the bound on rules is reached: nothing more is compiled.
  bool AddFile(absl::string_view name, absl::string_view text);
  void Report(absl::string_view file, unsigned line, Severity severity, std::string message) {
    rules_->diagnostics_.Add(file, line, severity, std::move(message));
  }
  std::unique_ptr<CompiledRules> Finish() { return std::move(rules_); }

 private:
  // The line being compiled.
  struct Pending {
    unsigned line = 0;
    uint8_t flags = 0;
    std::vector<Token> tokens;
    std::string label;
    std::string goto_label;
  };
  // A line of the current file, for GOTO resolution.
  struct FileLine {
    uint32_t index;  // into lines_
    std::string label;
    std::string goto_label;
  };

  void CompileRule(const RuleText& rule);
  static bool IsMatch(Op op) { return op == Op::kMatch || op == Op::kNoMatch; }
  // udevd's parse_token: false drops the line (the problem is reported).
  bool AddKey(const KeyValue& kv, Pending& line);
  // AddKey for each key that is more than a match of the device; `op` is the key's, which
  // some change (udevd assumes "=" for some operators it warns about).
  bool KeySymlink(const KeyValue& kv, Op op, Pending& line);
  bool KeyName(const KeyValue& kv, Op op, Pending& line);
  bool KeyEnv(const KeyValue& kv, Op op, Pending& line);
  bool KeyConst(const KeyValue& kv, Op op, Pending& line);
  bool KeyTag(const KeyValue& kv, Op op, Pending& line);
  bool KeyAttrOrSysctl(const KeyValue& kv, Op op, Pending& line);
  bool KeyAttrs(const KeyValue& kv, Op op, Pending& line);
  bool KeyTest(const KeyValue& kv, Op op, Pending& line);
  bool KeyProgram(const KeyValue& kv, Op op, Pending& line);
  bool KeyImport(const KeyValue& kv, Op op, Pending& line);
  bool KeyOptions(const KeyValue& kv, Op op, Pending& line);
  bool KeyOwnerOrGroup(const KeyValue& kv, Op op, Pending& line);
  bool KeyMode(const KeyValue& kv, Op op, Pending& line);
  bool KeySeclabel(const KeyValue& kv, Op op, Pending& line);
  bool KeyRun(const KeyValue& kv, Op op, Pending& line);
  bool KeyGoto(const KeyValue& kv, Op op, Pending& line);
  bool KeyLabel(const KeyValue& kv, Op op, Pending& line);
  void AddToken(Pending& line, TokenType type, Op op, absl::string_view value,
                std::optional<absl::string_view> attr, int64_t number = 0);
  void ResolveGotos(bool file_complete);

  uint32_t Intern(absl::string_view s);
  uint32_t InternFormat(absl::string_view s);

  void Error(const std::string& msg) { Report(file_, line_, Severity::kError, msg); }
  void Warning(const std::string& msg) { Report(file_, line_, Severity::kWarning, msg); }
  bool InvalidOp(absl::string_view key) {
    Error(absl::StrCat("Invalid operator for ", key, "."));
    return false;
  }
  bool InvalidAttr(absl::string_view key) {
    Error(absl::StrCat("Invalid attribute for ", key, "."));
    return false;
  }
  // udevd's check_value_format_and_warn: an error message, but the key stays.
  void CheckValue(absl::string_view key, absl::string_view value, bool nonempty);
  // check_attr_format_and_warn: false for an empty attribute (the line is dropped).
  bool CheckAttr(absl::string_view key, std::optional<absl::string_view> attr);
  int FindBuiltin(absl::string_view command) const;

  const CompileOptions& options_;
  std::unique_ptr<CompiledRules> rules_;
  absl::flat_hash_map<std::string, uint32_t> string_index_;
  absl::flat_hash_map<std::string, uint32_t> format_index_;
  std::string file_;
  uint32_t file_number_ = 0;
  unsigned line_ = 0;
  std::vector<FileLine> file_lines_;
  size_t rule_count_ = 0;
  bool full_ = false;
};

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_COMPILER_H_

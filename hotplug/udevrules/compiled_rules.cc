#include "hotplug/udevrules/compiled_rules.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/udevrules/compiler.h"
#include "hotplug/udevrules/glob.h"

namespace hotring::hotplug::udevrules {

std::vector<BuiltinInfo> DefaultBuiltins() {
  return {{"blkid", true},   {"btrfs", false},          {"hwdb", false},    {"input_id", false},
          {"keyboard", false}, {"kmod", false},         {"net_id", false},  {"net_setup_link", false},
          {"path_id", true}, {"usb_id", true},          {"uaccess", false}};
}

std::string CompiledRules::Where(const Line& line) const {
  return absl::StrCat(files_[line.file], ":", line.line_number);
}

bool ParseOctalMode(absl::string_view text, uint32_t* mode) {
  if (text.empty() || text.size() > 11) return false;
  uint32_t m = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return false;
    m = m * 8 + static_cast<uint32_t>(c - '0');
    if (m > 07777) return false;
  }
  *mode = m;
  return true;
}

std::unique_ptr<CompiledRules> CompileRules(absl::Span<const RulesSource> sources,
                                            const CompileOptions& options) {
  Compiler compiler(options);
  for (const RulesSource& source : sources) {
    if (!compiler.AddFile(source.name, source.text)) break;
  }
  return compiler.Finish();
}

namespace {

// Reads a rules file with a bound on its size; a masked file reads as empty.
absl::StatusOr<std::string> ReadRulesFile(const std::string& path, size_t max_size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat(", path, ")"));
  if (S_ISCHR(st.st_mode)) return std::string();  // /dev/null: masked
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  if (static_cast<size_t>(st.st_size) > max_size) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": larger than ", max_size, " bytes, not read"));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read(", path, ")"));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

void CompileFiles(Compiler& compiler, const std::vector<RulesFile>& files, size_t max_size) {
  for (const RulesFile& file : files) {
    if (file.masked) continue;
    absl::StatusOr<std::string> text = ReadRulesFile(file.path, max_size);
    if (!text.ok()) {
      compiler.Report(file.path, 0, Severity::kError,
                      absl::StrCat("Failed to read rules file, ignoring: ", text.status().message()));
      continue;
    }
    if (!compiler.AddFile(file.path, *text)) break;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledRules>> LoadRules(absl::Span<const std::string> dirs,
                                                         const CompileOptions& options) {
  HOTRING_ASSIGN_OR_RETURN(std::vector<RulesFile> files, ListRulesFiles(dirs));
  Compiler compiler(options);
  CompileFiles(compiler, files, options.max_file_size);
  return compiler.Finish();
}

absl::StatusOr<std::unique_ptr<CompiledRules>> LoadRulesPaths(absl::Span<const std::string> paths,
                                                              const CompileOptions& options) {
  Compiler compiler(options);
  for (const std::string& path : paths) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      HOTRING_ASSIGN_OR_RETURN(std::vector<RulesFile> files, ListRulesFiles({path}));
      CompileFiles(compiler, files, options.max_file_size);
    } else {
      const std::string name = path.substr(path.rfind('/') + 1);
      CompileFiles(compiler, {RulesFile{name, path, false}}, options.max_file_size);
    }
  }
  return compiler.Finish();
}

VerifyReport VerifyRules(absl::Span<const std::string> paths, const CompileOptions& options) {
  VerifyReport report;
  absl::StatusOr<std::unique_ptr<CompiledRules>> rules = LoadRulesPaths(paths, options);
  if (!rules.ok()) {
    report.text = absl::StrCat(rules.status().message(), "\n");
    return report;
  }
  const Diagnostics& d = (*rules)->diagnostics();
  for (const Diagnostic& diagnostic : d.kept()) {
    const absl::string_view level = diagnostic.severity == Severity::kError     ? "error"
                                    : diagnostic.severity == Severity::kWarning ? "warning"
                                                                                : "notice";
    absl::StrAppend(&report.text, diagnostic.Format(), " (", level, ")\n");
  }
  if (d.dropped() > 0) absl::StrAppend(&report.text, "... and ", d.dropped(), " more\n");
  absl::StrAppend(&report.text, (*rules)->file_count(), " rules files, ", (*rules)->lines().size(),
                  " rules, ", d.errors(), " errors, ", d.warnings(), " warnings\n");
  report.ok = d.errors() == 0 && d.warnings() == 0;
  return report;
}

}  // namespace hotring::hotplug::udevrules

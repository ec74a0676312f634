#include "hotplug/modules/module_index.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/modules/kmod_index_writer.h"

namespace hotring::hotplug::modules {
namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open ", path));
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) return ErrnoStatus(absl::StrCat("read ", path));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}


// Builds an index image from a text file, one (key, value, priority) per accepted line.
template <typename LineFn>
absl::StatusOr<KmodIndex> IndexFromText(const std::string& text, LineFn&& add) {
  KmodIndexWriter writer;
  for (absl::string_view line : absl::StrSplit(text, '\n')) add(line, &writer);
  return KmodIndex::FromBytes(writer.Serialize());
}

// "alias PATTERN MODULE" lines (modules.alias, modules.symbols). Priorities follow the order
// in which modules first appear, which is depmod's module order.
absl::StatusOr<KmodIndex> AliasIndexFromText(const std::string& text) {
  absl::flat_hash_map<std::string, uint32_t> order;
  return IndexFromText(text, [&](absl::string_view line, KmodIndexWriter* writer) {
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() < 3 || words[0] != "alias") return;
    std::string pattern(words[1]);
    if (!NormaliseName(&pattern)) return;
    const auto [it, inserted] =
        order.emplace(std::string(words[2]), static_cast<uint32_t>(order.size()));
    (void)inserted;
    writer->Insert(pattern, words[2], it->second);
  });
}

// Opens NAME.bin, or builds the index from the text file through `from_text`.
template <typename FromText>
absl::StatusOr<std::optional<KmodIndex>> OpenIndex(const std::string& dir, absl::string_view name,
                                                   absl::string_view text_name,
                                                   std::vector<std::string>* sources,
                                                   FromText&& from_text) {
  const std::string bin = absl::StrCat(dir, "/", name, ".bin");
  absl::StatusOr<KmodIndex> mapped = KmodIndex::Open(bin);
  if (mapped.ok()) {
    sources->push_back(absl::StrCat(name, ".bin"));
    return std::optional<KmodIndex>(std::move(*mapped));
  }
  if (!absl::IsNotFound(mapped.status())) return mapped.status();
  absl::StatusOr<std::string> text = ReadWholeFile(absl::StrCat(dir, "/", text_name));
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return std::optional<KmodIndex>();
    return text.status();
  }
  HOTRING_ASSIGN_OR_RETURN(KmodIndex built, from_text(*text));
  sources->push_back(absl::StrCat(text_name, " (text)"));
  return std::optional<KmodIndex>(std::move(built));
}

}  // namespace

std::string DefaultModulesDir(const std::string& root) {
  struct utsname u;
  if (::uname(&u) != 0) return absl::StrCat(root, "/lib/modules");
  return absl::StrCat(root, "/lib/modules/", u.release);
}

std::vector<std::string> DefaultConfigPaths(const std::string& root) {
  std::vector<std::string> paths;
  for (const absl::string_view dir : kDefaultConfigDirs) paths.push_back(absl::StrCat(root, dir));
  return paths;
}

absl::StatusOr<std::unique_ptr<ModuleIndex>> ModuleIndex::Load(const ModuleIndexOptions& options) {
  std::unique_ptr<ModuleIndex> index(new ModuleIndex());
  index->modules_dir_ = options.modules_dir;
  const std::string& dir = options.modules_dir;
  std::vector<std::string>* sources = &index->sources_;

  HOTRING_ASSIGN_OR_RETURN(
      index->dep_,
      OpenIndex(dir, "modules.dep", "modules.dep", sources, [](const std::string& text) {
        uint32_t n = 0;
        return IndexFromText(text, [&](absl::string_view line, KmodIndexWriter* writer) {
          const size_t colon = line.find(':');
          if (colon == absl::string_view::npos) return;
          std::string name = ModnameOfPath(line.substr(0, colon));
          if (name.empty()) return;  // "kernel/.ko:": no module name, nothing can ask for it
          writer->Insert(name, line, n++);
        });
      }));
  if (!index->dep_) {
    return absl::NotFoundError(absl::StrCat(dir, ": no modules.dep.bin or modules.dep"));
  }
  HOTRING_ASSIGN_OR_RETURN(
      index->alias_, OpenIndex(dir, "modules.alias", "modules.alias", sources, AliasIndexFromText));
  HOTRING_ASSIGN_OR_RETURN(index->symbols_, OpenIndex(dir, "modules.symbols", "modules.symbols",
                                                      sources, AliasIndexFromText));
  HOTRING_ASSIGN_OR_RETURN(
      index->builtin_,
      OpenIndex(dir, "modules.builtin", "modules.builtin", sources, [](const std::string& text) {
        return IndexFromText(text, [](absl::string_view line, KmodIndexWriter* writer) {
          if (line.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(line[0]))) return;
          writer->Insert(ModnameOfPath(line), "", 0);
        });
      }));
  // modules.builtin.alias has no text form: its source is modules.builtin.modinfo
  // (NUL-separated "module.key=value").
  HOTRING_ASSIGN_OR_RETURN(
      index->builtin_alias_,
      OpenIndex(dir, "modules.builtin.alias", "modules.builtin.modinfo", sources,
                [](const std::string& text) {
                  KmodIndexWriter writer;
                  for (absl::string_view entry : absl::StrSplit(text, '\0')) {
                    const size_t dot = entry.find('.');
                    if (dot == absl::string_view::npos || dot == 0) continue;
                    const absl::string_view rest = entry.substr(dot + 1);
                    if (!absl::StartsWith(rest, "alias=") || rest.size() == 6) continue;
                    std::string alias(rest.substr(6));
                    if (!NormaliseName(&alias)) continue;
                    writer.Insert(alias, entry.substr(0, dot), 0);
                  }
                  return KmodIndex::FromBytes(writer.Serialize());
                }));

  index->config_ = LoadConfigFiles(ListConfigFiles(options.config_paths, dir));
  if (options.kernel_cmdline) {
    index->config_.ParseKernelCmdline(*options.kernel_cmdline);
  } else if (absl::StatusOr<std::string> cmdline = ReadWholeFile("/proc/cmdline"); cmdline.ok()) {
    index->config_.ParseKernelCmdline(*cmdline);
  }
  return index;
}

}  // namespace hotring::hotplug::modules

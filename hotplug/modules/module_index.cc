#include "hotplug/modules/module_index.h"

#include <fcntl.h>
#include <sys/stat.h>
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

// kmod's index header: magic, version, root offset.
constexpr off_t kIndexHeaderSize = 12;

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

// A status message without the path, which the report puts first ("open PATH: EACCES" ->
// "open: EACCES").
std::string ProblemOf(const absl::Status& status, const std::string& path) {
  std::string problem(status.message());
  if (absl::StartsWith(problem, path + ": ")) return problem.substr(path.size() + 2);
  if (const size_t at = problem.find(" " + path + ": "); at != std::string::npos) {
    problem.erase(at, path.size() + 1);
  }
  return problem;
}

// Opens NAME.bin, or, only when it does not exist, builds the index from the text file
// through `from_text`. Never fails: a damaged file is recorded in `file` and yields no index.
template <typename FromText>
std::optional<KmodIndex> OpenIndex(const std::string& dir, absl::string_view name,
                                   absl::string_view text_name, IndexFile* file,
                                   std::vector<std::string>* sources, FromText&& from_text) {
  file->name = std::string(name);
  file->path = absl::StrCat(dir, "/", name, ".bin");
  absl::StatusOr<KmodIndex> mapped = KmodIndex::Open(file->path);
  if (mapped.ok()) {
    file->state = IndexFile::State::kBinary;
    sources->push_back(absl::StrCat(name, ".bin"));
    return std::move(*mapped);
  }
  if (!absl::IsNotFound(mapped.status())) {
    // kmod 30 maps each .bin and, when that fails, opens it again for every lookup, which
    // fails the same way: the index answers nothing and the text file is never consulted.
    struct stat st;
    const bool short_file = ::stat(file->path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                            st.st_size < kIndexHeaderSize;
    file->state = short_file ? IndexFile::State::kEmpty : IndexFile::State::kCorrupt;
    file->problem = ProblemOf(mapped.status(), file->path);
    return std::nullopt;
  }
  const std::string text_path = absl::StrCat(dir, "/", text_name);
  absl::StatusOr<std::string> text = ReadWholeFile(text_path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return std::nullopt;
    file->path = text_path;
    file->state = IndexFile::State::kCorrupt;
    file->problem = ProblemOf(text.status(), text_path);
    return std::nullopt;
  }
  absl::StatusOr<KmodIndex> built = from_text(*text);
  if (!built.ok()) {
    file->path = text_path;
    file->state = IndexFile::State::kCorrupt;
    file->problem = ProblemOf(built.status(), text_path);
    return std::nullopt;
  }
  file->path = text_path;
  file->state = IndexFile::State::kText;
  sources->push_back(absl::StrCat(text_name, " (text)"));
  return std::move(*built);
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

std::vector<std::string> ModuleIndex::DamagedIndexes() const {
  std::vector<std::string> lines;
  for (const IndexFile& file : index_files_) {
    if (file.damaged()) lines.push_back(absl::StrCat(file.path, ": ", file.problem));
  }
  return lines;
}

absl::StatusOr<std::unique_ptr<ModuleIndex>> ModuleIndex::Load(const ModuleIndexOptions& options) {
  std::unique_ptr<ModuleIndex> index(new ModuleIndex());
  index->modules_dir_ = options.modules_dir;
  const std::string& dir = options.modules_dir;
  std::vector<std::string>* sources = &index->sources_;
  index->index_files_.resize(5);
  IndexFile* files = index->index_files_.data();

  index->dep_ = OpenIndex(dir, "modules.dep", "modules.dep", &files[0], sources,
                          [](const std::string& text) {
                            uint32_t n = 0;
                            return IndexFromText(
                                text, [&](absl::string_view line, KmodIndexWriter* writer) {
                                  const size_t colon = line.find(':');
                                  if (colon == absl::string_view::npos) return;
                                  std::string name = ModnameOfPath(line.substr(0, colon));
                                  // "kernel/.ko:": no module name, nothing can ask for it
                                  if (name.empty()) return;
                                  writer->Insert(name, line, n++);
                                });
                          });
  if (options.require_modules_dep && files[0].state == IndexFile::State::kAbsent) {
    return absl::NotFoundError(absl::StrCat(dir, ": no modules.dep.bin or modules.dep"));
  }
  index->alias_ =
      OpenIndex(dir, "modules.alias", "modules.alias", &files[1], sources, AliasIndexFromText);
  index->symbols_ = OpenIndex(dir, "modules.symbols", "modules.symbols", &files[2], sources,
                              AliasIndexFromText);
  index->builtin_ = OpenIndex(
      dir, "modules.builtin", "modules.builtin", &files[3], sources, [](const std::string& text) {
        return IndexFromText(text, [](absl::string_view line, KmodIndexWriter* writer) {
          if (line.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(line[0]))) return;
          writer->Insert(ModnameOfPath(line), "", 0);
        });
      });
  // modules.builtin.alias has no text form: its source is modules.builtin.modinfo
  // (NUL-separated "module.key=value").
  index->builtin_alias_ = OpenIndex(
      dir, "modules.builtin.alias", "modules.builtin.modinfo", &files[4], sources,
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
      });

  std::vector<std::string> listing_errors;
  index->config_ = LoadConfigFiles(ListConfigFiles(options.config_paths, dir, &listing_errors));
  // kmod complains while it lists the directories, before it reads any file.
  index->config_.errors.insert(index->config_.errors.begin(), listing_errors.begin(),
                               listing_errors.end());
  if (options.kernel_cmdline) {
    index->config_.ParseKernelCmdline(*options.kernel_cmdline);
  } else if (absl::StatusOr<std::string> cmdline = ReadWholeFile("/proc/cmdline"); cmdline.ok()) {
    index->config_.ParseKernelCmdline(*cmdline);
  }
  return index;
}

}  // namespace hotring::hotplug::modules

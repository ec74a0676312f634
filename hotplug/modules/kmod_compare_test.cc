// Against the real thing: every alias of the installed Debian kernel's modules.alias, and every
// MODALIAS of this machine's devices, resolved by KmodResolver and by kmod's own modprobe
// (--show-depends and -R). Nothing is loaded: both sides only print.
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "hotplug/modules/kmod_resolver.h"
#include "hotplug/modules/module_index.h"



namespace hotring::hotplug::modules {
namespace {

// kmod 30's default configuration directories: both sides read exactly these.
const std::vector<std::string> kKmodConfigDirs = {"/etc/modprobe.d", "/run/modprobe.d",
                                                  "/usr/local/lib/modprobe.d", "/lib/modprobe.d"};
constexpr char kDelimiterName[] = "hotring_compare_delimiter";

std::string ModprobePath() {
  for (const char* p : {"/usr/sbin/modprobe", "/sbin/modprobe"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

// The Debian kernel tree to compare on: the newest /lib/modules/V with modules.alias.bin.
std::string FindKernelVersion() {
  std::vector<std::string> versions;
  if (DIR* dir = ::opendir("/lib/modules")) {
    while (const dirent* e = ::readdir(dir)) {
      const std::string v = e->d_name;
      if (v[0] == '.') continue;
      if (::access(("/lib/modules/" + v + "/modules.alias.bin").c_str(), R_OK) == 0) {
        versions.push_back(v);
      }
    }
    ::closedir(dir);
  }
  std::sort(versions.begin(), versions.end());
  return versions.empty() ? "" : versions.back();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string>* g_modaliases = nullptr;

int CollectModalias(const char* path, const struct stat*, int type, struct FTW*) {
  if (type == FTW_F && absl::EndsWith(path, "/modalias")) {
    std::string text = ReadFile(path);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
    if (!text.empty()) g_modaliases->push_back(text);
  }
  return 0;
}


// kmod's answers for many queries from few processes: `modprobe -a` with a delimiter module
// (an install command in a configuration file of its own) between queries.
std::vector<std::string> RunKmod(const std::string& modprobe, const std::string& version,
                                 const std::string& delimiter_conf,
                                 const std::vector<std::string>& queries,
                                 const std::vector<std::string>& mode,
                                 const std::string& delimiter_line) {
  std::vector<std::string> answers;
  constexpr size_t kChunk = 1500;
  for (size_t start = 0; start < queries.size(); start += kChunk) {
    std::vector<std::string> argv = {modprobe};
    argv.insert(argv.end(), mode.begin(), mode.end());
    for (const char* a : {"-a", "-q", "-S"}) argv.push_back(a);
    argv.push_back(version);
    for (const std::string& dir : kKmodConfigDirs) {
      argv.push_back("-C");
      argv.push_back(dir);
    }
    argv.push_back("-C");
    argv.push_back(delimiter_conf);
    argv.push_back("--");
    const size_t end = std::min(queries.size(), start + kChunk);
    for (size_t i = start; i < end; ++i) {
      argv.push_back(queries[i]);
      argv.push_back(kDelimiterName);
    }
    const std::string out = RunCapture(argv);
    std::string current;
    for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
      if (line == delimiter_line) {
        answers.push_back(std::move(current));
        current.clear();
      } else {
        absl::StrAppend(&current, line, "\n");
      }
    }
  }
  return answers;
}

TEST(KmodCompareTest, EveryAliasAndModaliasResolvesAsKmodDoes) {
  const std::string modprobe = ModprobePath();
  ASSERT_FALSE(modprobe.empty()) << "kmod's modprobe is not installed (testing/install_deps.sh)";
  const std::string version = FindKernelVersion();
  ASSERT_FALSE(version.empty()) << "no /lib/modules/*/modules.alias.bin (linux-image-amd64)";
  const std::string dir = "/lib/modules/" + version;

  // Queries: every alias pattern of modules.alias (as kmod users pass them), then the
  // MODALIAS strings of this machine's devices.
  std::vector<std::string> queries;
  absl::flat_hash_set<std::string> seen;
  const std::string aliases = ReadFile(dir + "/modules.alias");
  for (absl::string_view line : absl::StrSplit(aliases, '\n')) {
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() != 3 || words[0] != "alias") continue;
    if (seen.insert(std::string(words[1])).second) queries.emplace_back(words[1]);
  }
  const size_t alias_count = queries.size();
  std::vector<std::string> modaliases;
  g_modaliases = &modaliases;
  ::nftw("/sys/devices", CollectModalias, 32, FTW_PHYS);
  g_modaliases = nullptr;
  for (std::string& m : modaliases) {
    if (seen.insert(m).second) queries.push_back(std::move(m));
  }
  ASSERT_GT(alias_count, 1000u);

  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string tmpdir = tmp != nullptr ? tmp : "/tmp";
  const std::string delimiter_conf = tmpdir + "/zz-hotring-compare-delimiter.conf";
  {
    std::ofstream conf(delimiter_conf);
    conf << "install " << kDelimiterName << " echo delimiter\n";
  }
  const std::vector<std::string> kmod_show =
      RunKmod(modprobe, version, delimiter_conf, queries, {"--show-depends"},
              "install echo delimiter ");
  // -b: the blacklist applies to names too (what the daemon asks for a MODALIAS).
  const std::vector<std::string> kmod_show_b =
      RunKmod(modprobe, version, delimiter_conf, queries, {"--show-depends", "-b"},
              "install echo delimiter ");
  const std::vector<std::string> kmod_names =
      RunKmod(modprobe, version, delimiter_conf, queries, {"-R"}, kDelimiterName);
  ASSERT_EQ(kmod_show.size(), queries.size());
  ASSERT_EQ(kmod_show_b.size(), queries.size());
  ASSERT_EQ(kmod_names.size(), queries.size());
  {
    // kmod's answers, kept beside the test's other outputs for a look after a failure.
    std::ofstream cache(tmpdir + "/kmod-show-depends.txt");
    for (size_t i = 0; i < queries.size(); ++i) cache << "# " << queries[i] << "\n" << kmod_show[i];
  }

  std::vector<std::string> config_paths = kKmodConfigDirs;
  config_paths.push_back(delimiter_conf);
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index =
      ModuleIndex::Load({.modules_dir = dir, .config_paths = config_paths});
  ASSERT_TRUE(index.ok()) << index.status();
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));

  size_t show_differences = 0;
  size_t name_differences = 0;
  size_t found = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    const std::string ours = FormatShowDepends(resolver.Probe(queries[i], {}));
    if (ours != kmod_show[i]) {
      if (++show_differences <= 20) {
        ADD_FAILURE() << "--show-depends " << queries[i] << "\nkmod:\n"
                      << kmod_show[i] << "hotring:\n"
                      << ours;
      }
    }
    const std::string ours_b = FormatShowDepends(resolver.Probe(queries[i], {.blacklist_all = true}));
    if (ours_b != kmod_show_b[i]) {
      if (++show_differences <= 20) {
        ADD_FAILURE() << "--show-depends -b " << queries[i] << "\nkmod:\n"
                      << kmod_show_b[i] << "hotring:\n"
                      << ours_b;
      }
    }
    const std::vector<std::string> names = resolver.Lookup(queries[i]);
    std::string ours_names;
    for (const std::string& n : names) absl::StrAppend(&ours_names, n, "\n");
    if (!names.empty()) ++found;
    if (ours_names != kmod_names[i]) {
      if (++name_differences <= 20) {
        ADD_FAILURE() << "-R " << queries[i] << "\nkmod:\n"
                      << kmod_names[i] << "hotring:\n"
                      << ours_names;
      }
    }
  }
  std::printf("compared %zu queries (%zu aliases of %s, %zu MODALIAS strings), %zu resolved: "
              "%zu --show-depends (with and without -b) and %zu -R differences\n",
              queries.size(), alias_count, version.c_str(), queries.size() - alias_count, found,
              show_differences, name_differences);
  EXPECT_EQ(show_differences, 0u);
  EXPECT_EQ(name_differences, 0u);
}

}  // namespace
}  // namespace hotring::hotplug::modules

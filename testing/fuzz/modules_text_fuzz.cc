// Fuzzes the text forms of a module tree and the modprobe.d configuration through the real
// loading path (ModuleIndex::Load builds an index from modules.dep / modules.alias /
// modules.symbols text when no .bin is there) and kmod's resolution over them. The input is
// NUL-separated sections:
//   modules.dep \0 modules.alias \0 modules.symbols \0 modprobe.d/fuzz.conf \0 kernel command line
//   \0 queries (one a line)
// written into a scratch module tree for each run. Beyond "no crash and no hang" (dependency
// and softdep cycles, aliases of aliases):
//   - Load succeeds whatever the text says (bad lines are skipped, as kmod does);
//   - the configuration parser's complaints name the file and line;
//   - every plan is a valid serial order: each module once, each `needs` an earlier module,
//     names normalised ('-' is '_'), a path only for a module to insmod, and the same query
//     resolves to the same plan twice (the negative cache changes nothing).
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "hotplug/modules/kmod_resolver.h"
#include "hotplug/modules/load_plan.h"
#include "hotplug/modules/modprobe_config.h"
#include "hotplug/modules/module_index.h"
#include "testing/fuzz/fuzz_check.h"

namespace hotring::fuzz {
namespace {

namespace modules = hotplug::modules;

constexpr size_t kMaxQueries = 16;

// Where the scratch tree goes: a test's own directory under `bazel test`, else a tmpfs. On a disk
// file system every run's O_TRUNC rewrite makes ext4 start writeback at close (its
// replace-by-truncate heuristic): that block I/O, not the loading, made most of a run's time.
std::string ScratchBase() {
  if (const char* test_tmpdir = ::getenv("TEST_TMPDIR"); test_tmpdir != nullptr) return test_tmpdir;
  struct statfs fs;
  if (::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
      ::access("/dev/shm", W_OK) == 0) {
    return "/dev/shm";
  }
  return "/tmp";
}

// One scratch tree per process, rewritten by every run.
const std::string& ScratchDir() {
  static const std::string* const dir = [] {
    std::string pattern = absl::StrCat(ScratchBase(), "/modules_fuzz.XXXXXX");
    Require(::mkdtemp(pattern.data()) != nullptr, "a scratch directory");
    Require(::mkdir(absl::StrCat(pattern, "/modprobe.d").c_str(), 0755) == 0, "modprobe.d");
    return new std::string(pattern);
  }();
  // Removed when the process exits normally (a crash leaves it for the post-mortem).
  static const bool cleanup_registered = [] {
    return std::atexit([] {
      const std::string& root = *dir;
      for (const char* name : {"/modules.dep", "/modules.alias", "/modules.symbols",
                               "/modprobe.d/fuzz.conf"}) {
        ::unlink((root + name).c_str());
      }
      ::rmdir((root + "/modprobe.d").c_str());
      ::rmdir(root.c_str());
    }) == 0;
  }();
  (void)cleanup_registered;
  return *dir;
}

void WriteFile(const std::string& path, absl::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  Require(fd >= 0, "open a scratch file");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    Require(n > 0, "write a scratch file");
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

void CheckPlan(const modules::LoadPlan& plan, absl::string_view query) {
  Require(plan.query == query, "a plan names its query");
  absl::flat_hash_set<std::string> earlier;
  for (const modules::ModuleToLoad& module : plan.modules) {
    Require(!module.name.empty() && module.name.find('-') == std::string::npos,
            "module names are normalised");
    Require(earlier.insert(module.name).second, "a module appears once in a plan");
    for (const std::string& need : module.needs) {
      Require(need != module.name && earlier.contains(need), "a module needs only earlier ones");
    }
    const int ways = (module.builtin ? 1 : 0) + (module.install_command.empty() ? 0 : 1) +
                     (module.path.empty() ? 0 : 1);
    Require(ways <= 1, "a module is builtin, installed by a command, or loaded from a path");
  }
  Require(!plan.blacklisted || plan.modules.empty(), "a blacklisted query loads nothing");
}

}  // namespace
}  // namespace hotring::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hotring::fuzz;
  namespace modules = hotring::hotplug::modules;
  std::vector<absl::string_view> parts = absl::StrSplit(AsText(data, size), absl::MaxSplits('\0', 5));
  parts.resize(6);
  const std::string& dir = ScratchDir();
  WriteFile(dir + "/modules.dep", parts[0]);
  WriteFile(dir + "/modules.alias", parts[1]);
  WriteFile(dir + "/modules.symbols", parts[2]);
  WriteFile(dir + "/modprobe.d/fuzz.conf", parts[3]);

  // The parser on its own: complaints name where.
  modules::ModprobeConfig config;
  config.ParseFile(parts[3], "fuzz.conf");
  config.ParseKernelCmdline(parts[4]);
  for (const std::string& error : config.errors) {
    // kmod's wording: "FILE line N: ignoring bad line ...", "FILE: command include is
    // deprecated ...", "kernel command line: ignoring bad option ...".
    Require(absl::StartsWith(error, "fuzz.conf line ") || absl::StartsWith(error, "fuzz.conf: ") ||
                absl::StartsWith(error, "kernel command line: "),
            "a complaint says where the bad text was");
  }

  absl::StatusOr<std::unique_ptr<modules::ModuleIndex>> index =
      modules::ModuleIndex::Load({.modules_dir = dir,
                                  .config_paths = {dir + "/modprobe.d"},
                                  .kernel_cmdline = std::string(parts[4])});
  Require(index.ok(), "any text loads (bad lines are skipped)");
  Require((*index)->config().aliases.size() == config.aliases.size() &&
              (*index)->config().softdeps.size() == config.softdeps.size() &&
              (*index)->config().blacklist.size() == config.blacklist.size(),
          "the loaded configuration is the parsed file's");
  const modules::KmodResolver resolver(std::shared_ptr<const modules::ModuleIndex>(std::move(*index)));

  std::vector<absl::string_view> queries = absl::StrSplit(parts[5], '\n', absl::SkipEmpty());
  if (queries.size() > kMaxQueries) queries.resize(kMaxQueries);
  for (const absl::string_view query : queries) {
    for (const bool alias_lookup : {true, false}) {
      absl::StatusOr<modules::LoadPlan> plan = resolver.Resolve(query, alias_lookup);
      if (!plan.ok()) continue;
      CheckPlan(*plan, query);
      absl::StatusOr<modules::LoadPlan> again = resolver.Resolve(query, alias_lookup);
      Require(again.ok() && again->modules == plan->modules &&
                  again->blacklisted == plan->blacklisted,
              "the same query resolves the same way twice");
    }
    const modules::Resolution resolution = resolver.Probe(query, {});
    (void)modules::FormatShowDepends(resolution);
    (void)resolver.Lookup(query);
  }
  return 0;
}

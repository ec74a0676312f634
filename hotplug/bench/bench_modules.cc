#include "hotplug/bench/bench_modules.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/flags.h"
#include "core/json.h"
#include "core/status.h"
#include "hotplug/modules/kmod_resolver.h"
#include "hotplug/modules/module_index.h"

extern char** environ;

namespace hotring::hotplug::bench {
namespace {

using modules::DefaultConfigPaths;
using modules::KmodResolver;
using modules::ModuleIndex;

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// This thread's CPU time: on a shared machine wall time also counts the waits for a core.
double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string DefaultTree() {
  struct utsname u;
  if (::uname(&u) == 0) {
    const std::string dir = absl::StrCat("/lib/modules/", u.release);
    if (::access((dir + "/modules.dep.bin").c_str(), R_OK) == 0) return dir;
  }
  std::vector<std::string> versions;
  if (DIR* d = ::opendir("/lib/modules")) {
    while (const dirent* e = ::readdir(d)) {
      const std::string v = e->d_name;
      if (v[0] != '.' && ::access(("/lib/modules/" + v + "/modules.dep.bin").c_str(), R_OK) == 0) {
        versions.push_back(v);
      }
    }
    ::closedir(d);
  }
  std::sort(versions.begin(), versions.end());
  return versions.empty() ? "" : "/lib/modules/" + versions.back();
}

std::vector<std::string>* g_modaliases = nullptr;

int CollectModalias(const char* path, const struct stat*, int type, struct FTW*) {
  if (type == FTW_F && absl::EndsWith(path, "/modalias")) {
    std::string text = ReadFile(path);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
    if (!text.empty()) g_modaliases->push_back(std::move(text));
  }
  return 0;
}

// What a device would send for a pattern: '*' -> nothing, '?' -> '0', [set] -> its first
// member.
std::string Concrete(absl::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '*') continue;
    if (c == '?') {
      out.push_back('0');
    } else if (c == '[') {
      const size_t close = pattern.find(']', i + 1);
      if (close == absl::string_view::npos) return out;
      out.push_back(pattern[i + 1] == '!' ? 'z' : pattern[i + 1]);
      i = close;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

int RunQuiet(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

struct Figure {
  std::string name;
  size_t count = 0;
  double seconds_per_op = 0;  // wall
  size_t matched = 0;
  double cpu_seconds_per_op = -1;  // this thread's CPU time; -1: not measured (child processes)
};

// What `bench modules` is asked to do.
struct ModulesBench {
  std::string dir;
  int runs = 21;
  int64_t sample = 2000;
  int64_t kmod_sample = 200;
  bool json = false;
  std::string modprobe =
      ::access("/usr/sbin/modprobe", X_OK) == 0 ? "/usr/sbin/modprobe" : "/sbin/modprobe";
};

// The queries: this machine's MODALIAS strings, a sample of modules.alias patterns, and a
// concrete alias made from each sampled pattern.
struct Queries {
  std::vector<std::string> modaliases;
  std::vector<std::string> sampled;
  std::vector<std::string> concrete;
};

Queries CollectQueries(const std::string& dir, size_t sample) {
  Queries q;
  g_modaliases = &q.modaliases;
  ::nftw("/sys/devices", CollectModalias, 32, FTW_PHYS);
  g_modaliases = nullptr;
  std::vector<std::string> patterns;
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view line : absl::StrSplit(ReadFile(dir + "/modules.alias"), '\n')) {
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() == 3 && words[0] == "alias" && seen.insert(std::string(words[1])).second) {
      patterns.emplace_back(words[1]);
    }
  }
  const size_t want = std::min(patterns.size(), sample);
  for (size_t i = 0; i < want; ++i) q.sampled.push_back(patterns[i * patterns.size() / want]);
  for (const std::string& p : q.sampled) q.concrete.push_back(Concrete(p));
  return q;
}

// Resolution per alias, each pass on a fresh resolver (or, warm, on one that saw them all).
Figure ResolveAll(const std::shared_ptr<const ModuleIndex>& index,
                  const std::vector<std::string>& queries, const std::string& name, bool warm,
                  int runs) {
  std::vector<double> per_op;
  std::vector<double> cpu_per_op;
  size_t matched = 0;
  KmodResolver shared(index);
  if (warm) {
    for (const std::string& q : queries) (void)shared.Resolve(q, true);
  }
  for (int run = 0; run < runs; ++run) {
    std::unique_ptr<KmodResolver> fresh;
    const KmodResolver* resolver = &shared;
    if (!warm) {
      fresh = std::make_unique<KmodResolver>(index);
      resolver = fresh.get();
    }
    matched = 0;
    const Clock::time_point start = Clock::now();
    const double cpu_start = ThreadCpuSeconds();
    for (const std::string& q : queries) {
      absl::StatusOr<modules::LoadPlan> plan = resolver->Resolve(q, true);
      if (plan.ok() && !plan->unmatched()) ++matched;
    }
    const double n = static_cast<double>(std::max<size_t>(1, queries.size()));
    cpu_per_op.push_back((ThreadCpuSeconds() - cpu_start) / n);
    per_op.push_back(Seconds(Clock::now() - start) / n);
  }
  return Figure{name, queries.size(), Median(per_op), matched, Median(cpu_per_op)};
}

// kmod: one `modprobe -R` process per query.
Figure KmodAll(const ModulesBench& bench, const std::vector<std::string>& queries,
               const std::string& name) {
  const std::string version = bench.dir.substr(bench.dir.rfind('/') + 1);
  const Clock::time_point start = Clock::now();
  size_t matched = 0;
  for (const std::string& q : queries) {
    const int status = RunQuiet({bench.modprobe, "-R", "-q", "-S", version, "--", q});
    if (status == 0) ++matched;
  }
  return Figure{name, queries.size(),
                Seconds(Clock::now() - start) / std::max<size_t>(1, queries.size()), matched};
}

void PrintJson(const ModulesBench& bench, double load, double load_cpu,
               const std::vector<Figure>& figures) {
  JsonObject o;
  o.String("modules_dir", bench.dir).Int("runs", bench.runs).Double("index_ready_ms", load * 1e3)
      .Double("index_ready_cpu_ms", load_cpu * 1e3);
  std::string list = "[";
  for (size_t i = 0; i < figures.size(); ++i) {
    JsonObject f;
    f.String("name", figures[i].name)
        .Uint("queries", figures[i].count)
        .Uint("matched", figures[i].matched)
        .Double("us_per_query", figures[i].seconds_per_op * 1e6);
    if (figures[i].cpu_seconds_per_op >= 0) {
      f.Double("cpu_us_per_query", figures[i].cpu_seconds_per_op * 1e6);
    }
    absl::StrAppend(&list, i > 0 ? "," : "", f.Build());
  }
  list += "]";
  o.Raw("figures", list);
  std::printf("%s\n", o.Build().c_str());
}

void PrintText(const ModulesBench& bench, const ModuleIndex& index, double load, double load_cpu,
               const std::vector<Figure>& figures, bool have_kmod) {
  std::printf("modules tree: %s (%s)\n", bench.dir.c_str(),
              absl::StrJoin(index.sources(), ", ").c_str());
  std::printf("%-50s %9.3f ms wall %9.3f ms cpu  (median of %d)\n",
              "index ready (load + resolver set-up)", load * 1e3, load_cpu * 1e3, bench.runs);
  for (const Figure& f : figures) {
    if (f.cpu_seconds_per_op >= 0) {
      std::printf("%-50s %9.2f us wall %9.2f us cpu  per query (%zu queries, %zu matched)\n",
                  f.name.c_str(), f.seconds_per_op * 1e6, f.cpu_seconds_per_op * 1e6, f.count,
                  f.matched);
    } else {
      std::printf("%-50s %9.0f us wall per query, one process each (%zu queries, %zu matched)\n",
                  f.name.c_str(), f.seconds_per_op * 1e6, f.count, f.matched);
    }
  }
  if (!have_kmod) {
    std::printf("kmod's modprobe not found at %s: no kmod figures\n", bench.modprobe.c_str());
  }
}

}  // namespace

int BenchModulesCommand(const std::vector<std::string>& args) {
  ModulesBench bench;
  FlagSet flags(
      "bench modules",
      "usage: hotring bench modules [--modules-dir DIR] [--runs N] [--sample N] [--kmod-sample N]\n"
      "                             [--modprobe PATH] [--json]\n"
      "  module index load time, resolution time per alias (this machine's MODALIAS strings and\n"
      "  a sample of modules.alias), and the same aliases resolved by one `modprobe -R` each");
  flags
      .String("--modules-dir", "DIR", &bench.dir,
              "default /lib/modules/`uname -r`, else the newest tree with indexes")
      .Int("--runs", "N", &bench.runs, 1, 10000,
           "index loads and resolution passes (default 21; medians reported)")
      .Int("--sample", "N", &bench.sample, 1, 10'000'000,
           "modules.alias patterns sampled evenly (default 2000)")
      .Int("--kmod-sample", "N", &bench.kmod_sample, 0, 10'000'000,
           "of those, resolved by kmod too (default 200)")
      .String("--modprobe", "PATH", &bench.modprobe,
              "kmod's modprobe (default /usr/sbin/modprobe or /sbin/modprobe)")
      .Bool("--json", &bench.json, "the figures as JSON");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  if (bench.dir.empty()) bench.dir = DefaultTree();
  if (bench.dir.empty()) {
    std::fprintf(stderr, "hotring bench modules: no /lib/modules tree with indexes\n");
    return 1;
  }
  const std::vector<std::string> config_paths = DefaultConfigPaths();

  // 1. Index ready.
  std::vector<double> load_times;
  std::vector<double> load_cpu_times;
  std::shared_ptr<const ModuleIndex> index;
  for (int run = 0; run < bench.runs; ++run) {
    const Clock::time_point start = Clock::now();
    const double cpu_start = ThreadCpuSeconds();
    absl::StatusOr<std::unique_ptr<ModuleIndex>> loaded =
        ModuleIndex::Load({.modules_dir = bench.dir, .config_paths = config_paths});
    if (!loaded.ok()) {
      std::fprintf(stderr, "hotring bench modules: %s\n", loaded.status().ToString().c_str());
      return 1;
    }
    index = std::move(*loaded);
    const KmodResolver resolver(index);
    load_times.push_back(Seconds(Clock::now() - start));
    load_cpu_times.push_back(ThreadCpuSeconds() - cpu_start);
  }

  // 2. Resolution per alias.
  const Queries q = CollectQueries(bench.dir, static_cast<size_t>(bench.sample));
  std::vector<Figure> figures;
  const int runs = bench.runs;
  figures.push_back(
      ResolveAll(index, q.modaliases, "resolve: this machine's MODALIAS strings", false, runs));
  figures.push_back(
      ResolveAll(index, q.sampled, "resolve: modules.alias patterns (sample)", false, runs));
  figures.push_back(
      ResolveAll(index, q.concrete, "resolve: concrete aliases from the sample", false, runs));
  figures.push_back(
      ResolveAll(index, q.modaliases, "resolve: MODALIAS strings, warm resolver", true, runs));

  // 3. kmod: one `modprobe -R` process per query.
  const bool have_kmod = ::access(bench.modprobe.c_str(), X_OK) == 0;
  if (have_kmod) {
    figures.push_back(
        KmodAll(bench, q.modaliases, "kmod modprobe -R: this machine's MODALIAS strings"));
    std::vector<std::string> kmod_queries(
        q.concrete.begin(),
        q.concrete.begin() + std::min<size_t>(q.concrete.size(), bench.kmod_sample));
    figures.push_back(KmodAll(bench, kmod_queries, "kmod modprobe -R: concrete aliases (part)"));
  }

  const double load = Median(load_times);
  const double load_cpu = Median(load_cpu_times);
  if (bench.json) {
    PrintJson(bench, load, load_cpu, figures);
  } else {
    PrintText(bench, *index, load, load_cpu, figures, have_kmod);
  }
  return 0;
}

}  // namespace hotring::hotplug::bench

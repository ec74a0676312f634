#include "hotplug/modules/modprobe_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/unique_fd.h"
#include "hotplug/modules/kmod_resolver.h"
#include "hotplug/modules/module_index.h"
#include "hotplug/modules/show_config.h"

namespace hotring::hotplug::modules {
namespace {

constexpr char kUsage[] =
    "usage: modprobe [options] NAME|ALIAS [PARAM=VALUE...]\n"
    "       modprobe [options] -a NAME|ALIAS...\n"
    "  -a, --all                 every argument is a module to load\n"
    "  -b, --use-blacklist       apply the blacklist to explicit names too\n"
    "  -n, --dry-run, --show     do everything but load\n"
    "  -R, --resolve-alias       print the module names an alias resolves to\n"
    "  -c, --showconfig          print the configuration and the alias indexes\n"
    "  -i, --ignore-install      ignore the module's install command and softdeps\n"
    "  -D, --show-depends        print what would be loaded (insmod/install/builtin)\n"
    "  -S, --set-version V       kernel version (default: uname -r)\n"
    "  -d, --dirname ROOT        modules under ROOT/lib/modules/V\n"
    "  -C, --config PATH         read only these configuration paths (repeatable)\n"
    "  -q, --quiet               no message when a module is not found\n"
    "  -v, --verbose             print the actions taken\n"
    "      --root DIR            configuration and modules under DIR (image building)\n"
    "      --kernel-cmdline TEXT kernel command line instead of /proc/cmdline\n";

struct Args {
  bool all = false;
  bool use_blacklist = false;
  bool dry_run = false;
  bool resolve_alias = false;
  bool show_depends = false;
  bool show_config = false;
  bool ignore_install = false;
  bool quiet = false;
  int verbose = 0;
  std::optional<std::string> version;
  std::optional<std::string> dirname_root;
  std::optional<std::string> root;
  std::optional<std::string> cmdline;
  std::vector<std::string> config_paths;
  std::vector<std::string> positional;
};

// getopt_long's behaviour for kmod's options: bundled short flags, "-SV" and "-S V",
// "--long=V" and "--long V", positionals anywhere, "--" ends options.
std::optional<std::string> ParseArgs(const std::vector<std::string>& argv, Args* args) {
  auto takes_value = [](char c) { return c == 'S' || c == 'd' || c == 'C'; };
  auto set_value = [&](char c, const std::string& v) {
    if (c == 'S') args->version = v;
    if (c == 'd') args->dirname_root = v;
    if (c == 'C') args->config_paths.push_back(v);
  };
  auto set_flag = [&](char c) -> bool {
    switch (c) {
      case 'a': args->all = true; return true;
      case 'b': args->use_blacklist = true; return true;
      case 'n': args->dry_run = true; return true;
      case 'R': args->resolve_alias = true; return true;
      case 'D': args->show_depends = true; return true;
      case 'c': args->show_config = true; return true;
      case 'i': args->ignore_install = true; return true;
      case 'q': args->quiet = true; return true;
      case 'v': ++args->verbose; return true;
      // Accepted and without effect here: force, first-time, syslog.
      case 'f': case 's': return true;
      default: return false;
    }
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      args->positional.insert(args->positional.end(), argv.begin() + i + 1, argv.end());
      break;
    }
    if (absl::StartsWith(a, "--")) {
      std::string name = a.substr(2);
      std::optional<std::string> value;
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
      }
      static const std::pair<const char*, char> kLong[] = {
          {"all", 'a'},          {"use-blacklist", 'b'}, {"dry-run", 'n'},
          {"show", 'n'},         {"resolve-alias", 'R'}, {"show-depends", 'D'},
          {"quiet", 'q'},        {"verbose", 'v'},       {"set-version", 'S'},
          {"dirname", 'd'},      {"config", 'C'},        {"ignore-install", 'i'},
          {"ignore-remove", 'i'}, {"showconfig", 'c'},   {"show-config", 'c'},
          {"force", 'f'},        {"syslog", 's'},        {"first-time", 'f'},
          {"root", 'r'},         {"kernel-cmdline", 'k'}, {"help", 'h'}};
      char c = 0;
      for (const auto& [long_name, short_name] : kLong) {
        if (name == long_name) c = short_name;
      }
      if (c == 0) return absl::StrCat("unrecognized option '", a, "'");
      if (c == 'h') return std::string();
      if (takes_value(c) || c == 'r' || c == 'k') {
        if (!value) {
          if (i + 1 >= argv.size()) return absl::StrCat("option '", a, "' requires an argument");
          value = argv[++i];
        }
        if (c == 'r') {
          args->root = *value;
        } else if (c == 'k') {
          args->cmdline = *value;
        } else {
          set_value(c, *value);
        }
      } else {
        if (value) return absl::StrCat("option '--", name, "' doesn't allow an argument");
        set_flag(c);
      }
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      for (size_t j = 1; j < a.size(); ++j) {
        const char c = a[j];
        if (c == 'h') return std::string();
        if (takes_value(c)) {
          if (j + 1 < a.size()) {
            set_value(c, a.substr(j + 1));
          } else if (i + 1 < argv.size()) {
            set_value(c, argv[++i]);
          } else {
            return absl::StrCat("option requires an argument -- '", std::string(1, c), "'");
          }
          break;
        }
        if (!set_flag(c)) return absl::StrCat("invalid option -- '", std::string(1, c), "'");
      }
      continue;
    }
    args->positional.push_back(a);
  }
  return std::nullopt;
}

// kmod's options_from_array: PARAM=VALUE words joined by spaces, a value with a space and no
// quote of its own quoted.
std::optional<std::string> ExtraOptions(const std::vector<std::string>& words) {
  if (words.size() < 2) return std::nullopt;
  std::string out;
  for (size_t i = 1; i < words.size(); ++i) {
    if (!out.empty()) out.push_back(' ');
    const std::string& w = words[i];
    const size_t eq = w.find('=');
    if (eq != std::string::npos && eq + 1 <= w.size()) {
      const std::string value = w.substr(eq + 1);
      if ((value.empty() || (value[0] != '"' && value[0] != '\'')) &&
          value.find(' ') != std::string::npos) {
        absl::StrAppend(&out, w.substr(0, eq + 1), "\"", value, "\"");
        continue;
      }
    }
    out += w;
  }
  return out;
}

// kmod's "in kernel": /sys/module/NAME/initstate says live (builtins are known from the index).
bool InKernel(const std::string& name) {
  UniqueFd fd(::open(absl::StrCat("/sys/module/", name, "/initstate").c_str(),
                     O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  char buf[16] = {};
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
  return n > 0 && std::strncmp(buf, "live", 4) == 0;
}

int LoadFile(const std::string& path, const std::string& options) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return -errno;
  unsigned flags = 0;
  if (absl::EndsWith(path, ".xz") || absl::EndsWith(path, ".zst") ||
      absl::EndsWith(path, ".gz")) {
    flags |= 4;  // MODULE_INIT_COMPRESSED_FILE: the kernel decompresses
  }
  if (::syscall(SYS_finit_module, fd.get(), options.c_str(), flags) != 0) return -errno;
  return 0;
}

int RunInstall(const std::string& name, const std::string& command) {
  ::setenv("MODPROBE_MODULE", name.c_str(), 1);
  const int status = std::system(command.c_str());
  ::unsetenv("MODPROBE_MODULE");
  if (status == -1) return -errno;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return -WEXITSTATUS(status);
  return 0;
}

// What kmod says on stderr while it reads the configuration and the indexes: every bad
// configuration line (before -q takes effect, as in kmod), and a .bin it cannot use. kmod maps
// the indexes in the order dep, alias, symbols, builtin.alias, builtin and stops at the first
// one it cannot map (a missing builtin.alias does not stop it), so it complains about at most
// one damaged file, and never about one shorter than its header (its own test trees ship empty
// ones); the lookups then reopen each file and lose only the bad one. -vv lists every damaged
// index.
void ReportIndex(const std::string& prog, const ModuleIndex& index, int verbose, bool quiet) {
  for (const std::string& error : index.config().errors) {
    std::fprintf(stderr, "%s: ERROR: %s\n", prog.c_str(), error.c_str());
  }
  if (quiet) return;
  const std::vector<IndexFile>& files = index.index_files();
  if (verbose >= 2) {
    for (const IndexFile& file : files) {
      if (!file.damaged()) continue;
      std::fprintf(stderr, "%s: INFO: %s: %s; nothing is looked up in it\n", prog.c_str(),
                   file.path.c_str(), file.problem.c_str());
    }
    return;
  }
  for (const absl::string_view name : {"modules.dep", "modules.alias", "modules.symbols",
                                       "modules.builtin.alias", "modules.builtin"}) {
    const auto file = std::find_if(files.begin(), files.end(),
                                   [&](const IndexFile& f) { return f.name == name; });
    if (file == files.end() || file->state == IndexFile::State::kBinary) continue;
    if (file->state == IndexFile::State::kCorrupt) {
      std::fprintf(stderr, "%s: ERROR: %s: %s; nothing is looked up in it\n", prog.c_str(),
                   file->path.c_str(), file->problem.c_str());
    }
    if (name != "modules.builtin.alias") break;
  }
}

// The indexes and configuration the arguments name.
ModuleIndexOptions IndexOptions(const Args& args) {
  const std::string root = args.root.value_or("");
  ModuleIndexOptions options;
  if (args.dirname_root || args.version || args.root) {
    std::string version;
    if (args.version) {
      version = *args.version;
    } else {
      struct utsname u;
      if (::uname(&u) == 0) version = u.release;
    }
    options.modules_dir =
        absl::StrCat(root, args.dirname_root.value_or(""), "/lib/modules/", version);
  } else {
    options.modules_dir = DefaultModulesDir();
  }
  if (args.config_paths.empty()) {
    options.config_paths = DefaultConfigPaths(root);
  } else {
    for (const std::string& path : args.config_paths) {
      options.config_paths.push_back(absl::StrCat(root, path));
    }
  }
  options.kernel_cmdline = args.cmdline;
  // As kmod: no tree, or a damaged index, leaves the configuration and whatever indexes are
  // good (install commands, builtins, `-c`).
  options.require_modules_dep = false;
  return options;
}

// Acts on one probe list as kmod's modprobe does (print, load or run, or only print with -n /
// --show-depends). Returns 1 when the module asked for or a dependency failed, else 0.
int RunProbe(const std::string& prog, const Args& args, const Probe& probe) {
  const bool show = args.show_depends || args.verbose > 0;
  const bool ignore_loaded = args.show_depends;
  const bool dry_run = args.dry_run || args.show_depends;
  // The module asked for is builtin or loaded already: nothing to do (kmod's check).
  const bool top_builtin =
      std::any_of(probe.steps.begin(), probe.steps.end(), [&](const ProbeStep& step) {
        return step.name == probe.name && step.action == ProbeStep::Action::kBuiltin;
      });
  if (!ignore_loaded && (top_builtin || InKernel(probe.name))) return 0;
  for (const ProbeStep& step : probe.steps) {
    if (!ignore_loaded && (step.action == ProbeStep::Action::kBuiltin || InKernel(step.name))) {
      continue;
    }
    if (show) {
      Resolution one;
      one.probes.push_back({.name = step.name, .steps = {step}});
      std::fputs(FormatShowDepends(one).c_str(), stdout);
    }
    if (dry_run) continue;
    int err = 0;
    switch (step.action) {
      case ProbeStep::Action::kInsmod:
        err = LoadFile(step.path, step.options);
        break;
      case ProbeStep::Action::kInstall:
        err = RunInstall(step.name,
                         absl::StrReplaceAll(step.command, {{"$CMDLINE_OPTS", step.options}}));
        break;
      case ProbeStep::Action::kBuiltin:
        break;
      case ProbeStep::Action::kNothing:
        err = -ENOENT;
        break;
    }
    // Only the module asked for and its dependencies count; softdeps may fail.
    if (err == -EEXIST || !step.required) err = 0;
    if (err < 0) {
      std::fprintf(stderr, "%s: ERROR: could not insert '%s': %s\n", prog.c_str(),
                   step.name.c_str(),
                   err == -ENOENT ? "Unknown symbol in module, or unknown parameter (see dmesg)"
                                  : std::strerror(-err));
      return 1;
    }
  }
  return 0;
}

}  // namespace

int ModprobeMain(absl::string_view program, const std::vector<std::string>& argv) {
  const std::string prog(program);
  Args args;
  if (std::optional<std::string> error = ParseArgs(argv, &args)) {
    if (error->empty()) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), error->c_str());
    return 1;
  }
  if (args.positional.empty() && !args.show_config) {
    std::fprintf(stderr, "%s: ERROR: missing parameters. See -h.\n", prog.c_str());
    return 1;
  }
  const ModuleIndexOptions options = IndexOptions(args);
  absl::StatusOr<std::unique_ptr<ModuleIndex>> loaded = ModuleIndex::Load(options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s: ERROR: %s\n", prog.c_str(),
                 std::string(loaded.status().message()).c_str());
    return 1;
  }
  std::shared_ptr<const ModuleIndex> index(std::move(*loaded));
  ReportIndex(prog, *index, args.verbose, args.quiet);
  if (args.show_config) {
    std::fputs(FormatShowConfig(*index).c_str(), stdout);
    std::fflush(stdout);
    return std::ferror(stdout) ? 1 : 0;
  }
  auto not_found = [&](const std::string& name) {
    if (args.quiet) return;
    std::fprintf(stderr, "%s: %s: Module %s not found in directory %s\n", prog.c_str(),
                 args.all ? "WARNING" : "FATAL", name.c_str(), options.modules_dir.c_str());
  };
  const KmodResolver resolver(index);

  std::vector<std::pair<std::string, std::optional<std::string>>> queries;
  if (args.all) {
    for (const std::string& name : args.positional) queries.emplace_back(name, std::nullopt);
  } else {
    queries.emplace_back(args.positional[0], ExtraOptions(args.positional));
  }
  int exit_code = 0;
  for (const auto& [query, extra] : queries) {
    if (args.resolve_alias) {
      const std::vector<std::string> names = resolver.Lookup(query);
      if (names.empty()) {
        not_found(query);
        exit_code = 1;
        if (!args.all) break;
        continue;
      }
      for (const std::string& name : names) std::printf("%s\n", name.c_str());
      continue;
    }
    const Resolution resolution = resolver.Probe(query, {.blacklist_all = args.use_blacklist,
                                                         .extra_options = extra,
                                                         .ignore_install = args.ignore_install});
    if (resolution.probes.empty()) {
      not_found(query);
      exit_code = 1;
      if (!args.all) break;
      continue;
    }
    for (const Probe& probe : resolution.probes) {
      if (!probe.blacklisted && RunProbe(prog, args, probe) != 0) exit_code = 1;
    }
  }
  std::fflush(stdout);
  return exit_code;
}

}  // namespace hotring::hotplug::modules

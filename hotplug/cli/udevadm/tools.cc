// `udevadm test`, `test-builtin`, `wait`, `verify` and `hwdb`.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "hotplug/cli/udevadm/deadline.h"
#include "hotplug/cli/udevadm/verbs.h"
#include "hotplug/client/client.h"
#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/local_host.h"
#include "hotplug/udevrules/names.h"
#include "hotplug/udevrules/rule_files.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr char kTestHelp[] =
    "udevadm test [OPTIONS] DEVPATH\n"
    "\n"
    "Test an event run.\n"
    "\n"
    "  -h --help                            Show this help\n"
    "  -V --version                         Show package version\n"
    "  -a --action=ACTION|help              Set action string\n"
    "  -N --resolve-names=early|late|never  When to resolve names\n";

constexpr char kTestBuiltinHelp[] =
    "udevadm test-builtin [OPTIONS] COMMAND DEVPATH\n"
    "\n"
    "Test a built-in command.\n"
    "\n"
    "  -h --help               Print this message\n"
    "  -V --version            Print version of the program\n"
    "\n"
    "  -a --action=ACTION|help Set action string\n"
    "Commands:\n";

constexpr char kWaitHelp[] =
    "udevadm wait [OPTIONS] DEVICE [DEVICE\xe2\x80\xa6]\n"
    "\n"
    "Wait for devices or device symlinks being created.\n"
    "\n"
    "  -h --help             Print this message\n"
    "  -V --version          Print version of the program\n"
    "  -t --timeout=SEC      Maximum time to wait for the device\n"
    "     --initialized=BOOL Wait for devices being initialized by systemd-udevd\n"
    "     --removed          Wait for devices being removed\n"
    "     --settle           Also wait for all queued events being processed\n";

constexpr char kVerifyHelp[] =
    "udevadm verify [OPTIONS] [FILE...]\n"
    "\n"
    "Verify udev rules files.\n"
    "\n"
    "  -h --help                            Show this help\n"
    "  -V --version                         Show package version\n"
    "  -N --resolve-names=early|never       When to resolve names\n";

constexpr char kHwdbHelp[] =
    "udevadm hwdb [OPTIONS]\n"
    "\n"
    "  -h --help            Print this message\n"
    "  -V --version         Print version of the program\n"
    "  -u --update          Update the hardware database\n"
    "  -s --strict          When updating, return non-zero exit value on any parsing error\n"
    "     --usr             Generate in /lib/udev instead of /etc/udev\n"
    "  -t --test=MODALIAS   Query database and print result\n"
    "  -r --root=PATH       Alternative root path in the filesystem\n"
    "\n"
    "NOTE:\n"
    "The sub-command 'hwdb' is deprecated, and is left for backwards compatibility.\n"
    "Please use systemd-hwdb instead.\n";

absl::Status ParseResolveNames(absl::string_view v, udevrules::ResolveNames* out) {
  if (v == "early") {
    *out = udevrules::ResolveNames::kEarly;
  } else if (v == "late") {
    *out = udevrules::ResolveNames::kLate;
  } else if (v == "never") {
    *out = udevrules::ResolveNames::kNever;
  } else {
    return absl::InvalidArgumentError("--resolve-names= takes \"early\", \"late\" or \"never\"");
  }
  return absl::OkStatus();
}

}  // namespace

int TestVerb(const std::vector<std::string>& args) {
  std::string action = "add";
  bool help = false, action_help = false;
  udevrules::ResolveNames resolve = udevrules::ResolveNames::kEarly;
  std::vector<std::string> positionals;
  FlagSet flags("test", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Value("--action|-a", "ACTION", "", [&](absl::string_view v) { return ParseAction(v, "Invalid action", &action, &action_help); })
      .Value("--resolve-names|-N", "WHEN", "", [&](absl::string_view v) { return ParseResolveNames(v, &resolve); })
      .Positionals(&positionals);
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kTestHelp, stdout);
    return 0;
  }
  if (action_help) {
    for (const char* a : kActions) std::printf("%s\n", a);
    return 0;
  }
  if (positionals.empty()) return Fail("test", "syspath parameter missing.");
  std::printf(
      "This program is for debugging only, it does not run any program\n"
      "specified by a RUN key. It may show incorrect results, because\n"
      "some values may be different, or not available at a simulation run.\n"
      "\n");
  std::fflush(stdout);
  const Roots roots = Roots::FromEnvironment();
  absl::StatusOr<udevrules::PasswdFiles> names = udevrules::PasswdFiles::Load("/");
  udevrules::CompileOptions compile;
  compile.resolve_names = resolve;
  if (names.ok()) compile.names = &*names;
  absl::StatusOr<std::unique_ptr<udevrules::CompiledRules>> rules =
      udevrules::LoadRules(udevrules::DefaultRulesDirs(), compile);
  if (!rules.ok()) return Fail("test", absl::StrCat("Failed to read udev rules: ", rules.status().message()));
  absl::StatusOr<std::unique_ptr<UdevDevice>> device = FindDevice(roots, positionals[0], "/sys");
  if (!device.ok()) {
    return Fail("test", absl::StrCat("Failed to open device '", positionals[0], "': No such device"));
  }
  const std::string devpath((*device)->devpath());
  udevrules::LocalHost host({.roots = {.sysfs = roots.sys}, .database_dir = roots.Map("/run/udev/data")});
  // The event as 252's test builds it from sysfs: DEVPATH, the uevent file, ACTION, SUBSYSTEM.
  std::vector<std::pair<std::string, std::string>> env = {{"DEVPATH", devpath}};
  std::string uevent;
  if (host.ReadAttribute(devpath, "uevent", &uevent)) {
    for (absl::string_view line : absl::StrSplit(uevent, '\n', absl::SkipEmpty())) {
      const size_t eq = line.find('=');
      if (eq == absl::string_view::npos) continue;
      std::string key(line.substr(0, eq));
      std::string value(line.substr(eq + 1));
      if (key == "DEVNAME" && !absl::StartsWith(value, "/")) value = absl::StrCat("/dev/", value);
      env.emplace_back(std::move(key), std::move(value));
    }
  }
  env.emplace_back("ACTION", action);
  std::string subsystem;
  if (host.Subsystem(devpath, &subsystem)) env.emplace_back("SUBSYSTEM", subsystem);
  std::vector<udevrules::PropertyView> views;
  for (const auto& [k, v] : env) views.emplace_back(k, v);
  const udevrules::Outcome outcome = udevrules::ExecuteRules(
      **rules, {.action = action, .devpath = devpath, .properties = views}, host, {.debug = true});
  for (const std::string& line : outcome.log) std::fprintf(stderr, "%s\n", line.c_str());
  for (const auto& [k, v] : outcome.properties) std::printf("%s=%s\n", k.c_str(), v.c_str());
  for (const udevrules::RunEntry& run : outcome.run) std::printf("run: '%s'\n", run.command.c_str());
  return 0;
}

int TestBuiltinVerb(const std::vector<std::string>& args) {
  std::string action = "add";
  bool help = false, action_help = false;
  std::vector<std::string> positionals;
  FlagSet flags("test-builtin", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Value("--action|-a", "ACTION", "", [&](absl::string_view v) { return ParseAction(v, "Invalid action", &action, &action_help); })
      .Positionals(&positionals);
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    for (const udev::BuiltinInfo& b : udev::Builtins()) {
      std::fprintf(stderr, "  %-14.*s  %.*s\n", static_cast<int>(b.name.size()), b.name.data(),
                   static_cast<int>(b.help.size()), b.help.data());
    }
    std::fputs(kTestBuiltinHelp, stdout);
    return 0;
  }
  if (action_help) {
    for (const char* a : kActions) std::printf("%s\n", a);
    return 0;
  }
  if (positionals.size() != 2) return Fail("test-builtin", "Expected two arguments: command string and device path.");
  const std::string command = positionals[0];
  const std::string name = command.substr(0, command.find(' '));
  const Roots roots = Roots::FromEnvironment();
  absl::StatusOr<std::unique_ptr<UdevDevice>> device = FindDevice(roots, positionals[1], "/sys");
  if (!device.ok()) {
    return Fail("test-builtin", absl::StrCat("Failed to open device '", positionals[1], "': No such device"));
  }
  const udev::BuiltinInfo* builtin = udev::LookupBuiltinCommand(command);
  if (builtin == nullptr) return Fail("test-builtin", absl::StrCat("Unknown command '", command, "'"));
  if (builtin->run == nullptr) {
    return Fail("test-builtin", absl::StrCat("Builtin command '", command,
                                             "' is not supported by hotring's udevadm (docs/udevadm.md)"));
  }
  // The device's properties as 252's sd_device has them: the uevent file's, then the database's.
  const udev::DirSysfsView view(roots.sys);
  const std::string devpath((*device)->devpath());
  std::vector<std::pair<std::string, std::string>> owned;
  for (const auto& [k, v] : (*device)->Properties()) owned.emplace_back(k, v);
  std::vector<udev::PropertyView> views(owned.begin(), owned.end());
  const udev::BuiltinDevice builtin_device{.sysfs = view, .devpath = devpath, .properties = views};
  std::optional<udev::Hwdb> hwdb;
  if (absl::StatusOr<udev::Hwdb> opened = udev::Hwdb::OpenFirst(); opened.ok()) hwdb = std::move(*opened);
  const udev::DirSysfsLinks links(roots.sys);
  udev::BuiltinResources resources;
  resources.hwdb = hwdb ? &*hwdb : nullptr;
  resources.links = &links;
  const std::vector<std::string> argv = absl::StrSplit(command, ' ', absl::SkipEmpty());
  absl::StatusOr<udev::BuiltinResult> result = builtin->run(builtin_device, argv, resources);
  if (!result.ok()) {
    return Fail("test-builtin", absl::StrCat("Builtin command '", command, "' fails: ", result.status().message()));
  }
  for (const auto& [k, v] : result->properties) std::printf("%s=%s\n", k.c_str(), v.c_str());
  return 0;
}

int WaitVerb(const std::vector<std::string>& args) {
  bool help = false, removed = false, settle = false, initialized = true;
  absl::Duration timeout = absl::InfiniteDuration();
  std::vector<std::string> devices;
  FlagSet flags("wait", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Value("--timeout|-t", "SEC", "",
             [&](absl::string_view v) {
               if (v == "infinity") {
                 timeout = absl::InfiniteDuration();
                 return absl::OkStatus();
               }
               if (!udevrules::ParseSeconds(v, &timeout)) {
                 return absl::InvalidArgumentError(absl::StrCat("Failed to parse timeout value '", v, "'"));
               }
               return absl::OkStatus();
             })
      .Value("--initialized", "BOOL", "",
             [&](absl::string_view v) {
               if (v == "1" || v == "yes" || v == "true" || v == "on" || v == "y" || v == "t") {
                 initialized = true;
               } else if (v == "0" || v == "no" || v == "false" || v == "off" || v == "n" || v == "f") {
                 initialized = false;
               } else {
                 return absl::InvalidArgumentError(absl::StrCat("Failed to parse --initialized= parameter: ", v));
               }
               return absl::OkStatus();
             })
      .Bool("--removed", &removed, "")
      .Bool("--settle", &settle, "")
      .Positionals(&devices);
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kWaitHelp, stdout);
    return 0;
  }
  if (devices.empty()) return Fail("wait", "Too few arguments, expected at least one device path or device symlink.");
  for (const std::string& d : devices) {
    if (!absl::StartsWith(d, "/sys/") && !absl::StartsWith(d, "/dev/")) {
      return Fail("wait", absl::StrCat("Specified path \"", d, "\" does not start with \"/dev/\" or \"/sys/\"."));
    }
  }
  const Roots roots = Roots::FromEnvironment();
  const Deadline deadline(timeout);
  auto ready = [&](const std::string& path) {
    absl::StatusOr<std::unique_ptr<UdevDevice>> device = FindDevice(roots, path, "");
    if (removed) return !device.ok();
    return device.ok() && (!initialized || (*device)->IsInitialized());
  };
  for (;;) {
    bool all = true;
    for (const std::string& d : devices) all = all && ready(d);
    if (all && settle && access(std::string(kDefaultSocket).c_str(), F_OK) == 0) {
      all = Settle(kDefaultSocket, absl::ZeroDuration()).ok();
    }
    if (all && settle) all = access(roots.Map("/run/udev/queue").c_str(), F_OK) != 0;
    if (all) return 0;
    if (deadline.Passed()) {
      std::fprintf(stderr, "Timed out for waiting devices being %s.\n",
                   removed ? "removed" : initialized ? "initialized" : "added");
      return 1;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

int VerifyVerb(const std::vector<std::string>& args) {
  bool help = false;
  udevrules::ResolveNames resolve = udevrules::ResolveNames::kEarly;
  std::vector<std::string> paths;
  FlagSet flags("verify", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Value("--resolve-names|-N", "WHEN", "", [&](absl::string_view v) { return ParseResolveNames(v, &resolve); })
      .Positionals(&paths);
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kVerifyHelp, stdout);
    return 0;
  }
  if (paths.empty()) paths = udevrules::DefaultRulesDirs();
  absl::StatusOr<udevrules::PasswdFiles> names = udevrules::PasswdFiles::Load("/");
  udevrules::CompileOptions options;
  options.resolve_names = resolve;
  if (names.ok()) options.names = &*names;
  const udevrules::VerifyReport report = udevrules::VerifyRules(paths, options);
  std::fputs(report.text.c_str(), stdout);
  return report.ok ? 0 : 1;
}

int HwdbVerb(const std::vector<std::string>& args) {
  bool help = false, update = false;
  std::string test, root;
  FlagSet flags("hwdb", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Bool("--update|-u", &update, "")
      .Switch("--strict|-s", "", [] { return absl::OkStatus(); })
      .Switch("--usr", "", [] { return absl::OkStatus(); })
      .String("--test|-t", "MODALIAS", &test, "")
      .String("--root|-r", "PATH", &root, "");
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kHwdbHelp, stdout);
    return 0;
  }
  if (!update && test.empty()) return Fail("hwdb", "Either --update or --test must be used.");
  // hwdb.bin is systemd's own trie format, read by systemd-udevd and libudev's users;
  // systemd-hwdb (package systemd) compiles it. hotring neither writes nor reads it.
  return Fail("hwdb", absl::StrCat("udevadm hwdb ", update ? "--update" : "--test",
                                   ": not supported by hotring's udevadm; use `systemd-hwdb ",
                                   update ? "update" : "query", "` (docs/udevadm.md)"));
}

}  // namespace hotring::hotplug::udevadm

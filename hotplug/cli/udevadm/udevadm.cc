#include "hotplug/cli/udevadm/udevadm.h"

#include <net/if.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hotplug/cli/udevadm/verbs.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr char kMainHelp[] =
    "udevadm [--help] [--version] [--debug] COMMAND [COMMAND OPTIONS]\n"
    "\n"
    "Send control commands or test the device manager.\n"
    "\n"
    "Commands:\n"
    "  info          Query sysfs or the udev database\n"
    "  trigger       Request events from the kernel\n"
    "  settle        Wait for pending udev events\n"
    "  control       Control the udev daemon\n"
    "  monitor       Listen to kernel and udev events\n"
    "  test          Test an event run\n"
    "  test-builtin  Test a built-in command\n"
    "  wait          Wait for device or device symlink\n"
    "  verify        Verify udev rules files\n"
    "\n"
    "See the udevadm(8) man page for details.\n";

int VersionVerb(const std::vector<std::string>&) { return PrintVersion(); }

int LockVerb(const std::vector<std::string>&) {
  return Fail("lock", "not supported by hotring's udevadm (docs/udevadm.md)");
}

struct Verb {
  const char* name;
  int (*run)(const std::vector<std::string>&);
};

constexpr Verb kVerbs[] = {
    {"info", InfoVerb},       {"trigger", TriggerVerb},
    {"settle", SettleVerb},   {"control", ControlVerb},
    {"monitor", MonitorVerb}, {"test", TestVerb},
    {"test-builtin", TestBuiltinVerb}, {"wait", WaitVerb},
    {"verify", VerifyVerb},   {"hwdb", HwdbVerb},
    {"version", VersionVerb}, {"lock", LockVerb},
};

}  // namespace

absl::Status ParseAction(absl::string_view value, absl::string_view unknown, std::string* action, bool* help) {
  if (value == "help") {
    *help = true;
    return absl::OkStatus();
  }
  for (const char* a : kActions) {
    if (value == a) {
      *action = std::string(value);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(unknown, " '", value, "'"));
}

int PrintVersion() {
  std::printf("%s\n", kUdevVersion);
  return 0;
}

int Fail(absl::string_view verb, absl::string_view message) {
  (void)verb;
  std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  return 1;
}

std::optional<int> ParseVerbFlags(const FlagSet& flags, const std::vector<std::string>& args) {
  absl::StatusOr<FlagsParsed> parsed = flags.Parse(args, stdout);
  if (parsed.ok()) return std::nullopt;
  if (absl::IsCancelled(parsed.status()) || absl::EndsWith(parsed.status().message(), " version")) {
    return PrintVersion();
  }
  std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
  return 1;
}

absl::StatusOr<std::unique_ptr<UdevDevice>> FindDevice(const Roots& roots, absl::string_view name,
                                                       absl::string_view prefix) {
  std::string path(name);
  if (!prefix.empty() && !absl::StartsWith(path, prefix)) path = absl::StrCat(prefix, path);
  if (absl::StartsWith(path, "/sys/") || path == "/sys") {
    return UdevDevice::FromSyspath(roots, path);
  }
  if (!absl::StartsWith(path, "/dev/") || path.size() <= 5) {
    return absl::InvalidArgumentError("not in /dev or /sys");
  }
  struct stat st;
  if (stat(roots.Map(path).c_str(), &st) != 0) return absl::NotFoundError("No such device");
  if (!S_ISBLK(st.st_mode) && !S_ISCHR(st.st_mode)) return absl::NotFoundError("not a device node");
  absl::StatusOr<std::unique_ptr<UdevDevice>> device =
      UdevDevice::FromDevnum(roots, S_ISBLK(st.st_mode) ? 'b' : 'c', st.st_rdev);
  if (!device.ok()) return absl::NotFoundError("No such device");
  return device;
}

int UdevadmMain(const std::vector<std::string>& args) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kMainHelp, stdout);
      return 0;
    }
    if (a == "--version" || a == "-V") return PrintVersion();
    if (a == "--debug" || a == "-d") continue;  // our log is quiet either way
    if (absl::StartsWith(a, "-")) {
      std::fprintf(stderr, "udevadm: unrecognized option '%s'\n", a.c_str());
      return 1;
    }
    break;
  }
  if (i == args.size()) {
    std::fprintf(stderr, "Command verb required.\n");
    return 1;
  }
  const std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  for (const Verb& verb : kVerbs) {
    if (args[i] == verb.name) return verb.run(rest);
  }
  std::fprintf(stderr, "Unknown command verb %s.\n", args[i].c_str());
  return 1;
}

}  // namespace hotring::hotplug::udevadm

// `udevadm info`: one device's record, properties, node, links or path; the attribute walk;
// the whole database (--export-db); its cleanup; the device number of a file's filesystem.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "hotplug/cli/udevadm/deadline.h"
#include "hotplug/cli/udevadm/device.h"
#include "hotplug/cli/udevadm/enumerator.h"
#include "hotplug/cli/udevadm/verbs.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr char kInfoHelp[] =
    "udevadm info [OPTIONS] [DEVPATH|FILE]\n"
    "\n"
    "Query sysfs or the udev database.\n"
    "\n"
    "  -h --help                   Print this message\n"
    "  -V --version                Print version of the program\n"
    "  -q --query=TYPE             Query device information:\n"
    "       name                     Name of device node\n"
    "       symlink                  Pointing to node\n"
    "       path                     sysfs device path\n"
    "       property                 The device properties\n"
    "       all                      All values\n"
    "     --property=NAME          Show only properties by this name\n"
    "     --value                  When showing properties, print only their values\n"
    "  -p --path=SYSPATH           sysfs device path used for query or attribute walk\n"
    "  -n --name=NAME              Node or symlink name used for query or attribute walk\n"
    "  -r --root                   Prepend dev directory to path names\n"
    "  -a --attribute-walk         Print all key matches walking along the chain\n"
    "                              of parent devices\n"
    "  -t --tree                   Show tree of devices\n"
    "  -d --device-id-of-file=FILE Print major:minor of device containing this file\n"
    "  -x --export                 Export key/value pairs\n"
    "  -P --export-prefix          Export the key name with a prefix\n"
    "  -e --export-db              Export the content of the udev database\n"
    "  -c --cleanup-db             Clean up the udev database\n"
    "  -w --wait-for-initialization[=SECONDS]\n"
    "                              Wait for device to be initialized\n"
    "     --no-pager               Do not pipe output into a pager\n";

enum class Action { kQuery, kAttributeWalk, kDeviceIdOfFile, kTree, kExport, kCleanupDb };
enum class Query { kName, kPath, kSymlink, kProperty, kAll };

struct InfoOptions {
  Action action = Action::kQuery;
  Query query = Query::kAll;
  bool root = false;
  bool export_values = false;
  std::optional<std::string> export_prefix;
  std::vector<std::string> properties;
  bool value_only = false;
  std::string device_id_file;
  std::optional<absl::Duration> wait_for_initialization;
  std::vector<std::string> devices;
};

absl::string_view StripDev(absl::string_view path) {
  absl::ConsumePrefix(&path, "/dev/");
  return path;
}

void PrintRecord(UdevDevice& device) {
  std::printf("P: %s\n", std::string(device.devpath()).c_str());
  std::printf("M: %s\n", device.Sysname().c_str());
  if (std::optional<std::string> sysnum = device.Sysnum()) std::printf("R: %s\n", sysnum->c_str());
  const std::optional<std::string> subsystem = device.Subsystem();
  if (subsystem) std::printf("U: %s\n", subsystem->c_str());
  if (std::optional<std::string> devtype = device.DevType()) std::printf("T: %s\n", devtype->c_str());
  if (std::optional<std::pair<unsigned, unsigned>> num = device.Devnum()) {
    std::printf("D: %c %u:%u\n", subsystem == "block" ? 'b' : 'c', num->first, num->second);
  }
  if (std::optional<int> ifindex = device.Ifindex()) std::printf("I: %d\n", *ifindex);
  if (std::optional<std::string> devname = device.DevName()) {
    std::printf("N: %s\n", std::string(StripDev(*devname)).c_str());
    std::printf("L: %d\n", device.DevlinkPriority());
    for (const std::string& link : device.Devlinks()) {
      std::printf("S: %s\n", std::string(StripDev(link)).c_str());
    }
  }
  if (std::optional<uint64_t> seq = device.Diskseq()) {
    std::printf("Q: %llu\n", static_cast<unsigned long long>(*seq));
  }
  if (std::optional<std::string> driver = device.Driver()) std::printf("V: %s\n", driver->c_str());
  for (const auto& [key, value] : device.Properties()) {
    std::printf("E: %s=%s\n", key.c_str(), value.c_str());
  }
  std::printf("\n");
}

bool SkipAttribute(absl::string_view name) {
  return name == "uevent" || name == "dev" || name == "modalias" || name == "resource" ||
         name == "driver" || name == "subsystem" || name == "module";
}

void PrintAttributes(UdevDevice& device, bool parent) {
  std::printf("  looking at %sdevice '%s':\n", parent ? "parent " : "",
              std::string(device.devpath()).c_str());
  std::printf("    %s==\"%s\"\n", parent ? "KERNELS" : "KERNEL", device.Sysname().c_str());
  std::printf("    %s==\"%s\"\n", parent ? "SUBSYSTEMS" : "SUBSYSTEM",
              device.Subsystem().value_or("").c_str());
  std::printf("    %s==\"%s\"\n", parent ? "DRIVERS" : "DRIVER", device.Driver().value_or("").c_str());
  std::vector<std::pair<std::string, std::string>> attrs;
  for (const std::string& name : device.SysattrNames()) {
    if (SkipAttribute(name)) continue;
    absl::StatusOr<std::string> value = device.SysattrValue(name);
    if (value.ok()) {
      // Values that look like paths, or hold anything unprintable, are left out.
      if (!value->empty() && (*value)[0] == '/') continue;
      if (!std::all_of(value->begin(), value->end(),
                       [](char c) { return std::isprint(static_cast<unsigned char>(c)); })) {
        continue;
      }
      attrs.emplace_back(name, *std::move(value));
    } else if (absl::IsPermissionDenied(value.status())) {
      attrs.emplace_back(name, "(not readable)");
    }
  }
  std::sort(attrs.begin(), attrs.end());
  for (const auto& [name, value] : attrs) {
    std::printf("    %s{%s}==\"%s\"\n", parent ? "ATTRS" : "ATTR", name.c_str(), value.c_str());
  }
  std::printf("\n");
}

void PrintDeviceChain(UdevDevice& device) {
  std::printf(
      "\n"
      "Udevadm info starts with the device specified by the devpath and then\n"
      "walks up the chain of parent devices. It prints for every device\n"
      "found, all possible attributes in the udev rules key format.\n"
      "A rule to match, can be composed by the attributes of the device\n"
      "and the attributes from one single parent device.\n"
      "\n");
  PrintAttributes(device, false);
  for (UdevDevice* parent = device.Parent(); parent != nullptr; parent = parent->Parent()) {
    PrintAttributes(*parent, true);
  }
}

int QueryDevice(const InfoOptions& options, UdevDevice& device) {
  switch (options.query) {
    case Query::kName: {
      std::optional<std::string> devname = device.DevName();
      if (!devname) return Fail("info", "No device node found: No such file or directory");
      std::printf("%s\n", options.root ? devname->c_str() : std::string(StripDev(*devname)).c_str());
      return 0;
    }
    case Query::kSymlink: {
      const char* sep = "";
      for (const std::string& link : device.Devlinks()) {
        std::printf("%s%s", sep, options.root ? link.c_str() : std::string(StripDev(link)).c_str());
        sep = " ";
      }
      std::printf("\n");
      return 0;
    }
    case Query::kPath:
      std::printf("%s\n", std::string(device.devpath()).c_str());
      return 0;
    case Query::kProperty:
      for (const auto& [key, value] : device.Properties()) {
        if (!options.properties.empty() &&
            std::find(options.properties.begin(), options.properties.end(), key) ==
                options.properties.end()) {
          continue;
        }
        if (options.export_values) {
          std::printf("%s%s='%s'\n", options.export_prefix.value_or("").c_str(), key.c_str(),
                      value.c_str());
        } else if (options.value_only) {
          std::printf("%s\n", value.c_str());
        } else {
          std::printf("%s=%s\n", key.c_str(), value.c_str());
        }
      }
      return 0;
    case Query::kAll:
      PrintRecord(device);
      return 0;
  }
  return 0;
}

int ExportDb(const Roots& roots) {
  EnumeratorFilter filter;
  absl::StatusOr<std::vector<std::unique_ptr<UdevDevice>>> devices = EnumerateDevices(roots, filter);
  if (!devices.ok()) return Fail("info", absl::StrCat("Failed to scan devices: ", devices.status().message()));
  for (const std::unique_ptr<UdevDevice>& device : *devices) PrintRecord(*device);
  return 0;
}

// The names in a directory, without "." and "..".
std::vector<std::string> DirEntries(int dir_fd) {
  std::vector<std::string> names;
  DIR* dir = fdopendir(dup(dir_fd));
  if (dir == nullptr) return names;
  while (dirent* e = readdir(dir)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  closedir(dir);
  return names;
}

// Removes what `dir` holds, `depth` levels deep, except entries with a mode bit of `keep`
// (the database entries of devices whose rules said db_persist carry the sticky bit).
void CleanupDir(int dir_fd, mode_t keep, int depth) {
  if (depth <= 0) return;
  for (const std::string& name : DirEntries(dir_fd)) {
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if ((st.st_mode & keep) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      const int sub = openat(dir_fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      if (sub >= 0) {
        CleanupDir(sub, keep, depth - 1);
        close(sub);
      }
      unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR);
    } else {
      unlinkat(dir_fd, name.c_str(), 0);
    }
  }
}

// Removes the index entries (links/NAME/ID, tags/TAG/ID) whose device kept no database entry,
// and the directories left empty: a db_persist device keeps its links and tags, as in 252.
void CleanupIndexDir(int dir_fd, int data_fd) {
  for (const std::string& name : DirEntries(dir_fd)) {
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      const int sub = openat(dir_fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      if (sub >= 0) {
        CleanupIndexDir(sub, data_fd);
        close(sub);
      }
      unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR);  // fails while it still holds entries
    } else if (data_fd < 0 || faccessat(data_fd, name.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
      unlinkat(dir_fd, name.c_str(), 0);
    }
  }
}

void CleanupDb(const Roots& roots) {
  const int data_fd = open(roots.Map("/run/udev/data").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (data_fd >= 0) CleanupDir(data_fd, S_ISVTX, 1);
  for (const char* index : {"/run/udev/links", "/run/udev/tags"}) {
    const int fd = open(roots.Map(index).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    CleanupIndexDir(fd, data_fd);
    close(fd);
  }
  if (data_fd >= 0) close(data_fd);
  const struct {
    const char* dir;
    int depth;
  } kDirs[] = {{"/run/udev/static_node-tags", 2}, {"/run/udev/watch", 1}};
  for (const auto& d : kDirs) {
    const int fd = open(roots.Map(d.dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    CleanupDir(fd, 0, d.depth);
    close(fd);
  }
}

int StatDevice(const InfoOptions& options) {
  struct stat st;
  if (stat(options.device_id_file.c_str(), &st) != 0) {
    return Fail("info", absl::StrCat("Failed to stat '", options.device_id_file, "': ", strerror(errno)));
  }
  if (options.export_values) {
    const std::string prefix = options.export_prefix.value_or("INFO_");
    std::printf("%sMAJOR=%u\n%sMINOR=%u\n", prefix.c_str(), major(st.st_dev), prefix.c_str(),
                minor(st.st_dev));
  } else {
    std::printf("%u:%u\n", major(st.st_dev), minor(st.st_dev));
  }
  return 0;
}

// --tree: the devices below /sys/devices as a tree, as `udevadm info --tree` of later
// versions draws it; 252 has the flag in its help but not the code, so this prints the list.
int PrintTree(const Roots& roots, const std::vector<std::string>& devices) {
  EnumeratorFilter filter;
  absl::StatusOr<std::vector<std::unique_ptr<UdevDevice>>> all = EnumerateDevices(roots, filter);
  if (!all.ok()) return Fail("info", all.status().message());
  for (const std::unique_ptr<UdevDevice>& d : *all) {
    bool below = devices.empty();
    for (const std::string& root : devices) {
      below = below || d->syspath() == root || absl::StartsWith(d->syspath(), root + "/");
    }
    if (below) std::printf("%s\n", d->syspath().c_str());
  }
  return 0;
}

// -q and -a for each named device, in order; the first failure ends it.
int ShowDevices(const Roots& roots, const InfoOptions& options) {
  if (options.devices.empty()) {
    return Fail("info", "A device name or path is required");
  }
  if (options.action == Action::kAttributeWalk && options.devices.size() > 1) {
    return Fail("info", "Only one device may be specified with -a/--attribute-walk");
  }
  for (const std::string& name : options.devices) {
    absl::StatusOr<std::unique_ptr<UdevDevice>> device = FindDevice(roots, name, "");
    if (!device.ok()) {
      if (absl::IsInvalidArgument(device.status())) {
        return Fail("info", absl::StrCat("Bad argument \"", name,
                                         "\", expected an absolute path in /dev/ or /sys/ or a "
                                         "unit name: Invalid argument"));
      }
      return Fail("info", absl::StrCat("Unknown device \"", name, "\": No such device"));
    }
    if (options.wait_for_initialization) {
      const Deadline deadline(*options.wait_for_initialization);
      while (!(*device)->IsInitialized()) {
        if (deadline.Passed()) {
          return Fail("info", absl::StrCat("Failed to wait for device \"", name,
                                           "\" to be initialized: Connection timed out"));
        }
        absl::SleepFor(absl::Milliseconds(50));
        absl::StatusOr<std::unique_ptr<UdevDevice>> again = FindDevice(roots, name, "");
        if (again.ok()) device = std::move(again);
      }
    }
    int r = 0;
    if (options.action == Action::kQuery) {
      r = QueryDevice(options, **device);
    } else {
      PrintDeviceChain(**device);
    }
    if (r != 0) return r;
  }
  return 0;
}

}  // namespace

int InfoVerb(const std::vector<std::string>& args) {
  InfoOptions options;
  bool help = false;
  std::vector<std::string> positionals;
  std::vector<std::string> named;  // -n and -p, in order
  FlagSet flags("info", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Value("--query|-q", "TYPE", "",
             [&](absl::string_view v) {
               options.action = Action::kQuery;
               if (v == "property" || v == "env") {
                 options.query = Query::kProperty;
               } else if (v == "name") {
                 options.query = Query::kName;
               } else if (v == "symlink") {
                 options.query = Query::kSymlink;
               } else if (v == "path") {
                 options.query = Query::kPath;
               } else if (v == "all") {
                 options.query = Query::kAll;
               } else {
                 return absl::InvalidArgumentError("unknown query type");
               }
               return absl::OkStatus();
             })
      .Value("--property", "NAME", "",
             [&](absl::string_view v) {
               for (absl::string_view p : absl::StrSplit(v, ',', absl::SkipEmpty())) {
                 options.properties.emplace_back(p);
               }
               return absl::OkStatus();
             })
      .Bool("--value", &options.value_only, "")
      .Value("--path|-p", "SYSPATH", "",
             [&](absl::string_view v) {
               named.push_back(absl::StartsWith(v, "/sys/") ? std::string(v)
                                                            : absl::StrCat("/sys/", absl::StripPrefix(v, "/")));
               return absl::OkStatus();
             })
      .Value("--name|-n", "NAME", "",
             [&](absl::string_view v) {
               named.push_back(absl::StartsWith(v, "/dev/") ? std::string(v) : absl::StrCat("/dev/", v));
               return absl::OkStatus();
             })
      .Bool("--root|-r", &options.root, "")
      .Store("--attribute-walk|-a", &options.action, Action::kAttributeWalk, "")
      .Store("--tree|-t", &options.action, Action::kTree, "")
      .Value("--device-id-of-file|-d", "FILE", "",
             [&](absl::string_view v) {
               options.action = Action::kDeviceIdOfFile;
               options.device_id_file = std::string(v);
               return absl::OkStatus();
             })
      .Bool("--export|-x", &options.export_values, "")
      .Value("--export-prefix|-P", "PREFIX", "",
             [&](absl::string_view v) {
               options.export_values = true;
               options.export_prefix = std::string(v);
               return absl::OkStatus();
             })
      .Store("--export-db|-e", &options.action, Action::kExport, "")
      .Store("--cleanup-db|-c", &options.action, Action::kCleanupDb, "")
      .OptionalValue("--wait-for-initialization|-w", "SECONDS", "",
                     [&](std::optional<absl::string_view> v) {
                       absl::Duration d = absl::InfiniteDuration();
                       if (v) {
                         absl::StatusOr<absl::Duration> s = FlagSet::ParseSeconds(*v);
                         if (!s.ok()) return s.status();
                         d = *s;
                       }
                       options.wait_for_initialization = d;
                       return absl::OkStatus();
                     })
      .Switch("--no-pager", "", [] { return absl::OkStatus(); })
      .Positionals(&positionals);
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kInfoHelp, stdout);
    return 0;
  }
  const Roots roots = Roots::FromEnvironment();
  options.devices = named;
  options.devices.insert(options.devices.end(), positionals.begin(), positionals.end());

  switch (options.action) {
    case Action::kDeviceIdOfFile:
      if (!options.devices.empty()) {
        return Fail("info", "Positional arguments are not allowed with -d/--device-id-of-file.");
      }
      return StatDevice(options);
    case Action::kExport:
      return ExportDb(roots);  // 252 ignores devices named with it
    case Action::kCleanupDb:
      if (!options.devices.empty()) {
        return Fail("info", "Positional arguments are not allowed with -c/--cleanup-db.");
      }
      CleanupDb(roots);
      return 0;
    case Action::kTree:
      return PrintTree(roots, options.devices);
    case Action::kQuery:
    case Action::kAttributeWalk:
      break;
  }
  return ShowDevices(roots, options);
}

}  // namespace hotring::hotplug::udevadm

// Runs one of hotring's udev builtins on a device of a sysfs tree and prints the answer as the
// builtins' goldens hold it, to compare with `udevadm test-builtin` (make_goldens.sh,
// compare_live.sh):
//
//   builtin_tool SYSFS_ROOT DEVPATH 'COMMAND' [--hwdb FILE] [--dev-root DIR] [--links]
//                [--btrfs-control PATH] [--seats-dir DIR]
//
// --links follows the tree's symlinks for net_id (SR-IOV); net_setup_link reads this machine's
// .link files and asks the kernel about the interface (read-only: nothing is applied).
// --btrfs-control and --seats-dir replace /dev/btrfs-control and /run/systemd/seats/, so that
// btrfs and uaccess see the /dev and /run the goldens were made with, not this machine's.
#include <stdio.h>
#include <sys/utsname.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udev/sysfs_links.h"
#include "testing/udevbuiltins/builtin_runner.h"

namespace udev = hotring::hotplug::udev;

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string out = s.str();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: builtin_tool SYSFS_ROOT DEVPATH COMMAND [--hwdb FILE] [--dev-root DIR] [--links]"
            " [--btrfs-control PATH] [--seats-dir DIR]\n");
    return 2;
  }
  const std::string root = argv[1];
  std::string devpath = argv[2];
  if (devpath.rfind("/sys/", 0) == 0) devpath = devpath.substr(4);
  const std::string command = argv[3];
  std::string hwdb_path, dev_root, btrfs_control = "/dev/btrfs-control", seats_dir = "/run/systemd/seats/";
  bool links = false;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--hwdb" && i + 1 < argc) hwdb_path = argv[++i];
    if (a == "--dev-root" && i + 1 < argc) dev_root = argv[++i];
    if (a == "--btrfs-control" && i + 1 < argc) btrfs_control = argv[++i];
    if (a == "--seats-dir" && i + 1 < argc) seats_dir = argv[++i];
    if (a == "--links") links = true;
  }
  udev::DirSysfsView view(root);
  udev::DirSysfsLinks sysfs_links(root);
  std::optional<udev::Hwdb> hwdb;
  if (!hwdb_path.empty()) {
    absl::StatusOr<udev::Hwdb> h = udev::Hwdb::Open(hwdb_path);
    if (!h.ok()) {
      fprintf(stderr, "builtin_tool: %s\n", std::string(h.status().message()).c_str());
      return 1;
    }
    hwdb.emplace(std::move(*h));
  }
  struct utsname u;
  uname(&u);
  udev::LinkSystemFacts facts{.machine_id = ReadAll("/etc/machine-id"),
                              .kernel_cmdline = ReadAll("/proc/cmdline"),
                              .kernel_release = u.release,
                              .architecture = "x86-64"};
  facts.hostname = ReadAll("/proc/sys/kernel/hostname");
  const udev::LinkConfigs configs = udev::LinkConfigs::Load(facts);
  udev::RealLinkSystem link_system;
  udev::RealBuiltinSystem system(btrfs_control, seats_dir);
  udev::BuiltinResources res;
  res.hwdb = hwdb.has_value() ? &*hwdb : nullptr;
  res.naming = udev::NamingSchemeFor(facts.kernel_cmdline);
  res.links = links ? &sysfs_links : nullptr;
  res.link_configs = &configs;
  res.link_system = &link_system;
  res.system = &system;
  for (const std::string& line : hotring::testing::RunBuiltinLikeUdevadm(view, devpath, command, dev_root, res)) {
    printf("%s\n", line.c_str());
  }
  return 0;
}

// Builds the udevadm comparison tree in a directory: the udev test devices
// (testing/udev_devices.h) plus what makes udevadm's enumeration order and lookups show: the
// kernel's /sys/dev/{block,char}/MAJ:MIN links, kernel modules, a sound card (its control
// device goes last), md and dm block devices (enumerated after everything else), and sibling
// names that sort differently by string and by path component ("a-b" against "a/c").
// make_goldens.sh binds it over /sys for Debian's udevadm; the tests run hotring's udevadm
// on the same tree. Prints one line per catalog device: "NAME DEVPATH".
//
//   make_tree OUT_DIR      (OUT_DIR must not exist; its parent must)
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "testing/fake_sysfs.h"
#include "testing/udev_devices.h"

namespace {

using hotring::testing::FakeSysfs;

absl::Status AddExtras(FakeSysfs& sys) {
  for (const char* module : {"e1000", "usbhid", "virtio_blk"}) {
    if (absl::Status s = sys.AddModule(module); !s.ok()) return s;
  }
  const std::vector<FakeSysfs::Device> devices = {
      {.devpath = "/devices/pci0000:00/0000:00:08.0", .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
       .uevent = {{"PCI_ID", "8086:2668"}}},
      {.devpath = "/devices/pci0000:00/0000:00:08.0/sound/card0", .subsystem = "sound",
       .uevent = {}},
      {.devpath = "/devices/pci0000:00/0000:00:08.0/sound/card0/controlC0", .subsystem = "sound",
       .uevent = {{"MAJOR", "116"}, {"MINOR", "1"}, {"DEVNAME", "snd/controlC0"}}},
      {.devpath = "/devices/pci0000:00/0000:00:08.0/sound/card0/pcmC0D0p", .subsystem = "sound",
       .uevent = {{"MAJOR", "116"}, {"MINOR", "16"}, {"DEVNAME", "snd/pcmC0D0p"}}},
      {.devpath = "/devices/virtual/block/dm-0", .subsystem = "block",
       .uevent = {{"MAJOR", "253"}, {"MINOR", "0"}, {"DEVNAME", "dm-0"}, {"DEVTYPE", "disk"}}},
      {.devpath = "/devices/virtual/block/md0", .subsystem = "block",
       .uevent = {{"MAJOR", "9"}, {"MINOR", "0"}, {"DEVNAME", "md0"}, {"DEVTYPE", "disk"}}},
      {.devpath = "/devices/virtual/block/loop0", .subsystem = "block",
       .uevent = {{"MAJOR", "7"}, {"MINOR", "0"}, {"DEVNAME", "loop0"}, {"DEVTYPE", "disk"}}},
      {.devpath = "/devices/virtual/misc/a-b", .subsystem = "misc",
       .uevent = {{"MAJOR", "10"}, {"MINOR", "200"}, {"DEVNAME", "a-b"}}},
      {.devpath = "/devices/virtual/misc/a", .subsystem = "misc",
       .uevent = {{"MAJOR", "10"}, {"MINOR", "201"}, {"DEVNAME", "a"}}},
      {.devpath = "/devices/virtual/misc/a/c", .subsystem = "misc", .uevent = {}},
      {.devpath = "/devices/virtual/net/lo", .subsystem = "net",
       .uevent = {{"INTERFACE", "lo"}, {"IFINDEX", "1"}},
       .attributes = {{"address", "00:00:00:00:00:00"}, {"mtu", "65536"}}},
  };
  for (const auto& d : devices) {
    if (absl::Status s = sys.AddDevice(d); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// /sys/dev/{block,char}/MAJ:MIN -> the device, for every device with MAJOR and MINOR.
absl::Status AddDevLinks(const std::string& root) {
  FILE* find = popen(absl::StrCat("cd '", root, "' && find devices -name uevent").c_str(), "r");
  if (find == nullptr) return absl::InternalError("popen");
  char line[4096];
  std::vector<std::string> uevents;
  while (fgets(line, sizeof line, find) != nullptr) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    uevents.push_back(s);
  }
  pclose(find);
  mkdir((root + "/dev").c_str(), 0755);
  mkdir((root + "/dev/block").c_str(), 0755);
  mkdir((root + "/dev/char").c_str(), 0755);
  for (const std::string& uevent : uevents) {
    FILE* f = fopen((root + "/" + uevent).c_str(), "r");
    if (f == nullptr) continue;
    std::string major, minor;
    while (fgets(line, sizeof line, f) != nullptr) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      if (s.rfind("MAJOR=", 0) == 0) major = s.substr(6);
      if (s.rfind("MINOR=", 0) == 0) minor = s.substr(6);
    }
    fclose(f);
    if (major.empty() || minor.empty()) continue;
    const std::string dir = uevent.substr(0, uevent.size() - strlen("/uevent"));
    char target[4096];
    const ssize_t n =
        readlink((root + "/" + dir + "/subsystem").c_str(), target, sizeof target - 1);
    const bool block = n > 0 && std::string(target, n).find("/class/block") != std::string::npos;
    const std::string link = absl::StrCat(root, "/dev/", block ? "block/" : "char/", major, ":", minor);
    if (symlink(absl::StrCat("../../", dir).c_str(), link.c_str()) != 0) {
      return absl::InternalError(absl::StrCat("symlink ", link));
    }
  }
  return absl::OkStatus();
}

// The catalog, then the extras and the /sys/dev links (which must see every device).
absl::StatusOr<std::vector<hotring::testing::CatalogDevice>> BuildComparisonTree(FakeSysfs& sys) {
  HOTRING_ASSIGN_OR_RETURN(std::vector<hotring::testing::CatalogDevice> devices,
                           hotring::testing::BuildUdevCatalog(sys));
  HOTRING_RETURN_IF_ERROR(AddExtras(sys));
  HOTRING_RETURN_IF_ERROR(AddDevLinks(sys.root()));
  return devices;
}

}  // namespace

int main(int argc, char** argv) {
  return hotring::testing::WriteCatalogTreeMain(argc, argv, "make_tree", BuildComparisonTree);
}

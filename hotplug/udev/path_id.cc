// path_id: a persistent name for where a device hangs (bus addresses from the device up to the
// root), as udev's path_id builtin composes it.
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udev {
namespace {

void Prepend(std::string& path, absl::string_view part) {
  path = path.empty() ? std::string(part) : absl::StrCat(part, "-", path);
}

// The topmost device of an unbroken run of ancestors in `subsystem`, starting at `devpath`.
std::string SkipSubsystem(const SysfsView& view, const std::string& devpath,
                          absl::string_view subsystem) {
  std::string dev = devpath;
  std::optional<std::string> p = devpath;
  while (p.has_value() && SubsystemOf(view, *p) == subsystem) {
    dev = *p;
    p = ParentOf(view, dev);
  }
  return dev;
}

// "H:B:T:L" of a scsi_device sysname.
bool ParseHctl(absl::string_view name, int (&hctl)[4]) {
  std::vector<absl::string_view> f = absl::StrSplit(name, ':');
  if (f.size() != 4) return false;
  for (int i = 0; i < 4; ++i) {
    if (!absl::SimpleAtoi(f[i], &hctl[i])) return false;
  }
  return true;
}

std::optional<std::string> HandleScsiAta(const SysfsView& view, const std::string& parent,
                                         std::string& path, std::string& compat) {
  int hctl[4];
  if (!ParseHctl(SysnameOf(parent), hctl)) return std::nullopt;
  const std::optional<std::string> host = ParentWith(view, parent, "scsi", "scsi_host");
  if (!host.has_value()) return std::nullopt;
  const std::optional<std::string> ata = ParentOf(view, *host);
  if (!ata.has_value()) return std::nullopt;
  const std::optional<std::string> port_no =
      view.Attribute(absl::StrCat("/class/ata_port/", SysnameOf(*ata)), "port_no");
  if (!port_no.has_value()) return std::nullopt;
  if (hctl[1] != 0) {
    Prepend(path, absl::StrFormat("ata-%s.%u.0", *port_no, hctl[1]));  // behind a port multiplier
  } else {
    Prepend(path, absl::StrFormat("ata-%s.%u", *port_no, hctl[2]));
  }
  Prepend(compat, absl::StrCat("ata-", *port_no));
  return parent;
}

std::optional<std::string> HandleScsiDefault(const SysfsView& view, const std::string& parent,
                                             std::string& path) {
  const std::optional<std::string> host = ParentWith(view, parent, "scsi", "scsi_host");
  if (!host.has_value()) return std::nullopt;
  int hctl[4];
  if (!ParseHctl(SysnameOf(parent), hctl)) return std::nullopt;
  // udev rebases the host number on the smallest hostN beside this host (racy by its own
  // admission, but that is the name it gives).
  const std::string base = host->substr(0, host->rfind('/'));
  int basenum = -1;
  for (const std::string& name : view.List(base)) {
    int n;
    if (!absl::StartsWith(name, "host") || !absl::SimpleAtoi(name.substr(4), &n) || n < 0) continue;
    if (basenum == -1 || n < basenum) basenum = n;
  }
  if (basenum == -1) return host;
  Prepend(path, absl::StrFormat("scsi-%u:%u:%u:%u", hctl[0] - basenum, hctl[1], hctl[2], hctl[3]));
  return host;
}

std::optional<std::string> HandleScsi(const SysfsView& view, const std::string& parent,
                                      std::string& path, std::string& compat,
                                      bool& supported_parent) {
  if (DevTypeOf(view, parent) != "scsi_device") return parent;
  if (std::optional<std::string> id = view.Attribute(parent, "ieee1394_id"); id.has_value()) {
    Prepend(path, absl::StrCat("ieee1394-0x", *id));
    supported_parent = true;
    return SkipSubsystem(view, parent, "scsi");
  }
  // Fibre channel, SAS, iSCSI and Hyper-V transports need class lookups this prober does not
  // make: no ID_PATH for them (udev would give one).
  if (absl::StrContains(parent, "/rport-") || absl::StrContains(parent, "/end_device-") ||
      absl::StrContains(parent, "/session") || absl::StrContains(parent, "/vmbus_") ||
      absl::StrContains(parent, "/VMBUS")) {
    return std::nullopt;
  }
  if (absl::StrContains(parent, "/ata")) return HandleScsiAta(view, parent, path, compat);
  return HandleScsiDefault(view, parent, path);
}

std::string PathTag(absl::string_view path) {
  std::string tag;
  for (const char c : path) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-') {
      tag.push_back(c);
      continue;
    }
    if (tag.empty() || tag.back() == '_') continue;  // no leading '_', no '__'
    tag.push_back('_');
  }
  while (!tag.empty() && tag.back() == '_') tag.pop_back();
  return tag;
}

}  // namespace

Properties PathId(const SysfsView& view, absl::string_view devpath) {
  std::string path;
  std::string compat;
  bool supported_transport = false;
  bool supported_parent = false;
  std::optional<std::string> parent(devpath);
  while (parent.has_value()) {
    const std::string subsys = SubsystemOf(view, *parent);
    const std::string sysname = SysnameOf(*parent);
    auto simple = [&](absl::string_view prefix, bool transport) {
      Prepend(path, absl::StrCat(prefix, "-", sysname));
      if (!compat.empty()) Prepend(compat, absl::StrCat(prefix, "-", sysname));
      parent = SkipSubsystem(view, *parent, subsys);
      supported_parent = true;
      if (transport) supported_transport = true;
    };
    if (subsys.empty()) {
    } else if (subsys == "scsi_tape") {
      if (path.empty()) {
        if (absl::StartsWith(sysname, "nst") && sysname.size() > 3 &&
            absl::string_view("lma").find(sysname[3]) != absl::string_view::npos) {
          Prepend(path, absl::StrCat("nst", sysname.substr(3, 1)));
        } else if (absl::StartsWith(sysname, "st") && sysname.size() > 2 &&
                   absl::string_view("lma").find(sysname[2]) != absl::string_view::npos) {
          Prepend(path, absl::StrCat("st", sysname.substr(2, 1)));
        }
      }
    } else if (subsys == "scsi") {
      parent = HandleScsi(view, *parent, path, compat, supported_parent);
      supported_transport = true;
    } else if (subsys == "usb") {
      const std::string devtype = DevTypeOf(view, *parent);
      const size_t dash = sysname.find('-');
      if ((devtype == "usb_interface" || devtype == "usb_device") && dash != std::string::npos) {
        // The host number can change across boots; the topology after it cannot: always "0".
        Prepend(path, absl::StrCat("usb-0:", sysname.substr(dash + 1)));
        parent = SkipSubsystem(view, *parent, "usb");
      }
      supported_transport = true;
    } else if (subsys == "bcma") {
      unsigned core;
      if (std::sscanf(sysname.c_str(), "bcma%*u:%u", &core) == 1) {
        Prepend(path, absl::StrCat("bcma-", core));
      } else {
        parent.reset();
      }
      supported_transport = true;
    } else if (subsys == "serio") {
      const std::string sysnum = SysnumOf(*parent);
      if (!sysnum.empty()) {
        Prepend(path, absl::StrCat("serio-", sysnum));
        parent = SkipSubsystem(view, *parent, "serio");
      }
    } else if (subsys == "pci") {
      simple("pci", false);
    } else if (subsys == "platform") {
      simple("platform", true);
    } else if (subsys == "acpi") {
      simple("acpi", false);
    } else if (subsys == "xen") {
      simple("xen", false);
    } else if (subsys == "virtio") {
      parent = SkipSubsystem(view, *parent, "virtio");
      supported_transport = true;
    } else if (subsys == "scm" || subsys == "ccw" || subsys == "ccwgroup" || subsys == "iucv") {
      simple(subsys, true);
    } else if (subsys == "nvme") {
      if (std::optional<std::string> nsid = view.Attribute(devpath, "nsid"); nsid.has_value()) {
        Prepend(path, absl::StrCat("nvme-", *nsid));
        if (!compat.empty()) Prepend(compat, absl::StrCat("nvme-", *nsid));
        parent = SkipSubsystem(view, *parent, "nvme");
        supported_parent = true;
        supported_transport = true;
      }
    } else if (subsys == "spi") {
      const std::string sysnum = SysnumOf(*parent);
      if (!sysnum.empty()) {
        Prepend(path, absl::StrCat("cs-", sysnum));
        parent = SkipSubsystem(view, *parent, "spi");
      }
    }
    if (!parent.has_value()) break;
    parent = ParentOf(view, *parent);
  }
  Properties out;
  if (path.empty() || !supported_parent) return out;
  // Block devices without a known transport have no predictable name.
  if (SubsystemOf(view, devpath) == "block" && !supported_transport) return out;
  out.emplace_back("ID_PATH", path);
  out.emplace_back("ID_PATH_TAG", PathTag(path));
  if (!compat.empty()) out.emplace_back("ID_PATH_ATA_COMPAT", compat);
  return out;
}

}  // namespace hotring::hotplug::udev

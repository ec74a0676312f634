#include "hotplug/udevcompat/links.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hotplug/devroot/dev_root.h"
#include "hotplug/udevcompat/escape.h"

namespace hotring::hotplug::udevcompat {
namespace {

std::string KernelName(const Event& event) {
  const size_t slash = event.devpath.rfind('/');
  return event.devpath.substr(slash + 1);
}

// "-part%n" for partitions: %n is the kernel number (the trailing digits of the name).
std::string PartSuffix(const Event& event, bool partition) {
  if (!partition) return "";
  const std::string name = KernelName(event);
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  return absl::StrCat("-part", name.substr(i));
}

bool Contains(absl::string_view s, absl::string_view what) { return absl::StrContains(s, what); }

}  // namespace

bool StorageKernelName(absl::string_view name) {
  for (absl::string_view prefix : {"loop", "mmcblk", "msblk", "mspblk", "nvme", "sd", "sr", "vd",
                                   "xvd", "bcache", "cciss", "dasd", "ubd", "ubi", "scm", "pmem",
                                   "nbd", "zd"}) {
    if (absl::StartsWith(name, prefix)) return true;
  }
  return false;
}

std::string InputClass(const Properties& props, const LinkFacts& facts) {
  std::string cls;
  if (!PropertyValue(props, "ID_INPUT_KEYBOARD").empty()) cls = "kbd";
  if (!PropertyValue(props, "ID_INPUT_MOUSE").empty()) cls = "mouse";
  if (!PropertyValue(props, "ID_INPUT_TOUCHPAD").empty()) cls = "mouse";
  if (!PropertyValue(props, "ID_INPUT_TABLET").empty()) cls = "mouse";
  if (!PropertyValue(props, "ID_INPUT_JOYSTICK").empty()) cls = "joystick";
  if (facts.driver == "pcspkr") cls = "spkr";
  if (Contains(facts.name, "dvb") || Contains(facts.name, "DVB") || Contains(facts.name, " IR ")) cls = "ir";
  return cls;
}

std::vector<std::string> PersistentLinks(const Event& event, const Properties& props,
                                         const LinkFacts& facts, std::vector<std::string>* refused) {
  std::vector<std::string> links;
  if (event.action == "remove" || event.devname.empty()) return links;
  const std::string kernel = KernelName(event);
  auto p = [&](absl::string_view key) { return PropertyValue(props, key); };
  if (event.subsystem == "block" && StorageKernelName(kernel)) {
    const std::string devtype(event.Get("DEVTYPE").value_or(""));
    const bool partition = devtype == "partition";
    const std::string part = PartSuffix(event, partition);
    if (absl::StartsWith(kernel, "vd") && !facts.virtio_serial.empty()) {
      links.push_back(absl::StrCat("disk/by-id/virtio-", facts.virtio_serial, part));
    } else if (!p("ID_BUS").empty() && !p("ID_SERIAL").empty()) {
      links.push_back(absl::StrCat("disk/by-id/", p("ID_BUS"), "-", p("ID_SERIAL"), part));
    }
    if (!p("ID_PATH").empty() && (devtype == "disk" || partition)) {
      links.push_back(absl::StrCat("disk/by-path/", p("ID_PATH"), part));
      if (!p("ID_PATH_ATA_COMPAT").empty()) {
        links.push_back(absl::StrCat("disk/by-path/", p("ID_PATH_ATA_COMPAT"), part));
      }
    }
    // KERNEL=="vd*[!0-9]" / "vd*[0-9]", ENV{ID_PATH}=="pci-*": the virtio-prefixed by-path.
    if (absl::StartsWith(kernel, "vd") && absl::StartsWith(p("ID_PATH"), "pci-")) {
      const bool digit = kernel.back() >= '0' && kernel.back() <= '9';
      links.push_back(absl::StrCat("disk/by-path/virtio-", p("ID_PATH"), digit ? PartSuffix(event, true) : ""));
    }
    const absl::string_view usage = p("ID_FS_USAGE");
    if ((usage == "filesystem" || usage == "other" || usage == "crypto") && !p("ID_FS_UUID_ENC").empty()) {
      links.push_back(absl::StrCat("disk/by-uuid/", p("ID_FS_UUID_ENC")));
    }
    if ((usage == "filesystem" || usage == "other") && !p("ID_FS_LABEL_ENC").empty()) {
      links.push_back(absl::StrCat("disk/by-label/", p("ID_FS_LABEL_ENC")));
    }
    if (!p("ID_PART_ENTRY_UUID").empty()) {
      links.push_back(absl::StrCat("disk/by-partuuid/", p("ID_PART_ENTRY_UUID")));
    }
    if (p("ID_PART_ENTRY_SCHEME") == "gpt" && !p("ID_PART_ENTRY_NAME").empty()) {
      links.push_back(absl::StrCat("disk/by-partlabel/", p("ID_PART_ENTRY_NAME")));
    }
    if (std::optional<absl::string_view> seq = event.Get("DISKSEQ"); seq.has_value() && !partition) {
      links.push_back(absl::StrCat("disk/by-diskseq/", *seq));
    }
  } else if (event.subsystem == "input") {
    const std::string cls = InputClass(props, facts);
    const bool event_node = absl::StartsWith(kernel, "event");
    const bool legacy_node = absl::StartsWith(kernel, "mouse") || absl::StartsWith(kernel, "js");
    const absl::string_view bus = p("ID_BUS");
    std::string serial(p("ID_SERIAL"));
    if (!cls.empty() && serial.empty()) serial = "noserial";
    const std::string& ifnum = facts.interface_number;
    // ATTRS{bInterfaceNumber}=="|00": udev matches an attribute only on a device that has it,
    // so a device without a USB interface above it (i8042, platform) gets no by-id link.
    if (!bus.empty() && !cls.empty() && bus != "bluetooth" && (event_node || legacy_node) &&
        !ifnum.empty()) {
      const std::string what = event_node ? absl::StrCat("event-", cls) : cls;
      if (ifnum == "00") {
        links.push_back(absl::StrCat("input/by-id/", bus, "-", serial, "-", what));
      } else {
        links.push_back(absl::StrCat("input/by-id/", bus, "-", serial, "-if", ifnum, "-", what));
      }
    }
    if (bus == "usb" && event_node && cls.empty() && !ifnum.empty()) {
      links.push_back(absl::StrCat("input/by-id/", bus, "-", serial, "-event-if", ifnum));
    }
    const absl::string_view path = p("ID_PATH");
    if (!path.empty() && !cls.empty() && legacy_node) {
      links.push_back(absl::StrCat("input/by-path/", path, "-", cls));
    }
    if (!path.empty() && !cls.empty() && event_node) {
      links.push_back(absl::StrCat("input/by-path/", path, "-event-", cls));
    }
    if (!path.empty() && cls.empty() && event_node &&
        (absl::StrContains(path, "usb-") || absl::StartsWith(path, "platform-") ||
         absl::StrContains(path, "i2c-"))) {
      links.push_back(absl::StrCat("input/by-path/", path, "-event"));
    }
  }
  // As udev's SYMLINK: characters it does not allow become '_' ('/' stays, "\x" escapes stay);
  // then nothing may leave the dev root.
  std::vector<std::string> safe;
  for (std::string& link : links) {
    link = ReplaceChars(link, "/");
    if (devroot::IsSafeRelativePath(link)) {
      safe.push_back(std::move(link));
    } else if (refused != nullptr) {
      refused->push_back(std::move(link));
    }
  }
  return safe;
}

LinkFacts ReadLinkFacts(const SysfsView& view, absl::string_view devpath) {
  LinkFacts facts;
  // ATTRS{}/DRIVERS match the device or any ancestor: the nearest one that has it.
  std::optional<std::string> d(devpath);
  while (d.has_value()) {
    if (facts.interface_number.empty()) {
      facts.interface_number = view.Attribute(*d, "bInterfaceNumber").value_or("");
    }
    // DRIVERS=="pcspkr" matches any ancestor's driver.
    const std::string driver = view.LinkName(*d, "driver").value_or("");
    if (facts.driver.empty() || driver == "pcspkr") facts.driver = driver;
    if (facts.name.empty() && SubsystemOf(view, *d) == "input") {
      facts.name = view.Attribute(*d, "name").value_or("");
    }
    if (facts.virtio_serial.empty() && SubsystemOf(view, *d) == "block") {
      facts.virtio_serial = view.Attribute(*d, "serial").value_or("");
    }
    d = ParentOf(view, *d);
  }
  return facts;
}

}  // namespace hotring::hotplug::udevcompat

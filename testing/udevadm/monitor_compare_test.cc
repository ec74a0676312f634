// hotring's `udevadm monitor` against Debian's own /usr/bin/udevadm 252, side by side: both
// run at once, with the same arguments, in this test's private network and mount namespaces
// (testing/udev_namespace.h), and receive the same netlink datagrams; their stdout must match
// byte for byte after three normalisations, each of something that must differ:
//   - the CLOCK_MONOTONIC stamp of an event's line ("KERNEL[27339.680909] add ...",
//     "UDEV  [27339.681000] ..."; 252 prints "%-6s[%lu.%06lu] %-8s %s (%s)") becomes "[T]",
//     and only a stamp of exactly that shape does;
//   - KERNEL events that are not this test's (a device the host adds or removes reaches
//     every network namespace) are left out;
//   - the words of DEVLINKS, TAGS and CURRENT_TAGS are sorted: 252 joins a hash set.
// The exit status must match too, and each case says how many events 252 prints, so that a
// case where neither prints anything cannot pass by accident.
//
// How datagrams reach them (Route): libudev's format or the kernel's on group 2 from this
// process (as systemd-udevd or hotring's daemon send), the kernel's format on group 1 from
// this process (a forgery: 252 drops any group-1 message whose sender port is not 0), unicast
// to the monitors' own ports (252 trusts no unicast), and handed to the kernel, which
// broadcasts it on group 1 from port 0 with its next SEQNUM appended (SendRawThroughKernel:
// the one way to have 252 print a KERNEL event here; each uses up one number of the host's
// uevent sequence, so few cases do it). After each datagram the test waits until both monitors
// have read everything queued on their sockets (/proc/net/netlink), so the order of events on
// two sockets is the order they were sent in, and nothing is timed.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "hotplug/udev/monitor.h"
#include "io/netlink.h"
#include "testing/daemon_fixture.h"
#include "testing/udev_namespace.h"
#include "testing/uevent_injector.h"

namespace hotring::testing {
namespace {

constexpr char kMark[] = "hotring_monitor_test";  // in every DEVPATH this test sends
constexpr int kNetlinkUevent = 15;                 // NETLINK_KOBJECT_UEVENT in /proc/net/netlink

std::string Path(absl::string_view name) { return absl::StrCat("/devices/virtual/", kMark, "/", name); }

enum class Route { kUdevGroup, kKernelGroup, kUnicast, kThroughKernel };

struct Message {
  Route route;
  std::string bytes;
};

Message Udev(std::string bytes) { return {Route::kUdevGroup, std::move(bytes)}; }
Message Forged(std::string bytes) { return {Route::kKernelGroup, std::move(bytes)}; }
Message Unicast(std::string bytes) { return {Route::kUnicast, std::move(bytes)}; }
Message ThroughKernel(std::string bytes) { return {Route::kThroughKernel, std::move(bytes)}; }

// ACTION, DEVPATH (of Path(name)), SUBSYSTEM and, unless empty, SEQNUM.
std::vector<std::string> Base(absl::string_view action, absl::string_view name, absl::string_view subsystem,
                              absl::string_view seqnum = "1") {
  std::vector<std::string> out = {absl::StrCat("ACTION=", action), absl::StrCat("DEVPATH=", Path(name)),
                                  absl::StrCat("SUBSYSTEM=", subsystem)};
  if (!seqnum.empty()) out.push_back(absl::StrCat("SEQNUM=", seqnum));
  return out;
}

std::vector<std::string> Plus(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

std::string Nulstr(const std::vector<std::string>& strings) {
  std::string out;
  for (const std::string& s : strings) {
    out += s;
    out.push_back('\0');
  }
  return out;
}

// The kernel's format: "ACTION@DEVPATH\0" (or `header`) and the strings, each verbatim.
std::string KernelFormat(const std::vector<std::string>& strings, std::optional<std::string> header = {}) {
  if (!header) {
    std::string action = strings[0].substr(strings[0].find('=') + 1);
    header = absl::StrCat(action, "@", strings[1].substr(strings[1].find('=') + 1));
  }
  return Nulstr({*header}) + Nulstr(strings);
}

void PutBe32(std::string& out, size_t at, uint32_t v) {
  const uint32_t be = htonl(v);
  std::memcpy(out.data() + at, &be, 4);
}

// What libudev's header says, hashed as libudev hashes it; empty fields stay zero.
struct Header {
  std::string subsystem, devtype;
  std::vector<std::string> tags;
  uint32_t properties_off = 40;
};

// libudev's format written by hand, for what the daemon's encoder refuses to build (values with
// newlines, strings without '=', headers that disagree with their properties).
std::string Libudev(const std::vector<std::string>& strings, const Header& h = {}) {
  const std::string body = Nulstr(strings);
  std::string out(40, '\0');
  std::memcpy(out.data(), "libudev", 8);
  PutBe32(out, 8, hotplug::udev::kUdevMonitorMagic);
  const uint32_t header_size = 40, len = static_cast<uint32_t>(body.size());
  std::memcpy(out.data() + 12, &header_size, 4);
  std::memcpy(out.data() + 16, &h.properties_off, 4);
  std::memcpy(out.data() + 20, &len, 4);
  if (!h.subsystem.empty()) PutBe32(out, 24, hotplug::udev::MurmurHash2(h.subsystem));
  if (!h.devtype.empty()) PutBe32(out, 28, hotplug::udev::MurmurHash2(h.devtype));
  uint64_t bloom = 0;
  for (const std::string& tag : h.tags) bloom |= hotplug::udev::TagBloomBits(tag);
  PutBe32(out, 32, static_cast<uint32_t>(bloom >> 32));
  PutBe32(out, 36, static_cast<uint32_t>(bloom));
  out.resize(std::max<size_t>(out.size(), h.properties_off), '\0');
  return out + body;
}

// A device as hotring's daemon announces it (hotplug/udev/monitor.h's encoder).
std::string Announced(const std::string& devtype, const std::vector<std::string>& tags,
                      const std::vector<std::string>& strings) {
  hotplug::udev::MonitorMessage m;
  m.devtype = devtype;
  m.tags = tags;
  for (const std::string& s : strings) {
    const size_t eq = s.find('=');
    m.properties.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    if (m.properties.back().first == "SUBSYSTEM") m.subsystem = m.properties.back().second;
  }
  absl::StatusOr<std::string> d = hotplug::udev::EncodeMonitorMessage(m);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : "";
}

// ---------------------------------------------------------------------------------------------
// The datagrams of the cases.

std::vector<Message> Devices() {
  const std::string disk = Path("block/sdz"), part = Path("block/sdz/sdz1");
  return {
      Udev(Announced("disk", {"systemd"},
                     Plus(Base("add", "block/sdz", "block", "101"),
                          {"MAJOR=8", "MINOR=240", "DEVNAME=/dev/sdz", "DEVTYPE=disk", "DISKSEQ=12",
                           "ID_BUS=scsi", "ID_SERIAL=QEMU_HARDDISK_drive-scsi0",
                           "ID_PATH=pci-0000:00:05.0-scsi-0:0:0:0", "USEC_INITIALIZED=5000000",
                           "DEVLINKS=/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_drive-scsi0 "
                           "/dev/disk/by-path/pci-0000:00:05.0-scsi-0:0:0:0",
                           "TAGS=:systemd:", "CURRENT_TAGS=:systemd:"}))),
      Udev(Announced("partition", {"systemd"},
                     Plus(Base("add", "block/sdz/sdz1", "block", "102"),
                          {"DEVNAME=/dev/sdz1", "DEVTYPE=partition", "PARTN=1", "MAJOR=8", "MINOR=241",
                           "ID_FS_TYPE=ext4", "ID_FS_UUID=0b3c1b2e-6a4e-4a56-9d7e-1f2e3d4c5b6a",
                           "ID_PART_ENTRY_NAME=root partition",
                           "DEVLINKS=/dev/disk/by-uuid/0b3c1b2e-6a4e-4a56-9d7e-1f2e3d4c5b6a "
                           "/dev/disk/by-partlabel/root\\x20partition /dev/disk/by-path/pci-0-part1",
                           "TAGS=:systemd:", "CURRENT_TAGS=:systemd:", "USEC_INITIALIZED=5000100"}))),
      Udev(Announced("", {"seat", "uaccess"},
                     Plus(Base("add", "input/input9/event9", "input", "103"),
                          {"DEVNAME=/dev/input/event9", "MAJOR=13", "MINOR=73", "ID_INPUT=1",
                           "ID_INPUT_KEYBOARD=1", "ID_FOR_SEAT=input-platform-i8042-serio-0",
                           "TAGS=:seat:uaccess:", "CURRENT_TAGS=:uaccess:seat:", "USEC_INITIALIZED=5000200"}))),
      Udev(Announced("", {}, Plus(Base("add", "net/hr0", "net", "104"),
                                  {"INTERFACE=hr0", "IFINDEX=42", "ID_NET_NAME_MAC=enx525400123456",
                                   "ID_NET_DRIVER=virtio_net", "USEC_INITIALIZED=5000300"}))),
      Udev(Announced("", {}, Plus(Base("bind", "pci0000:00/0000:00:05.0", "pci", "105"),
                                  {"DRIVER=virtio-pci", "PCI_SLOT_NAME=0000:00:05.0"}))),
      Udev(Announced("", {}, {"ACTION=add", absl::StrCat("DEVPATH=/bus/", kMark, "/drivers/hr_driver"),
                              "SUBSYSTEM=drivers", "SEQNUM=106"})),
      Udev(Announced("disk", {"systemd"}, Plus(Base("change", "block/sdz", "block", "107"),
                                                {"DISK_MEDIA_CHANGE=1", "DEVNAME=/dev/sdz", "DEVTYPE=disk"}))),
      Udev(Announced("", {}, Plus(Base("move", "net/hr1", "net", "108"),
                                  {absl::StrCat("DEVPATH_OLD=", Path("net/hr0")), "INTERFACE=hr1", "IFINDEX=42"}))),
      Udev(Announced("", {}, Base("offline", "cpu/cpu9", "cpu", "109"))),
      Udev(Announced("", {}, Base("online", "cpu/cpu9", "cpu", "110"))),
      Udev(Announced("", {}, Plus(Base("unbind", "pci0000:00/0000:00:05.0", "pci", "111"), {"DRIVER=virtio-pci"}))),
      Udev(Announced("partition", {"systemd"}, Plus(Base("remove", "block/sdz/sdz1", "block", "112"),
                                                     {"DEVNAME=/dev/sdz1", "DEVTYPE=partition", "TAGS=:systemd:"}))),
  };
}

// Strange but valid: each is printed, each tells something about how.
std::vector<Message> OddProperties() {
  std::vector<Message> out = {
      Udev(Libudev(Plus(Base("add", "odd_chars", "hotring_test"),
                        {"TEXT=two  spaces, a = sign,\ta tab", "UTF8=\xc3\xa9\xe2\x82\xac \xc3\xbcnic\xc3\xb6" "de",
                         "RAW=\xff\xfe bytes", "QUOTES='single' \"double\" `back` $HOME %s %n \\ end",
                         "EMPTY=", "=no key", ".HIDDEN=1", "DUP=first", "OTHER=x", "DUP=last",
                         "UDEV_DATABASE_VERSION=1"}))),
      Udev(Libudev(Plus(Base("add", "cut", "hotring_test"), {"NL=before\nafter", "CR=before\rafter", "LAST=1"}))),
      Udev(Libudev(Plus(Base("add", "devname_relative", "hotring_test"), {"DEVNAME=sdq", "MINOR=3", "MAJOR=8"}))),
      Udev(Libudev(Plus(Base("add", "devname_empty", "hotring_test"), {"DEVNAME="}))),
      Udev(Libudev(Plus(Base("add", "devname_dots", "hotring_test"), {"DEVNAME=./x//y/"}))),
      Udev(Libudev(Plus(Base("add", "devlinks_blanks", "hotring_test"), {"DEVLINKS=/dev/b\t/dev/a  /dev/b "}))),
      Udev(Libudev(Plus(Base("add", "devlinks_verbatim", "hotring_test"),
                        {"DEVLINKS=/dev/with\\ backslash 'quoted link' rel/../x\x0b/dev/vt"}))),
      Udev(Libudev(Plus(Base("add", "devlinks_empty", "hotring_test"), {"DEVLINKS="}))),
      Udev(Libudev(Plus(Base("add", "tags_escaped", "hotring_test"), {"TAGS=:a\\b:tab\there:", "CURRENT_TAGS=c::d"}))),
      Udev(Libudev(Plus(Base("add", "tags_quoted", "hotring_test"), {"TAGS=:'x:y':"}))),
      Udev(Libudev(Plus(Base("add", "majors", "hotring_test"), {"MAJOR=0x8", "MINOR=010"}))),
      Udev(Libudev(Plus(Base("add", "major_zero", "hotring_test"), {"MAJOR=0", "MINOR=abc"}))),
      Udev(Libudev(Plus(Base("add", "major_limits", "hotring_test"), {"MAJOR=4095", "MINOR=1048575"}))),
      Udev(Libudev(Plus(Base("add", "major_only", "hotring_test"), {"MAJOR= 8"}))),
      Udev(Libudev(Plus(Base("add", "minor_only", "hotring_test"), {"MINOR=8"}))),
      Udev(Libudev(Plus(Base("add", "numbers", "hotring_test"),
                        {"DEVMODE=660", "DEVUID=0", "DEVGID=4294967294", "IFINDEX=0x10", "DISKSEQ=0x10",
                         "USEC_INITIALIZED=0x10", "DRIVER="}))),
      Udev(Libudev(Plus(Base("add", "numbers2", "hotring_test"), {"DEVMODE=07777", "USEC_INITIALIZED= 7"}))),
      Udev(Libudev(Plus(Base("add", "usec_zero", "hotring_test"), {"USEC_INITIALIZED=0"}))),
      Udev(Libudev({"ACTION=add", absl::StrCat("DEVPATH=/devices//virtual/./", kMark, "/dots/"),
                    "SUBSYSTEM=hotring_test", "SEQNUM=1"})),
      Udev(Libudev({"ACTION=add", absl::StrCat("DEVPATH=/devices/virtual/", kMark, "/../", kMark, "/up"),
                    "SUBSYSTEM=hotring_test", "SEQNUM=1"})),
      Udev(Libudev(Base("add", "subsystem_empty", ""))),
      Udev(Libudev(Plus(Base("add", "twice", "first"),
                        {"SUBSYSTEM=second", "ACTION=remove", absl::StrCat("DEVPATH=", Path("twice_second"))}))),
      Udev(Libudev(Plus(Base("add", "devtype_empty", "hotring_test"), {"DEVTYPE="}))),
      Udev(Libudev(Plus(Base("add", "big", "hotring_test"), {"BIG=" + std::string(20000, 'x')}))),
  };
  for (const char* seqnum : {" 12", "0x10", "010", "+5", "0b11", "18446744073709551615"}) {
    out.push_back(Udev(Libudev(Base("add", absl::StrCat("seqnum_", out.size()), "hotring_test", seqnum))));
  }
  for (const char* action : {"add", "remove", "change", "move", "online", "offline", "bind", "unbind"}) {
    out.push_back(Udev(Libudev(Base(action, absl::StrCat("action_", action), "hotring_test"))));
  }
  // The length field is not read: properties go on to the datagram's end.
  std::string short_length = Libudev(Plus(Base("add", "length_short", "hotring_test"), {"AFTER=1"}));
  const uint32_t ten = 10;
  std::memcpy(short_length.data() + 20, &ten, 4);
  out.push_back(Udev(short_length));
  // Properties further on than the header's end.
  out.push_back(Udev(Libudev(Base("add", "properties_at_64", "hotring_test"), {.properties_off = 64})));
  return out;
}

// The kernel's format on udev's group: printed as UDEV events.
std::vector<Message> KernelFormatOnUdevGroup() {
  return {
      Udev(KernelFormat(Plus(Base("add", "kernel_format", "hotring_test", "9"), {"MAJOR=1", "MINOR=3", "DEVNAME=k"}))),
      Udev(KernelFormat(Base("add", "kernel_header_short", "hotring_test", "9"), "@/")),
      Udev(KernelFormat(Base("add", "kernel_header_odd", "hotring_test", "9"), "a@/")),
      Udev(KernelFormat(Base("change", "kernel_header_other", "hotring_test", "9"), "remove@/elsewhere")),
  };
}

// Every one dropped by 252, then one that is not.
std::vector<Message> Dropped() {
  std::vector<Message> out;
  for (const char* seqnum : {"0", "abc", "-5", "5 ", "09", "18446744073709551616"}) {
    out.push_back(Udev(Libudev(Base("add", "bad_seqnum", "hotring_test", seqnum))));
  }
  out.push_back(Udev(Libudev(Base("add", "no_seqnum", "hotring_test", ""))));
  out.push_back(Udev(Libudev({"ACTION=add", absl::StrCat("DEVPATH=", Path("no_subsystem")), "SEQNUM=1"})));
  out.push_back(Udev(Libudev({absl::StrCat("DEVPATH=", Path("no_action")), "SUBSYSTEM=s", "SEQNUM=1"})));
  out.push_back(Udev(Libudev({"ACTION=add", "SUBSYSTEM=s", "SEQNUM=1", "NAME=no_devpath"})));
  for (const char* action : {"frobnicate", "ADD", ""}) {
    out.push_back(Udev(Libudev(Base(action, "bad_action", "hotring_test"))));
  }
  for (const char* devpath : {"", "/", "relative/hotring_monitor_test", "/.", "//"}) {
    out.push_back(Udev(Libudev({"ACTION=add", absl::StrCat("DEVPATH=", devpath), "SUBSYSTEM=s", "SEQNUM=1"})));
  }
  for (const std::string& driver : {std::string("/drivers/hr_driver"), Path("not_a_driver"),
                                    absl::StrCat("/bus/", kMark, "/driversX/y"), std::string("/../drivers/x")}) {
    out.push_back(Udev(Libudev({"ACTION=add", absl::StrCat("DEVPATH=", driver), "SUBSYSTEM=drivers", "SEQNUM=1"})));
  }
  for (const char* bad :
       {"JUSTKEY", "KEY\n=cut before the equals sign", "MAJOR=abc", "MAJOR=4096", "MAJOR=-1", "MAJOR=",
        "DEVMODE=9999", "DEVMODE=010000", "DEVMODE=rw", "DEVUID=65535", "DEVUID=4294967295", "DEVUID=0x10",
        "DEVUID=+5", "DEVUID=05", "DEVUID= 5", "DEVGID=65535", "DEVGID=", "IFINDEX=0", "IFINDEX=-1",
        "IFINDEX=2147483648", "IFINDEX=eth0", "DISKSEQ=0", "DISKSEQ=abc", "USEC_INITIALIZED=abc",
        "USEC_INITIALIZED=-1", "TAGS=:a b:", "TAGS=:a\\:b:", "TAGS=:trailing\\", "CURRENT_TAGS=: lead:"}) {
    out.push_back(Udev(Libudev(Plus(Base("add", "bad_value", "hotring_test"), {bad}))));
  }
  for (const char* minor : {"MINOR=1048576", "MINOR=abc", "MINOR=-1"}) {
    out.push_back(Udev(Libudev(Plus(Base("add", "bad_minor", "hotring_test"), {"MAJOR=8", minor}))));
  }
  std::string bad_magic = Libudev(Base("add", "bad_magic", "hotring_test"));
  bad_magic[11] ^= 1;
  out.push_back(Udev(bad_magic));
  std::string off_beyond = Libudev(Base("add", "offset_beyond", "hotring_test"));
  const uint32_t beyond = static_cast<uint32_t>(off_beyond.size());
  std::memcpy(off_beyond.data() + 16, &beyond, 4);
  out.push_back(Udev(off_beyond));
  std::string off_inside = Libudev(Base("add", "offset_inside", "hotring_test"));
  const uint32_t inside = 44;  // into "ACTION=add": "ON=add" is a pair, then "DEVPATH=..." ...
  std::memcpy(off_inside.data() + 16, &inside, 4);
  out.push_back(Udev(off_inside + std::string("JUNK", 4)));  // ... and the last string has no NUL
  out.push_back(Udev(std::string("libudev\0\xfe\xed\xca\xfe", 12)));
  out.push_back(Udev(KernelFormat(Base("add", "kernel_no_slash", "hotring_test"), "add@devices")));
  out.push_back(Udev(KernelFormat(Base("add", "kernel_empty_header", "hotring_test"), "")));
  out.push_back(Udev(KernelFormat(Plus(Base("add", "kernel_double_nul", "hotring_test"), {""}))));
  std::string unterminated = KernelFormat(Base("add", "kernel_unterminated", "hotring_test"));
  unterminated.pop_back();
  out.push_back(Udev(unterminated));
  out.push_back(Udev(Nulstr({absl::StrCat("add@", Path("kernel_header_only"))})));
  out.push_back(Udev(KernelFormat({"A=1", "B=2"}, "add@/x")));  // under 32 bytes
  out.push_back(Udev(Libudev(Base("add", "the_one_printed", "hotring_test"))));
  return out;
}

// For -s and -t: headers that agree with the properties, and headers that do not.
std::vector<Message> Filtered() {
  auto m = [](absl::string_view name, absl::string_view subsystem, std::optional<std::string> devtype,
              std::vector<std::string> tags, Header header) {
    std::vector<std::string> strings = Base("add", name, subsystem, "4");
    if (devtype) strings.push_back(absl::StrCat("DEVTYPE=", *devtype));
    if (!tags.empty()) strings.push_back(absl::StrCat("TAGS=:", absl::StrJoin(tags, ":"), ":"));
    return Udev(Libudev(strings, header));
  };
  return {
      m("blk_disk", "block", "disk", {}, {"block", "disk"}),
      m("blk_part", "block", "partition", {}, {"block", "partition"}),
      m("blk_no_devtype", "block", std::nullopt, {}, {"block"}),
      m("blk_empty_devtype", "block", "", {}, {"block"}),
      m("blk_unhashed", "block", "disk", {}, {}),
      m("blk_devtype_unhashed", "block", "disk", {}, {"block"}),
      m("blk_hashed_as_input", "block", "disk", {}, {"input"}),
      m("input_hashed_as_block", "input", std::nullopt, {}, {"block"}),
      m("input_seat", "input", std::nullopt, {"seat", "uaccess"}, {"input", "", {"seat", "uaccess"}}),
      m("input_uaccess", "input", std::nullopt, {"uaccess"}, {"input", "", {"uaccess"}}),
      m("input_seat_no_bloom", "input", std::nullopt, {"seat"}, {"input"}),
      m("input_bloom_only", "input", std::nullopt, {}, {"input", "", {"seat"}}),
      m("net_seat", "net", std::nullopt, {"seat"}, {"net", "", {"seat"}}),
      Udev(KernelFormat(Plus(Base("add", "kernel_format_block", "block", "9"), {"DEVTYPE=disk", "TAGS=:seat:"}))),
      m("blk_disk_seat", "block", "disk", {"seat", "last"}, {"block", "disk", {"seat", "last"}}),
  };
}

// The empty tag: a TAGS value with a ':' at an end, or two in a row, or none at all, has it.
std::vector<Message> EmptyTags() {
  std::vector<Message> out;
  int n = 0;
  for (const char* tags : {"TAGS=seat", "TAGS=:seat:", "TAGS=seat:", "TAGS=a::b", "CURRENT_TAGS=:x:", "TAGS=",
                           "TAGS=::"}) {
    out.push_back(Udev(Libudev(Plus(Base("add", absl::StrCat("tags_", n++), "hotring_test"), {tags}), {.tags = {""}})));
  }
  return out;
}

// Events handed to the kernel: SEQNUM is the kernel's.
std::string Kernel(absl::string_view action, absl::string_view name, absl::string_view subsystem,
                   const std::vector<std::string>& more) {
  return KernelFormat(Plus(Base(action, name, subsystem, ""), more));
}

// ---------------------------------------------------------------------------------------------

struct Case {
  std::string name;
  std::vector<std::string> args;  // after "monitor"
  std::vector<Message> messages;
  // Events 252 prints (nullopt: whatever it prints; the command ends by itself when `exits`).
  std::optional<int> printed;
  bool exits = false;
  bool control = true;     // /run/udev/control exists
  bool tmpfs_dev = false;  // a tmpfs over /dev (252 then listens to no udev group)
};

// Case names in failure reports, not bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> Cases() {
  const std::string driver = absl::StrCat("/bus/", kMark, "/drivers/hr_driver");
  std::vector<Case> c = {
      {"udev_devices", {"--udev"}, Devices(), 12},
      {"udev_properties", {"--udev", "--property"}, Devices(), 12},
      {"udev_odd_properties", {"-u", "-p"}, OddProperties(), 40},
      {"udev_kernel_format", {"-u", "-p"}, KernelFormatOnUdevGroup(), 4},
      {"udev_dropped", {"-u", "-p"}, Dropped(), 1},
      {"udev_subsystem", {"-u", "-s", "block"}, Filtered(), 7},
      {"udev_subsystem_devtype", {"-u", "-p", "--subsystem-match=block/disk", "-s", "net"}, Filtered(), 4},
      {"udev_subsystem_empty_devtype", {"-u", "-s", "block/"}, Filtered(), 1},
      {"udev_subsystem_repeated", {"-u", "-s", "block/disk", "--subsystem-match", "block"}, Filtered(), 7},
      {"udev_subsystem_empty", {"-u", "-s", ""}, Filtered(), 0},
      {"udev_tag", {"-u", "-p", "-t", "seat"}, Filtered(), 4},
      {"udev_tags", {"-u", "--tag-match=seat", "--tag-match", "uaccess"}, Filtered(), 5},
      {"udev_subsystem_and_tag", {"-u", "-s", "input", "-t", "seat"}, Filtered(), 1},
      {"udev_tag_empty", {"-u", "-t", ""}, EmptyTags(), 6},
      {"udev_tags_unprinted", {"-u"}, EmptyTags(), 7},
      {"udev_unicast",
       {"-u", "-p"},
       {Unicast(Libudev(Base("add", "unicast", "hotring_test"))),
        Unicast(KernelFormat(Base("add", "unicast_kernel_format", "hotring_test"))),
        Udev(Libudev(Base("add", "multicast", "hotring_test")))},
       1},
      {"udev_without_control", {"-u"}, {Udev(Libudev(Base("add", "no_control", "hotring_test")))}, std::nullopt,
       false, false},
      {"udev_not_running", {"-u"}, {Udev(Libudev(Base("add", "no_udev", "hotring_test")))}, 0, false, false, true},
      {"udev_env_abbreviated", {"--env", "--ud"}, {Devices()[2]}, 1},
      {"udev_extra_argument", {"-u", "extra", "arguments"}, {Devices()[0]}, 1},
      {"kernel_forged",
       {"-k", "-p"},
       {Forged(KernelFormat(Base("add", "forged", "hotring_test", "7"))),
        Forged(Libudev(Base("add", "forged_libudev", "hotring_test", "8"))),
        Unicast(KernelFormat(Base("add", "unicast_to_kernel_socket", "hotring_test", "9"))),
        Udev(KernelFormat(Base("add", "udev_group_not_listened_to", "hotring_test", "10"))),
        ThroughKernel(Kernel("add", "from_the_kernel", "hotring_test", {}))},
       1},
      {"kernel_events",
       {"--kernel", "--property"},
       {ThroughKernel(Kernel("add", "block/sdy", "block",
                             {"MAJOR=8", "MINOR=224", "DEVNAME=sdy", "DEVTYPE=disk", "DISKSEQ=30"})),
        ThroughKernel(Kernel("change", "odd", "hotring_test",
                             {"TEXT=odd = chars\tand \xc3\xa9", "NL=cut\nhere", "CR=cut\rhere", "EMPTY="})),
        ThroughKernel(Libudev(Plus(Base("add", "libudev_through_kernel", "hotring_test", ""), {"FROM=libudev"}))),
        ThroughKernel(KernelFormat({"ACTION=bind", absl::StrCat("DEVPATH=", driver), "SUBSYSTEM=drivers",
                                    "DRIVER=hr_driver"})),
        ThroughKernel(Kernel("bogus", "bogus_action", "hotring_test", {}))},
       4},
      {"kernel_subsystem",
       {"-k", "-s", "block/disk"},
       {ThroughKernel(Kernel("add", "block/sdx", "block", {"DEVTYPE=disk"})),
        ThroughKernel(Kernel("add", "block/sdx/sdx1", "block", {"DEVTYPE=partition"}))},
       1},
      {"both_groups",
       {},
       {Devices()[0], ThroughKernel(Kernel("change", "block/sdz", "block", {"DEVTYPE=disk"})), Devices()[2]},
       3},
      {"both_groups_properties", {"-p", "-k", "-u"}, {Devices()[3]}, 1},
  };
  for (auto [name, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"error_unknown_option", {"--bogus"}},
           {"error_unknown_short", {"-u", "-z"}},
           {"error_missing_value", {"-u", "-s"}},
           {"error_missing_tag", {"--tag-match"}},
           {"error_switch_with_value", {"--kernel=1"}},
           {"version", {"--version"}},
           {"version_short", {"-k", "-V"}},
           {"help", {"-u", "--help"}},
       }) {
    c.push_back(Case{.name = name, .args = args, .exits = true});
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Running and comparing.

struct Normalised {
  std::string text;
  int events = 0;
};

// "KERNEL[123.456789] " and "UDEV  [123.456789] " (exactly: digits, a dot, six digits).
std::optional<std::string> Stamped(absl::string_view line) {
  for (absl::string_view label : {"KERNEL[", "UDEV  ["}) {
    if (!absl::StartsWith(line, label)) continue;
    const size_t close = line.find(']');
    if (close == absl::string_view::npos) return std::nullopt;
    const absl::string_view stamp = line.substr(label.size(), close - label.size());
    const size_t dot = stamp.find('.');
    if (dot == absl::string_view::npos || dot == 0 || stamp.size() - dot - 1 != 6) return std::nullopt;
    const auto digits = [](absl::string_view s) { return std::all_of(s.begin(), s.end(), absl::ascii_isdigit); };
    if (!digits(stamp.substr(0, dot)) || !digits(stamp.substr(dot + 1))) return std::nullopt;
    return absl::StrCat(label, "T", line.substr(close));
  }
  return std::nullopt;
}

// DEVLINKS, TAGS and CURRENT_TAGS with their words sorted.
std::string SortedWords(const std::string& line) {
  for (absl::string_view key : {"TAGS=:", "CURRENT_TAGS=:"}) {
    if (absl::StartsWith(line, key) && absl::EndsWith(line, ":")) {
      const absl::string_view inner = absl::string_view(line).substr(key.size(), line.size() - key.size() - 1);
      std::vector<std::string> words = absl::StrSplit(inner, ':');
      std::sort(words.begin(), words.end());
      return absl::StrCat(key, absl::StrJoin(words, ":"), ":");
    }
  }
  if (absl::StartsWith(line, "DEVLINKS=")) {
    std::vector<std::string> words = absl::StrSplit(absl::string_view(line).substr(9), ' ');
    std::sort(words.begin(), words.end());
    return absl::StrCat("DEVLINKS=", absl::StrJoin(words, " "));
  }
  return line;
}

Normalised Normalise(const std::string& out) {
  Normalised n;
  bool keep = true;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (std::optional<std::string> stamped = Stamped(line)) {
      keep = !absl::StartsWith(line, "KERNEL") || absl::StrContains(line, kMark);
      if (keep) {
        ++n.events;
        absl::StrAppend(&n.text, *stamped, "\n");
      }
      continue;
    }
    if (keep) absl::StrAppend(&n.text, SortedWords(std::string(line)), "\n");
  }
  return n;
}

// The uevent sockets of process `pid`: their ports and the bytes waiting in them.
struct UeventSocket {
  uint32_t port = 0;
  uint64_t queued = 0;
};

std::vector<UeventSocket> UeventSockets(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = absl::StrCat("/proc/", pid, "/fd");
  if (DIR* dir = ::opendir(fd_dir.c_str()); dir != nullptr) {
    while (const dirent* entry = ::readdir(dir)) {
      char target[64] = {};
      const std::string link = absl::StrCat(fd_dir, "/", entry->d_name);
      if (::readlink(link.c_str(), target, sizeof target - 1) <= 0) continue;
      absl::string_view t(target);
      if (absl::ConsumePrefix(&t, "socket:[") && absl::ConsumeSuffix(&t, "]")) inodes.insert(std::string(t));
    }
    ::closedir(dir);
  }
  std::vector<UeventSocket> out;
  std::ifstream table("/proc/net/netlink");  // this (the monitors') network namespace
  for (std::string line; std::getline(table, line);) {
    // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
    const std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int protocol = 0;
    UeventSocket s;
    if (f.size() < 10 || !absl::SimpleAtoi(f[1], &protocol) || protocol != kNetlinkUevent ||
        !inodes.count(f[9]) || !absl::SimpleAtoi(f[2], &s.port) || !absl::SimpleAtoi(f[4], &s.queued)) {
      continue;
    }
    out.push_back(s);
  }
  return out;
}

// Whether child `pid` has ended (it stays to be reaped).
bool Exited(pid_t pid) {
  siginfo_t info = {};
  return ::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

class MonitorCompareTest : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { entered_ = new absl::Status(EnterUdevTestNamespaces()); }

  void SetUp() override {
    if (absl::IsUnavailable(*entered_)) GTEST_SKIP() << entered_->message();
    ASSERT_TRUE(entered_->ok()) << *entered_;
    std::optional<std::string> udevadm = DebianUdevadm();
    if (!udevadm) GTEST_SKIP() << "Debian's udevadm is not installed (/usr/bin/udevadm; apt-get install udev)";
    udevadm_ = *udevadm;
    // A fresh /run for each case: the control file is there unless the case says otherwise.
    ASSERT_EQ(::mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"), 0) << "mount(/run)";
    ASSERT_EQ(::mkdir("/run/udev", 0755), 0);
    if (GetParam().control) std::ofstream("/run/udev/control");
    if (GetParam().tmpfs_dev) {
      ASSERT_EQ(::mount("tmpfs", "/dev", "tmpfs", 0, "mode=0755"), 0) << "mount(/dev)";
      dev_mounted_ = true;
    }
  }

  void TearDown() override {
    if (dev_mounted_) ::umount2("/dev", MNT_DETACH);
  }

  // Sends `m`, then waits until every monitor has read all that waits in its sockets.
  void Send(const Message& m, const std::vector<pid_t>& monitors) {
    switch (m.route) {
      case Route::kUdevGroup:
      case Route::kKernelGroup: {
        absl::StatusOr<UeventInjector> injector = UeventInjector::Create(m.route == Route::kUdevGroup ? 2 : 1);
        ASSERT_TRUE(injector.ok()) << injector.status();
        ASSERT_TRUE(injector->SendRaw(m.bytes).ok());
        break;
      }
      case Route::kThroughKernel: {
        absl::StatusOr<UeventInjector> injector = UeventInjector::Create(1);
        ASSERT_TRUE(injector.ok()) << injector.status();
        const absl::Status sent = injector->SendRawThroughKernel(m.bytes);
        ASSERT_TRUE(sent.ok()) << sent;
        break;
      }
      case Route::kUnicast: {
        absl::StatusOr<UniqueFd> fd = io::OpenUeventSender();
        ASSERT_TRUE(fd.ok()) << fd.status();
        for (pid_t pid : monitors) {
          for (const UeventSocket& s : UeventSockets(pid)) {
            sockaddr_nl to = {};
            to.nl_family = AF_NETLINK;
            to.nl_pid = s.port;
            ASSERT_EQ(::sendto(fd->get(), m.bytes.data(), m.bytes.size(), 0, reinterpret_cast<sockaddr*>(&to),
                               sizeof to),
                      static_cast<ssize_t>(m.bytes.size()))
                << strerror(errno);
          }
        }
        break;
      }
    }
    ASSERT_TRUE(WaitUntil([&] {
      return std::all_of(monitors.begin(), monitors.end(), [](pid_t pid) {
        const std::vector<UeventSocket> sockets = UeventSockets(pid);
        return std::all_of(sockets.begin(), sockets.end(), [](const UeventSocket& s) { return s.queued == 0; });
      });
    })) << "a monitor did not read what was sent";
  }

  static absl::Status* entered_;
  std::string udevadm_;
  bool dev_mounted_ = false;
};

absl::Status* MonitorCompareTest::entered_ = nullptr;

TEST_P(MonitorCompareTest, PrintsWhatDebiansUdevadmPrints) {
  const Case& c = GetParam();
  std::vector<std::string> debian_argv = {udevadm_, "monitor"}, our_argv = {HotringBinary(), "udevadm", "monitor"};
  debian_argv.insert(debian_argv.end(), c.args.begin(), c.args.end());
  our_argv.insert(our_argv.end(), c.args.begin(), c.args.end());
  absl::StatusOr<BackgroundCommand> debian = BackgroundCommand::Start(debian_argv);
  ASSERT_TRUE(debian.ok()) << debian.status();
  absl::StatusOr<BackgroundCommand> ours = BackgroundCommand::Start(our_argv);
  ASSERT_TRUE(ours.ok()) << ours.status();
  if (!c.exits) {
    // Both print their header's blank line once their sockets are bound.
    for (BackgroundCommand* command : {&*debian, &*ours}) {
      ASSERT_TRUE(WaitUntil([&] {
        return absl::StrContains(command->OutSoFar(), "\n\n") || Exited(command->pid());
      }));
      ASSERT_TRUE(absl::StrContains(command->OutSoFar(), "\n\n"))
          << "no header from " << (command == &*debian ? "Debian's" : "our") << " monitor: "
          << command->ErrSoFar();
    }
    for (const Message& m : c.messages) {
      Send(m, {debian->pid(), ours->pid()});
      if (HasFatalFailure()) return;
    }
    ::kill(debian->pid(), SIGTERM);
    ::kill(ours->pid(), SIGTERM);
  }
  absl::StatusOr<CommandResult> want = debian->Wait();
  absl::StatusOr<CommandResult> got = ours->Wait();
  ASSERT_TRUE(want.ok() && got.ok());
  // Kept for reading after a run (bazel-testlogs/.../test.outputs/).
  if (const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR"); dir != nullptr) {
    std::ofstream(absl::StrCat(dir, "/", c.name, ".debian")) << want->out;
    std::ofstream(absl::StrCat(dir, "/", c.name, ".ours")) << got->out;
  }
  const Normalised w = Normalise(want->out), g = Normalise(got->out);
  EXPECT_EQ(g.text, w.text) << "stderr of Debian's: " << want->err << "\nstderr of ours: " << got->err;
  EXPECT_EQ(got->exit_code, want->exit_code) << got->err;
  if (c.printed) {
    EXPECT_EQ(w.events, *c.printed) << "events 252 printed:\n" << w.text;
  }
  if (c.exits && want->exit_code != 0) {
    EXPECT_FALSE(want->err.empty());
    EXPECT_FALSE(got->err.empty()) << "ours said nothing about the bad argument";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, MonitorCompareTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace hotring::testing

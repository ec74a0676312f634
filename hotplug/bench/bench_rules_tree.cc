#include "hotplug/bench/bench_rules_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::bench {
namespace {

constexpr char kBoardConf[] =
    "# /etc/mdev.conf of a board: owners, modes, names and links of its device nodes\n"
    "SUBSYSTEM=input;.* root:input 660\n"
    "null root:root 666\n"
    "zero root:root 666\n"
    "full root:root 666\n"
    "random root:root 666\n"
    "urandom root:root 444\n"
    "hwrandom root:root 660\n"
    "kmem root:root 640\n"
    "mem root:root 640\n"
    "port root:root 640\n"
    "console root:tty 600\n"
    "ptmx root:tty 666\n"
    "pty.* root:tty 660\n"
    "tty root:tty 666\n"
    "tty[0-9]* root:tty 660\n"
    "vcsa*[0-9]* root:tty 660\n"
    "ttyS[0-9]* root:dialout 660\n"
    "ttyUSB[0-9]* root:dialout 660 >usb/\n"
    "ttyACM[0-9]* root:dialout 660\n"
    "ttymxc[0-9]* root:dialout 660\n"
    "rtc0 root:root 664 >rtc\n"
    "rtc[0-9]* root:root 664\n"
    "watchdog[0-9]* root:root 600\n"
    "i2c-[0-9]+ root:i2c 660\n"
    "spidev[0-9.]+ root:spi 660\n"
    "gpiochip[0-9]+ root:gpio 660\n"
    "fb[0-9]+ root:video 660\n"
    "dri/.* root:video 660\n"
    "snd/.* root:audio 660\n"
    "mixer[0-9]* root:audio 660\n"
    "video[0-9]+ root:video 660\n"
    "([hs]d[a-z]+)([0-9]+) root:disk 660 >disk/%1/%2\n"
    "([hs]d[a-z]+) root:disk 660 >disk/%1/0\n"
    "mmcblk([0-9]+)p([0-9]+) root:disk 660 >disk/mmc/%1/%2\n"
    "mmcblk([0-9]+)boot([0-9]+) root:disk 440\n"
    "mmcblk([0-9]+) root:disk 660 >disk/mmc/%1/0\n"
    "loop[0-9]+ root:disk 660 =loop/\n"
    "net/tun[0-9]* root:netdev 640\n"
    "$MODALIAS=.* root:root 660 @modprobe -q -b \"$MODALIAS\"\n";

constexpr char kPasswd[] =
    "root:x:0:0:root:/root:/bin/sh\n"
    "daemon:x:1:1:daemon:/usr/sbin:/bin/false\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";

constexpr char kGroup[] =
    "root:x:0:\n"
    "tty:x:5:\n"
    "disk:x:6:\n"
    "dialout:x:20:\n"
    "audio:x:29:\n"
    "video:x:44:\n"
    "netdev:x:82:\n"
    "input:x:97:\n"
    "i2c:x:990:\n"
    "spi:x:991:\n"
    "gpio:x:992:\n"
    "nogroup:x:65534:\n";

class TreeWriter {
 public:
  explicit TreeWriter(std::string root) : root_(std::move(root)) {}

  absl::Status status() const { return status_; }

  void MkdirP(absl::string_view rel) {
    std::string path = root_;
    for (absl::string_view part : absl::StrSplit(rel, '/', absl::SkipEmpty())) {
      absl::StrAppend(&path, "/", part);
      if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) Fail("mkdir", path);
    }
  }
  void File(absl::string_view rel, absl::string_view text) {
    const std::string path = absl::StrCat(root_, "/", rel);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid() || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      Fail("write", path);
    }
  }
  void Link(absl::string_view target, absl::string_view rel) {
    const std::string path = absl::StrCat(root_, "/", rel);
    if (::symlink(std::string(target).c_str(), path.c_str()) != 0) Fail("symlink", path);
  }

 private:
  void Fail(absl::string_view call, const std::string& path) {
    if (status_.ok()) status_ = ErrnoStatus(absl::StrCat(call, "(", path, ")"));
  }
  std::string root_;
  absl::Status status_;
};

// "../" once per component of `dir` (relative to /sys): how a link in `dir` reaches /sys.
std::string UpToSys(absl::string_view dir) {
  std::string up;
  for (absl::string_view part : absl::StrSplit(dir, '/', absl::SkipEmpty())) {
    (void)part;
    up += "../";
  }
  return up;
}

struct DeviceSpec {
  std::string dir;        // under /sys, e.g. "devices/virtual/tty/tty1"
  std::string subsystem;  // class name: tty, block, input, mem, ...
  uint32_t major = 0;
  uint32_t minor = 0;
  std::string devname;    // DEVNAME (may hold a directory: input/event3)
  std::string devtype;    // DEVTYPE line, if any
  bool block = false;
  bool node = true;       // false: a net interface
};

void WriteDevice(TreeWriter& w, const DeviceSpec& d) {
  w.MkdirP(absl::StrCat("sys/", d.dir, "/power"));
  w.File(absl::StrCat("sys/", d.dir, "/power/control"), "auto\n");
  w.Link(absl::StrCat(UpToSys(d.dir), "class/", d.subsystem), absl::StrCat("sys/", d.dir, "/subsystem"));
  if (!d.node) {
    w.File(absl::StrCat("sys/", d.dir, "/uevent"),
           absl::StrCat("INTERFACE=", d.devname, "\nIFINDEX=", d.minor, "\n"));
    w.File(absl::StrCat("sys/", d.dir, "/address"), "02:00:00:00:00:01\n");
    w.File(absl::StrCat("sys/", d.dir, "/mtu"), "1500\n");
    return;
  }
  w.File(absl::StrCat("sys/", d.dir, "/dev"), absl::StrCat(d.major, ":", d.minor, "\n"));
  std::string uevent = absl::StrCat("MAJOR=", d.major, "\nMINOR=", d.minor, "\nDEVNAME=", d.devname, "\n");
  if (!d.devtype.empty()) absl::StrAppend(&uevent, "DEVTYPE=", d.devtype, "\n");
  w.File(absl::StrCat("sys/", d.dir, "/uevent"), uevent);
  // A few attributes, as every real device directory has (busybox stats each entry).
  if (d.block) {
    w.File(absl::StrCat("sys/", d.dir, "/size"), "2097152\n");
    w.File(absl::StrCat("sys/", d.dir, "/ro"), "0\n");
    w.File(absl::StrCat("sys/", d.dir, "/stat"), "0 0 0 0 0 0 0 0 0 0 0\n");
  } else {
    w.File(absl::StrCat("sys/", d.dir, "/type"), "0\n");
    w.File(absl::StrCat("sys/", d.dir, "/flags"), "0x0\n");
  }
  w.Link(absl::StrCat("../../", d.dir),
         absl::StrFormat("sys/dev/%s/%u:%u", d.block ? "block" : "char", d.major, d.minor));
}

// sda..sdz, sdaa.. (the kernel's disk naming).
std::string DiskLetters(size_t index) {
  std::string letters;
  ++index;
  while (index > 0) {
    --index;
    letters.insert(letters.begin(), static_cast<char>('a' + index % 26));
    index /= 26;
  }
  return letters;
}

std::vector<DeviceSpec> MiscDevices() {
  struct Fixed {
    const char* name;
    const char* subsystem;
    uint32_t major, minor;
  };
  static constexpr Fixed kFixed[] = {
      {"mem", "mem", 1, 1},          {"kmem", "mem", 1, 2},         {"null", "mem", 1, 3},
      {"port", "mem", 1, 4},         {"zero", "mem", 1, 5},         {"full", "mem", 1, 7},
      {"random", "mem", 1, 8},       {"urandom", "mem", 1, 9},      {"tty", "tty", 5, 0},
      {"console", "tty", 5, 1},      {"ptmx", "tty", 5, 2},         {"rtc0", "rtc", 253, 0},
      {"rtc1", "rtc", 253, 1},       {"watchdog", "misc", 10, 130}, {"watchdog0", "watchdog", 252, 0},
      {"hwrandom", "misc", 10, 183}, {"fb0", "graphics", 29, 0},    {"i2c-0", "i2c-dev", 89, 0},
      {"i2c-1", "i2c-dev", 89, 1},   {"i2c-2", "i2c-dev", 89, 2},   {"spidev0.0", "spidev", 153, 0},
      {"spidev1.0", "spidev", 153, 1}, {"gpiochip0", "gpio", 254, 0}, {"gpiochip1", "gpio", 254, 1},
      {"video0", "video4linux", 81, 0}, {"vcsa1", "vc", 7, 129},    {"ttymxc0", "tty", 207, 16},
  };
  std::vector<DeviceSpec> out;
  for (const Fixed& f : kFixed) {
    out.push_back({.dir = absl::StrCat("devices/virtual/", f.subsystem, "/", f.name),
                   .subsystem = f.subsystem, .major = f.major, .minor = f.minor,
                   .devname = f.name});
  }
  // Names with a directory, from DEVNAME.
  out.push_back({.dir = "devices/platform/gpu/drm/card0", .subsystem = "drm", .major = 226,
                 .minor = 0, .devname = "dri/card0"});
  out.push_back({.dir = "devices/platform/sound/sound/card0/controlC0", .subsystem = "sound",
                 .major = 116, .minor = 0, .devname = "snd/controlC0"});
  out.push_back({.dir = "devices/platform/sound/sound/card0/pcmC0D0p", .subsystem = "sound",
                 .major = 116, .minor = 16, .devname = "snd/pcmC0D0p"});
  out.push_back({.dir = "devices/virtual/misc/tun", .subsystem = "misc", .major = 10,
                 .minor = 200, .devname = "net/tun"});
  return out;
}

}  // namespace

const char* BoardMdevConf() { return kBoardConf; }

absl::StatusOr<BoardCounts> GenerateBoardTree(const std::string& root, size_t devices) {
  TreeWriter w(root);
  w.MkdirP("etc");
  w.MkdirP("dev");
  w.File("etc/mdev.conf", kBoardConf);
  w.File("etc/passwd", kPasswd);
  w.File("etc/group", kGroup);
  w.MkdirP("sys/dev/char");
  w.MkdirP("sys/dev/block");
  for (const char* cls : {"mem", "tty", "rtc", "misc", "watchdog", "graphics", "i2c-dev", "spidev",
                          "gpio", "video4linux", "vc", "drm", "sound", "block", "input", "net"}) {
    w.MkdirP(absl::StrCat("sys/class/", cls));
  }
  HOTRING_RETURN_IF_ERROR(w.status());

  BoardCounts counts;
  const std::vector<DeviceSpec> misc = MiscDevices();
  for (const DeviceSpec& d : misc) {
    if (counts.misc >= devices) break;
    WriteDevice(w, d);
    ++counts.misc;
  }
  const size_t rest = devices - counts.misc;
  const size_t want_net = rest * 2 / 100;
  const size_t want_block = rest * 40 / 100;
  const size_t want_tty = rest * 30 / 100;
  const size_t want_input = rest - want_net - want_block - want_tty;

  // Block: loop0..7, then sd disks with three partitions and mmcblk disks with three
  // partitions, alternately, each disk with its partitions inside its directory.
  auto add_block = [&](DeviceSpec d) {
    d.block = true;
    d.subsystem = "block";
    WriteDevice(w, d);
    ++counts.block;
  };
  for (uint32_t i = 0; i < 8 && counts.block < want_block; ++i) {
    add_block({.dir = absl::StrCat("devices/virtual/block/loop", i), .major = 7, .minor = i,
               .devname = absl::StrCat("loop", i), .devtype = "disk"});
  }
  for (size_t disk = 0; counts.block < want_block; ++disk) {
    const bool sd = disk % 2 == 0;
    const size_t n = disk / 2;
    const std::string name = sd ? absl::StrCat("sd", DiskLetters(n)) : absl::StrCat("mmcblk", n);
    const std::string dir = sd ? absl::StrCat("devices/platform/sata/host", n / 16, "/block/", name)
                               : absl::StrCat("devices/platform/mmc/mmc", n, "/block/", name);
    const uint32_t major = sd ? 8 : 179;
    const uint32_t base = static_cast<uint32_t>(n * 16);
    add_block({.dir = dir, .major = major, .minor = base, .devname = name, .devtype = "disk"});
    for (uint32_t part = 1; part <= 3 && counts.block < want_block; ++part) {
      const std::string pname = sd ? absl::StrCat(name, part) : absl::StrCat(name, "p", part);
      add_block({.dir = absl::StrCat(dir, "/", pname), .major = major, .minor = base + part,
                 .devname = pname, .devtype = "partition"});
    }
  }
  // tty: the virtual consoles, then serial, USB serial and ACM ports in turn.
  auto add_tty = [&](DeviceSpec d) {
    d.subsystem = "tty";
    WriteDevice(w, d);
    ++counts.tty;
  };
  for (uint32_t i = 0; i < 64 && counts.tty < want_tty; ++i) {
    add_tty({.dir = absl::StrCat("devices/virtual/tty/tty", i), .major = 4, .minor = i,
             .devname = absl::StrCat("tty", i)});
  }
  for (uint32_t i = 0; counts.tty < want_tty; ++i) {
    const uint32_t k = i / 3;
    switch (i % 3) {
      case 0:
        add_tty({.dir = absl::StrCat("devices/platform/serial", k / 32, "/tty/ttyS", k),
                 .major = 4, .minor = 64 + k, .devname = absl::StrCat("ttyS", k)});
        break;
      case 1:
        add_tty({.dir = absl::StrCat("devices/platform/usb/1-", k, "/tty/ttyUSB", k),
                 .major = 188, .minor = k, .devname = absl::StrCat("ttyUSB", k)});
        break;
      default:
        add_tty({.dir = absl::StrCat("devices/platform/usb/2-", k, "/tty/ttyACM", k),
                 .major = 166, .minor = k, .devname = absl::StrCat("ttyACM", k)});
        break;
    }
  }
  // input: an event node per input device, every other one with a mouse node too.
  for (uint32_t i = 0; counts.input < want_input; ++i) {
    const std::string dev_dir = absl::StrCat("devices/platform/keys/input/input", i);
    WriteDevice(w, {.dir = absl::StrCat(dev_dir, "/event", i), .subsystem = "input", .major = 13,
                    .minor = 64 + i, .devname = absl::StrCat("input/event", i)});
    ++counts.input;
    if (i % 2 == 1 && counts.input < want_input) {
      WriteDevice(w, {.dir = absl::StrCat(dev_dir, "/mouse", i), .subsystem = "input",
                      .major = 13, .minor = 1000000 + i, .devname = absl::StrCat("input/mouse", i)});
      ++counts.input;
    }
  }
  // net: interfaces have no node; mdev -s never sees them.
  for (uint32_t i = 0; counts.net < want_net; ++i) {
    WriteDevice(w, {.dir = absl::StrCat("devices/virtual/net/eth", i), .subsystem = "net",
                    .minor = i + 2, .devname = absl::StrCat("eth", i), .node = false});
    ++counts.net;
  }
  HOTRING_RETURN_IF_ERROR(w.status());
  return counts;
}

namespace {

absl::Status Snapshot(int dir_fd, const std::string& prefix, DevSnapshot& out) {
  DIR* dir = ::fdopendir(::dup(dir_fd));
  if (dir == nullptr) return ErrnoStatus("fdopendir");
  absl::Status status;
  while (const struct dirent* entry = ::readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      status = ErrnoStatus(absl::StrCat("fstatat(", prefix, name, ")"));
      break;
    }
    const std::string rel = absl::StrCat(prefix, name);
    char type = '?';
    std::string what;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      type = S_ISCHR(st.st_mode) ? 'c' : 'b';
      what = absl::StrCat(::major(st.st_rdev), ":", ::minor(st.st_rdev));
    } else if (S_ISLNK(st.st_mode)) {
      type = 'l';
      char target[4096];
      const ssize_t n = ::readlinkat(dir_fd, entry->d_name, target, sizeof(target));
      what = absl::StrCat("-> ", absl::string_view(target, n > 0 ? static_cast<size_t>(n) : 0));
    } else if (S_ISDIR(st.st_mode)) {
      type = 'd';
    } else if (S_ISREG(st.st_mode)) {
      type = '-';
    }
    // A link's own mode is always 0777 on Linux: leave it out.
    out[rel] = absl::StrFormat("%c %04o %u:%u %s", type, type == 'l' ? 0777 : (st.st_mode & 07777),
                               st.st_uid, st.st_gid, what);
    if (type == 'd') {
      UniqueFd child(::openat(dir_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!child.valid()) {
        status = ErrnoStatus(absl::StrCat("open(", rel, ")"));
        break;
      }
      status = Snapshot(child.get(), rel + "/", out);
      if (!status.ok()) break;
    }
  }
  ::closedir(dir);
  return status;
}

absl::Status Clear(int dir_fd, const std::string& path) {
  DIR* dir = ::fdopendir(::dup(dir_fd));
  if (dir == nullptr) return ErrnoStatus("fdopendir");
  absl::Status status;
  while (const struct dirent* entry = ::readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (::unlinkat(dir_fd, entry->d_name, 0) == 0) continue;
    if (errno != EISDIR && errno != EPERM) {
      status = ErrnoStatus(absl::StrCat("unlink(", path, "/", name, ")"));
      break;
    }
    UniqueFd child(::openat(dir_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child.valid()) {
      status = ErrnoStatus(absl::StrCat("open(", path, "/", name, ")"));
      break;
    }
    status = Clear(child.get(), absl::StrCat(path, "/", name));
    if (!status.ok()) break;
    if (::unlinkat(dir_fd, entry->d_name, AT_REMOVEDIR) != 0) {
      status = ErrnoStatus(absl::StrCat("rmdir(", path, "/", name, ")"));
      break;
    }
  }
  ::closedir(dir);
  return status;
}

}  // namespace

absl::StatusOr<DevSnapshot> SnapshotDev(const std::string& dev_dir) {
  UniqueFd fd(::open(dev_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", dev_dir, ")"));
  DevSnapshot out;
  HOTRING_RETURN_IF_ERROR(Snapshot(fd.get(), "", out));
  return out;
}

std::vector<std::string> DiffSnapshots(const DevSnapshot& a, const DevSnapshot& b, size_t limit) {
  std::vector<std::string> diffs;
  auto ia = a.begin();
  auto ib = b.begin();
  while ((ia != a.end() || ib != b.end()) && diffs.size() < limit) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      diffs.push_back(absl::StrCat("only in the first: ", ia->first, " ", ia->second));
      ++ia;
    } else if (ia == a.end() || ib->first < ia->first) {
      diffs.push_back(absl::StrCat("only in the second: ", ib->first, " ", ib->second));
      ++ib;
    } else {
      if (ia->second != ib->second) {
        diffs.push_back(absl::StrCat(ia->first, ": ", ia->second, " vs ", ib->second));
      }
      ++ia;
      ++ib;
    }
  }
  return diffs;
}

absl::Status ClearDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", dir, ")"));
  return Clear(fd.get(), dir);
}

}  // namespace hotring::hotplug::bench

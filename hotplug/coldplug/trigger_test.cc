#include "hotplug/coldplug/trigger.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::FakeSysfs;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::string_view kPci = "/devices/pci0000:00";
constexpr absl::string_view kAhci = "/devices/pci0000:00/0000:00:1f.2";
constexpr absl::string_view kSda = "/devices/pci0000:00/0000:00:1f.2/ata1/host0/block/sda";
constexpr absl::string_view kSda1 = "/devices/pci0000:00/0000:00:1f.2/ata1/host0/block/sda/sda1";
constexpr absl::string_view kUsb1 = "/devices/pci0000:00/0000:00:14.0/usb1";
constexpr absl::string_view kInput = "/devices/pci0000:00/0000:00:14.0/usb1/1-1/input/input3";
constexpr absl::string_view kTtyS0 = "/devices/platform/serial8250/tty/ttyS0";

// Every object of the fake machine, in the order trigger must write them.
const std::vector<std::string>& AllInOrder() {
  static const auto* const order = new std::vector<std::string>{
      "/bus/pci",  "/bus/pci/drivers/ahci", "/bus/usb",     "/bus/usb/drivers/hub",
      "/module/ahci", "/module/usbcore",    std::string(kPci), std::string(kUsb1),
      std::string(kInput), std::string(kAhci), std::string(kSda), std::string(kSda1),
      std::string(kTtyS0)};
  return *order;
}

constexpr absl::string_view kOriginal = "ORIGINAL=1\n";

FakeSysfs MakeMachine() {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  EXPECT_TRUE(sys.ok()) << sys.status();
  const std::vector<FakeSysfs::Device> devices = {
      {.devpath = std::string(kSda1), .subsystem = "block"},
      {.devpath = std::string(kSda), .subsystem = "block",
       .attributes = {{"removable", "0\n"}}},
      {.devpath = std::string(kTtyS0), .subsystem = "tty"},
      {.devpath = std::string(kInput), .subsystem = "input"},
      {.devpath = std::string(kUsb1), .subsystem = "usb", .kind = FakeSysfs::Kind::kBus},
      {.devpath = std::string(kAhci), .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
       .attributes = {{"vendor", "0x8086\n"}}},
      {.devpath = std::string(kPci), .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
       .attributes = {{"vendor", "0x1022\n"}}},
  };
  for (const FakeSysfs::Device& device : devices) {
    EXPECT_TRUE(sys->AddDevice(device).ok()) << device.devpath;
  }
  EXPECT_TRUE(sys->AddModule("usbcore").ok());
  EXPECT_TRUE(sys->AddModule("ahci").ok());
  EXPECT_TRUE(sys->AddDriver("pci", "ahci").ok());
  EXPECT_TRUE(sys->AddDriver("usb", "hub").ok());
  // A recognisable content in every uevent file, so an untouched file can be told apart.
  for (const std::string& path : AllInOrder()) {
    EXPECT_TRUE(sys->WriteFile(absl::StrCat(path.substr(1), "/uevent"), kOriginal).ok());
  }
  return std::move(*sys);
}

// Captures what RunTrigger prints.
class Output {
 public:
  Output() : file_(::open_memstream(&data_, &size_)) {}
  ~Output() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(data_);
  }
  FILE* file() { return file_; }
  std::string Take() {
    std::fclose(file_);
    file_ = nullptr;
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  FILE* file_;
};

// Where a library call to Trigger prints: into `out` and `err`, no progress line.
TriggerEnvironment QuietEnvironment(Output& out, Output& err) {
  TriggerEnvironment env;
  env.out = out.file();
  env.err = err.file();
  env.progress = false;
  return env;
}

struct RunResult {
  int code;
  std::string out;
  std::string err;
};

RunResult Trigger(const std::vector<std::string>& args, SettleFn settle = nullptr,
            std::optional<bool> progress = std::nullopt) {
  Output out;
  Output err;
  TriggerEnvironment env;
  env.out = out.file();
  env.err = err.file();
  env.settle = std::move(settle);
  env.progress = progress;
  const int code = RunTrigger(args, env);
  return RunResult{code, out.Take(), err.Take()};
}

// Records, through inotify, the order in which uevent files are closed after writing: what
// really happened on disk, independent of what trigger says it did.
class WriteOrder {
 public:
  WriteOrder(const FakeSysfs& sys, const std::vector<std::string>& objects)
      : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    EXPECT_TRUE(fd_.valid());
    for (const std::string& object : objects) {
      const int wd = ::inotify_add_watch(fd_.get(), sys.Path(object).c_str(), IN_CLOSE_WRITE);
      EXPECT_GE(wd, 0) << object;
      objects_[wd] = object;
    }
  }
  std::vector<std::string> Read() {
    std::vector<std::string> order;
    alignas(inotify_event) char buffer[64 * 1024];
    for (;;) {
      const ssize_t n = ::read(fd_.get(), buffer, sizeof(buffer));
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->len > 0 && std::string(event->name) == "uevent") {
          order.push_back(objects_[event->wd]);
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return order;
  }

 private:
  UniqueFd fd_;
  absl::flat_hash_map<int, std::string> objects_;
};

std::string Uevent(const FakeSysfs& sys, absl::string_view object) {
  absl::StatusOr<std::string> content = sys.ReadUevent(object);
  return content.ok() ? *content : std::string("<unreadable>");
}

TEST(TriggerTest, WritesChangeIntoEveryObjectInUdevadmOrder) {
  FakeSysfs sys = MakeMachine();
  WriteOrder order(sys, AllInOrder());
  const RunResult run = Trigger({"--sysfs-root", sys.root()});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(run.out, "13 triggered, 0 failed\n");
  EXPECT_THAT(order.Read(), ElementsAreArray(AllInOrder()));
  for (const std::string& object : AllInOrder()) EXPECT_EQ(Uevent(sys, object), "change") << object;
}

// A device that waits for its driver (a modalias, no driver link) is written before the walk;
// one whose driver is bound, and everything else, in udevadm's order; none twice.
TEST(TriggerTest, DriversFirstWritesUnboundDevicesBeforeTheWalk) {
  FakeSysfs sys = MakeMachine();
  ASSERT_TRUE(sys.WriteFile(absl::StrCat(kAhci.substr(1), "/modalias"), "pci:v00008086d00002922\n").ok());
  ASSERT_TRUE(sys.WriteFile(absl::StrCat(kUsb1.substr(1), "/modalias"), "usb:v1D6Bp0002\n").ok());
  ASSERT_TRUE(sys.WriteFile(absl::StrCat(kUsb1.substr(1), "/driver"), "").ok());  // bound
  // Unbound too, on a bus that sorts first, but deeper: it comes after the PCI function.
  const std::string acpi = "/devices/LNXSYSTM:00/LNXSYBUS:00/PNP0A03:00";
  ASSERT_TRUE(sys.AddDevice({.devpath = acpi,
                             .subsystem = "acpi",
                             .kind = FakeSysfs::Kind::kBus,
                             .attributes = {{"modalias", "acpi:PNP0A03:\n"}}})
                  .ok());
  std::vector<std::string> objects = AllInOrder();
  objects.push_back(acpi);
  WriteOrder order(sys, objects);
  const RunResult run = Trigger({"--sysfs-root", sys.root(), "--action", "add", "--drivers-first"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "15 triggered, 0 failed\n");  // the acpi bus is an object too
  std::vector<std::string> written = order.Read();
  ASSERT_GE(written.size(), 2u);
  EXPECT_EQ(written[0], kAhci);
  EXPECT_EQ(written[1], acpi);
  std::vector<std::string> rest(written.begin() + 2, written.end());
  std::vector<std::string> expected;
  for (const std::string& object : AllInOrder()) {
    if (object != kAhci) expected.push_back(object);
  }
  EXPECT_THAT(rest, ElementsAreArray(expected));  // (bus/acpi is not watched)
  for (const std::string& object : objects) EXPECT_EQ(Uevent(sys, object), "add") << object;

  // With a pattern it changes nothing: the filtered walk's order.
  WriteOrder filtered_order(sys, objects);
  const RunResult filtered = Trigger({"--sysfs-root", sys.root(), "--drivers-first",
                                      "--subsystem-match", "pci"});
  EXPECT_EQ(filtered.code, 0) << filtered.err;
  EXPECT_THAT(filtered_order.Read(),
              ElementsAreArray({std::string(kPci), std::string(kAhci)}));
}

TEST(TriggerTest, ActionAndTypeSelectWhatIsWritten) {
  FakeSysfs sys = MakeMachine();
  WriteOrder order(sys, AllInOrder());
  const RunResult run = Trigger({"--sysfs-root=" + sys.root(), "--action=add", "--type", "devices"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "7 triggered, 0 failed\n");
  const std::vector<std::string> devices(AllInOrder().begin() + 6, AllInOrder().end());
  EXPECT_THAT(order.Read(), ElementsAreArray(devices));
  for (const std::string& object : AllInOrder()) {
    const bool device = absl::StartsWith(object, "/devices/");
    EXPECT_EQ(Uevent(sys, object), device ? "add" : std::string(kOriginal)) << object;
  }
  const RunResult subsystems = Trigger({"--sysfs-root", sys.root(), "-t", "subsystems", "-c", "bind"});
  EXPECT_EQ(subsystems.code, 0);
  EXPECT_EQ(subsystems.out, "6 triggered, 0 failed\n");
  EXPECT_EQ(Uevent(sys, "/module/ahci"), "bind");
  EXPECT_EQ(Uevent(sys, kSda), "add");
}

TEST(TriggerTest, FiltersSelectObjects) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> written;
  };
  const std::vector<Case> cases = {
      {{"--subsystem-match", "block"}, {std::string(kSda), std::string(kSda1)}},
      {{"--subsystem-match", "bl*", "--subsystem-match", "tty"},
       {std::string(kSda), std::string(kSda1), std::string(kTtyS0)}},
      {{"--type=devices", "--subsystem-nomatch", "pci", "-S", "block"},
       {std::string(kUsb1), std::string(kInput), std::string(kTtyS0)}},
      {{"--sysname-match", "sda?"}, {std::string(kSda1)}},
      {{"-y", "usb*"}, {"/bus/usb", "/module/usbcore", std::string(kUsb1)}},
      {{"--attr-match", "removable"}, {std::string(kSda)}},
      {{"--attr-match", "vendor=0x8086"}, {std::string(kAhci)}},
      {{"--attr-match", "vendor=0x*", "--sysname-match", "pci*"}, {std::string(kPci)}},
      {{"--subsystem-match", "drivers"}, {"/bus/pci/drivers/ahci", "/bus/usb/drivers/hub"}},
  };
  for (const Case& c : cases) {
    FakeSysfs sys = MakeMachine();
    WriteOrder order(sys, AllInOrder());
    std::vector<std::string> args = {"--sysfs-root", sys.root()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const RunResult run = Trigger(args);
    const std::string label = absl::StrJoin(c.args, " ");
    EXPECT_EQ(run.code, 0) << label << ": " << run.err;
    EXPECT_EQ(run.out, absl::StrCat(c.written.size(), " triggered, 0 failed\n")) << label;
    EXPECT_THAT(order.Read(), ElementsAreArray(c.written)) << label;
    for (const std::string& object : AllInOrder()) {
      const bool chosen = std::find(c.written.begin(), c.written.end(), object) != c.written.end();
      EXPECT_EQ(Uevent(sys, object), chosen ? "change" : std::string(kOriginal))
          << label << ": " << object;
    }
  }
}

TEST(TriggerTest, DryRunWritesNothingAndPrintsEachWrite) {
  FakeSysfs sys = MakeMachine();
  WriteOrder order(sys, AllInOrder());
  const RunResult run = Trigger({"--sysfs-root", sys.root(), "--dry-run", "--action", "remove"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(order.Read().empty());
  for (const std::string& object : AllInOrder()) {
    EXPECT_EQ(Uevent(sys, object), kOriginal) << object;
  }
  std::vector<std::string> lines = absl::StrSplit(run.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), AllInOrder().size() + 1);
  for (size_t i = 0; i < AllInOrder().size(); ++i) {
    EXPECT_EQ(lines[i], absl::StrCat("remove -> ", sys.root(), AllInOrder()[i], "/uevent"));
  }
  EXPECT_EQ(lines.back(), "13 would be triggered (dry run)");
}

// The whole sysfs tree vanishes in the middle of the walk (a container's /sys unmounted, a
// test tree removed). The first object's uevent file is a FIFO whose pipe the test has filled,
// so trigger blocks writing it; while it is blocked the tree is deleted, then the pipe drained.
// Every later object is counted as vanished; nothing crashes, hangs or is reported twice.
TEST(TriggerTest, SysfsVanishingUnderTheWalkCountsTheRestAsVanished) {
  FakeSysfs sys = MakeMachine();
  const std::string first = sys.Path("bus/pci/uevent");
  ASSERT_EQ(::unlink(first.c_str()), 0);
  ASSERT_EQ(::mkfifo(first.c_str(), 0600), 0);
  // A reader that is also a writer: trigger's open does not wait, and the pipe can be filled.
  UniqueFd fifo(::open(first.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  ASSERT_TRUE(fifo.valid());
  const std::string filler(4096, 'x');
  while (::write(fifo.get(), filler.data(), filler.size()) > 0) {
  }
  ASSERT_EQ(errno, EAGAIN);

  std::atomic<pid_t> walker{0};
  RunResult run{};
  std::thread thread([&] {
    walker.store(static_cast<pid_t>(::syscall(SYS_gettid)));
    run = Trigger({"--sysfs-root", sys.root()});
  });
  // Wait (bounded) until trigger is blocked writing to the full pipe.
  bool blocked = false;
  for (int i = 0; i < 20'000 && !blocked; ++i) {
    if (walker.load() != 0) {
      std::ifstream wchan(absl::StrCat("/proc/self/task/", walker.load(), "/wchan"));
      std::string where;
      wchan >> where;
      blocked = absl::StrContains(where, "pipe_write");
    }
    if (!blocked) ::usleep(500);
  }
  EXPECT_TRUE(blocked) << "trigger never wrote to the first uevent file";
  ASSERT_EQ(std::system(absl::StrCat("rm -rf '", sys.root(), "'/*").c_str()), 0);
  std::string drained;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fifo.get(), buffer, sizeof(buffer));
    if (n > 0) {
      drained.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EAGAIN && !absl::EndsWith(drained, "change")) {
      ::usleep(1000);
      continue;
    }
    break;
  }
  thread.join();
  EXPECT_TRUE(absl::EndsWith(drained, "change"));
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, absl::StrCat("1 triggered, 0 failed, ", AllInOrder().size() - 1,
                                  " vanished\n"));
}

TEST(TriggerTest, VerbosePrintsEachWrittenFile) {
  FakeSysfs sys = MakeMachine();
  const RunResult run = Trigger({"--sysfs-root", sys.root(), "-v", "-s", "tty"});
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.out, absl::StrCat(sys.root(), kTtyS0, "/uevent\n1 triggered, 0 failed\n"));
}

TEST(TriggerTest, FailuresAreReportedAndTheWalkGoesOn) {
  FakeSysfs sys = MakeMachine();
  ASSERT_TRUE(sys.BreakUevent(kAhci, FakeSysfs::UeventFault::kWriteFails).ok());
  ASSERT_TRUE(sys.BreakUevent(kInput, FakeSysfs::UeventFault::kUnreadableAndUnwritable).ok());
  // A device that went away between the listing and the write.
  ASSERT_EQ(::symlink("../../devices/virtual/tty/gone", sys.Path("class/tty/gone").c_str()), 0);
  const RunResult run = Trigger({"--sysfs-root", sys.root()});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out,
            "11 triggered, 2 failed (Is a directory: 1, No space left on device: 1), "
            "1 vanished\n");
  EXPECT_THAT(run.err, HasSubstr(absl::StrCat(kAhci, "/uevent: No space left on device")));
  EXPECT_THAT(run.err, HasSubstr(absl::StrCat(kInput, "/uevent: Is a directory")));
  // Everything after the failures was still written.
  for (const std::string& object : AllInOrder()) {
    if (object == kAhci || object == kInput) continue;
    EXPECT_EQ(Uevent(sys, object), "change") << object;
  }
}

TEST(TriggerTest, BadArgumentsExitTwoAndWriteNothing) {
  FakeSysfs sys = MakeMachine();
  const std::vector<std::vector<std::string>> bad = {
      {"--bogus"},
      {"--action", "explode"},
      {"--action"},
      {"--action="},
      {"--type", "everything"},
      {"--attr-match", "=x"},
      {"--attr-match", "../../etc/passwd"},
      {"--timeout", "5"},              // without --settle
      {"--settle", "--timeout", "-1"},
      {"--dry-run=yes"},
      {"sda"},                         // positional
      {"-x"},                          // an unknown short option
      {"-c"},                          // a short option without its value
      {"--socket="},
      {"--settle"},                    // no daemon hook in this environment
  };
  for (const std::vector<std::string>& extra : bad) {
    std::vector<std::string> args = {"--sysfs-root", sys.root()};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult run = Trigger(args);
    const std::string label = absl::StrJoin(extra, " ");
    EXPECT_EQ(run.code, 2) << label;
    EXPECT_NE(run.err, "") << label;
    EXPECT_EQ(run.out, "") << label;
  }
  for (const std::string& object : AllInOrder()) EXPECT_EQ(Uevent(sys, object), kOriginal);
  const RunResult help = Trigger({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: hotring trigger"));
}

TEST(TriggerTest, UnusableSysfsRootExitsOne) {
  const RunResult run = Trigger({"--sysfs-root", "/nonexistent/hotring-sysfs"});
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr("/nonexistent/hotring-sysfs"));
}

TEST(TriggerTest, SettleRunsAfterEveryWriteWithTheTimeout) {
  FakeSysfs sys = MakeMachine();
  int calls = 0;
  absl::Duration asked;
  bool all_written_first = false;
  std::string asked_socket = "unset";
  SettleFn settle = [&](const std::string& socket, absl::Duration timeout) {
    ++calls;
    asked = timeout;
    asked_socket = socket;
    all_written_first = true;
    for (const std::string& object : AllInOrder()) {
      if (Uevent(sys, object) != "change") all_written_first = false;
    }
    return absl::OkStatus();
  };
  RunResult run = Trigger({"--sysfs-root", sys.root(), "--settle", "--timeout", "7.5"}, settle);
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(asked, absl::Milliseconds(7500));
  EXPECT_TRUE(all_written_first);

  EXPECT_EQ(asked_socket, "");  // the default socket

  run = Trigger({"--sysfs-root", sys.root(), "-w", "--socket=@other"}, settle);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(asked, kDefaultSettleTimeout);
  EXPECT_EQ(asked_socket, "@other");

  run = Trigger({"--sysfs-root", sys.root(), "--settle", "--dry-run"}, settle);
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(calls, 2);  // nothing written, nothing to wait for

  run = Trigger({"--sysfs-root", sys.root(), "--settle", "--timeout=1"},
                [](const std::string&, absl::Duration) { return absl::DeadlineExceededError("settle"); });
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr("settle: timed out after 1s"));
  run = Trigger({"--sysfs-root", sys.root(), "--settle"},
                [](const std::string&, absl::Duration) { return absl::UnavailableError("daemon not running"); });
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr("daemon not running"));
}

TEST(TriggerTest, ProgressLineOnlyWhenAsked) {
  FakeSysfs sys = MakeMachine();
  // A tree big enough for several progress redraws.
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(sys.AddDevice({.devpath = absl::StrCat("/devices/virtual/misc/m", i),
                               .subsystem = "misc"})
                    .ok());
  }
  const RunResult quiet = Trigger({"--sysfs-root", sys.root()});  // not a terminal
  EXPECT_THAT(quiet.out, Not(HasSubstr("\r")));
  EXPECT_EQ(quiet.out, "213 triggered, 0 failed\n");
  const RunResult terminal = Trigger({"--sysfs-root", sys.root()}, nullptr, /*progress=*/true);
  EXPECT_EQ(terminal.code, 0);
  EXPECT_THAT(terminal.out, HasSubstr("\r\033[Ktriggering 64/213 "));
  EXPECT_THAT(terminal.out, HasSubstr("triggering 213/213 "));
  // The summary stands alone on a cleared line at the end.
  EXPECT_TRUE(absl::EndsWith(terminal.out, "\r\033[K213 triggered, 0 failed\n")) << terminal.out;
}

}  // namespace
}  // namespace hotring::hotplug

namespace hotring::hotplug {
namespace {

// --needed: a machine whose uevent files say what the kernel's say (names, numbers, aliases),
// a module tree, and rules.
constexpr absl::string_view kUsbHost = "/devices/pci0000:00/0000:00:14.0";
constexpr absl::string_view kNull = "/devices/virtual/mem/null";

struct NeededMachine {
  FakeSysfs sys;
  modules::FakeModulesTree modules;
  std::string config;  // mdev.conf path
  std::vector<std::string> devices;  // every device, in ScanSysfs order
  std::map<std::string, std::string> original;  // devpath -> uevent content before the run
};

NeededMachine MakeNeededMachine(absl::string_view mdev_conf) {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  EXPECT_TRUE(sys.ok()) << sys.status();
  absl::StatusOr<modules::FakeModulesTree> tree = modules::FakeModulesTree::Create("6.1.0-test");
  EXPECT_TRUE(tree.ok()) << tree.status();
  const std::vector<FakeSysfs::Device> devices = {
      {.devpath = std::string(kPci), .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
       .uevent = {{"PCI_ID", "1022:1480"}}},
      {.devpath = std::string(kAhci), .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
       .uevent = {{"DRIVER", "ahci"}, {"MODALIAS", "pci:v00008086d00002922sv00sd00bc01sc06i01"}}},
      {.devpath = std::string(kUsbHost), .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
       .uevent = {{"MODALIAS", "pci:v00008086d00001E31sv00sd00bc0Csc03i30"}}},
      {.devpath = std::string(kUsb1), .subsystem = "usb", .kind = FakeSysfs::Kind::kBus,
       .uevent = {{"DEVTYPE", "usb_device"}, {"MODALIAS", "usb:v1D6Bp0002d0601dc09dsc00dp01"}}},
      {.devpath = std::string(kInput), .subsystem = "input",
       .uevent = {{"PRODUCT", "3/46d/c52b/111"},
                  {"MODALIAS", "input:b0003v046DpC52Be0111-e0,1,2,4,k71,ramlsfw"}}},
      {.devpath = std::string(kSda), .subsystem = "block",
       .uevent = {{"MAJOR", "8"}, {"MINOR", "0"}, {"DEVNAME", "sda"}, {"DEVTYPE", "disk"}}},
      {.devpath = std::string(kSda1), .subsystem = "block",
       .uevent = {{"MAJOR", "8"}, {"MINOR", "1"}, {"DEVNAME", "sda1"}, {"DEVTYPE", "partition"}}},
      {.devpath = std::string(kTtyS0), .subsystem = "tty",
       .uevent = {{"MAJOR", "4"}, {"MINOR", "64"}, {"DEVNAME", "ttyS0"}}},
      {.devpath = std::string(kNull), .subsystem = "mem",
       .uevent = {{"MAJOR", "1"}, {"MINOR", "3"}, {"DEVNAME", "null"}, {"DEVMODE", "0666"}}},
  };
  for (const FakeSysfs::Device& device : devices) {
    EXPECT_TRUE(sys->AddDevice(device).ok()) << device.devpath;
  }
  // ahci is loaded (it has a /sys/module directory), hid-logitech-dj is not, xhci-pci is
  // built in; usb:... matches nothing.
  EXPECT_TRUE(sys->AddModule("ahci").ok());
  EXPECT_TRUE(sys->AddModule("usbcore").ok());
  tree->AddModule({.path = "kernel/drivers/ata/ahci.ko", .aliases = {"pci:v00008086d00002922sv*sd*bc*sc*i*"}});
  tree->AddModule({.path = "kernel/drivers/hid/hid.ko"});
  tree->AddModule({.path = "kernel/drivers/hid/hid-logitech-dj.ko",
                   .deps = {"kernel/drivers/hid/hid.ko"},
                   .aliases = {"input:b0003v046DpC52B*"}});
  tree->AddBuiltin({.path = "kernel/drivers/usb/host/xhci-pci.ko",
                    .aliases = {"pci:v*d*sv*sd*bc0Csc03i30*"}});
  EXPECT_TRUE(tree->Write().ok());

  NeededMachine machine{std::move(*sys), std::move(*tree), "", {}, {}};
  machine.config = machine.sys.Path("mdev.conf");
  EXPECT_TRUE(machine.sys.WriteFile("mdev.conf", mdev_conf).ok());
  machine.devices = {std::string(kPci),  std::string(kUsbHost), std::string(kUsb1),
                     std::string(kInput), std::string(kAhci), std::string(kSda),
                     std::string(kSda1), std::string(kTtyS0), std::string(kNull)};
  for (const std::string& devpath : machine.devices) {
    machine.original[devpath] = Uevent(machine.sys, devpath);
  }
  return machine;
}

// Every uevent file under the fake root (devices, modules, buses, drivers) and its content:
// what a run changed, wherever it wrote.
std::map<std::string, std::string> AllUeventFiles(const FakeSysfs& sys) {
  std::map<std::string, std::string> files;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(sys.root(), error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_symlink(error) || it->path().filename() != "uevent") continue;
    std::ifstream in(it->path());
    std::stringstream content;
    content << in.rdbuf();
    files[it->path().string().substr(sys.root().size())] = content.str();
  }
  EXPECT_FALSE(error) << error.message();
  return files;
}

// The uevent files whose content differs between two snapshots.
std::vector<std::string> Changed(const std::map<std::string, std::string>& before,
                                 const std::map<std::string, std::string>& after) {
  std::vector<std::string> changed;
  for (const auto& [path, content] : after) {
    const auto old = before.find(path);
    if (old == before.end() || old->second != content) changed.push_back(path);
  }
  return changed;
}

constexpr absl::string_view kBoardRules =
    "# a board's rules\n"
    "null 0:0 0666\n"
    "sd[a-z] 0:6 0640\n"
    "sd[a-z][0-9]+ 0:0 0660\n"  // spells out the default: nothing to do
    "ttyS[0-9]+ 0:0 0660 $echo gone\n";  // runs on remove only

std::vector<std::string> NeededArgs(const NeededMachine& machine) {
  return {"--sysfs-root", machine.sys.root(), "--needed", "--config", machine.config,
          "--modules-root", machine.modules.root(), "--kernel-version", "6.1.0-test"};
}

TEST(TriggerNeededTest, ReplaysAddOnlyForWhatRulesAndMissingModulesActOnParentsFirst) {
  NeededMachine machine = MakeNeededMachine(kBoardRules);
  const std::map<std::string, std::string> before = AllUeventFiles(machine.sys);
  ASSERT_GE(before.size(), 12u);  // 9 devices, 2 modules, the pci and usb buses
  WriteOrder order(machine.sys, machine.devices);
  const RunResult run = Trigger(NeededArgs(machine));
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(run.out, "needed: 7 of 9 devices; 7 triggered, 0 failed\n");
  // The input device's driver is missing (its parents come first, those that are devices);
  // sda has its own owner and mode (after its controller); null its own mode. The loaded ahci,
  // the built-in xhci, the unmatched usb alias, sda1's and ttyS0's default-like rules: nothing
  // on their own account.
  const std::vector<std::string> expected = {std::string(kPci),   std::string(kUsbHost),
                                             std::string(kUsb1),  std::string(kInput),
                                             std::string(kAhci),  std::string(kSda),
                                             std::string(kNull)};
  EXPECT_THAT(order.Read(), ElementsAreArray(expected));
  for (const std::string& devpath : machine.devices) {
    const bool picked = std::find(expected.begin(), expected.end(), devpath) != expected.end();
    EXPECT_EQ(Uevent(machine.sys, devpath), picked ? "add" : machine.original[devpath])
        << devpath;
  }
  std::vector<std::string> expected_files;
  for (const std::string& devpath : expected) expected_files.push_back(devpath + "/uevent");
  std::sort(expected_files.begin(), expected_files.end());
  EXPECT_THAT(Changed(before, AllUeventFiles(machine.sys)), ElementsAreArray(expected_files));
}

TEST(TriggerNeededTest, DryRunSaysWhyAndWritesNothing) {
  NeededMachine machine = MakeNeededMachine(kBoardRules);
  const std::map<std::string, std::string> before = AllUeventFiles(machine.sys);
  ASSERT_GE(before.size(), 12u);
  WriteOrder order(machine.sys, machine.devices);
  std::vector<std::string> args = NeededArgs(machine);
  args.push_back("--dry-run");
  const RunResult run = Trigger(args);
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(order.Read().empty());
  EXPECT_THAT(Changed(before, AllUeventFiles(machine.sys)), ::testing::IsEmpty());
  for (const std::string& devpath : machine.devices) {
    EXPECT_EQ(Uevent(machine.sys, devpath), machine.original[devpath]) << devpath;
  }
  const std::string conf = machine.config;
  EXPECT_EQ(run.out,
            absl::StrCat(kPci, "  parent of ", kInput, "\n",                     //
                         kUsbHost, "  parent of ", kInput, "\n",                 //
                         kUsb1, "  parent of ", kInput, "\n",                    //
                         kInput, "  module hid_logitech_dj not loaded\n",       //
                         kAhci, "  parent of ", kSda, "\n",                      //
                         kSda, "  rule ", conf, ":3 (owner 0:6, mode 0640)\n",  //
                         kNull, "  rule ", conf, ":2 (mode 0666)\n",            //
                         "needed: 7 of 9 devices; 7 would be triggered (dry run)\n"));
}

TEST(TriggerNeededTest, WithoutAConfigOnlyMissingModulesCount) {
  NeededMachine machine = MakeNeededMachine("");
  std::vector<std::string> args = NeededArgs(machine);
  args[4] = machine.sys.Path("no-such-mdev.conf");  // busybox's default: root:root 0660
  args.push_back("-n");
  const RunResult run = Trigger(args);
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, absl::StrCat(kPci, "  parent of ", kInput, "\n",      //
                                  kUsbHost, "  parent of ", kInput, "\n",  //
                                  kUsb1, "  parent of ", kInput, "\n",     //
                                  kInput, "  module hid_logitech_dj not loaded\n",
                                  "needed: 4 of 9 devices; 4 would be triggered (dry run)\n"));
}

// What `hotring init` asks for: the needed devices, plus every node and network interface
// (settle --for and root= wait for them), with the parents they bring.
TEST(TriggerNeededTest, KeepingWaitableDevicesAddsEveryNodeAndInterface) {
  NeededMachine machine = MakeNeededMachine("");
  ASSERT_TRUE(machine.sys
                  .AddDevice({.devpath = "/devices/pci0000:00/0000:00:03.0/net/eth0",
                              .subsystem = "net",
                              .uevent = {{"INTERFACE", "eth0"}, {"IFINDEX", "2"}}})
                  .ok());
  // No node, no interface, no driver to load: still left alone.
  ASSERT_TRUE(machine.sys
                  .AddDevice({.devpath = "/devices/platform/pcspkr", .subsystem = "platform",
                              .kind = FakeSysfs::Kind::kBus,
                              .uevent = {{"MODALIAS", "platform:pcspkr"}}})
                  .ok());
  std::vector<std::string> args = NeededArgs(machine);
  args[4] = machine.sys.Path("no-such-mdev.conf");  // busybox's default: nothing to do
  absl::StatusOr<std::optional<TriggerOptions>> parsed = ParseTriggerArgs(args);
  ASSERT_TRUE(parsed.ok() && parsed->has_value()) << parsed.status();
  std::optional<TriggerOptions>& options = *parsed;
  options->needed_keeps_waitable = true;
  options->dry_run = true;
  Output out;
  Output err;
  TriggerEnvironment env = QuietEnvironment(out, err);
  absl::StatusOr<TriggerReport> report = hotplug::Trigger(*options, env);
  ASSERT_TRUE(report.ok()) << report.status();
  // Without it only the input device (and its parents) would be replayed (the test above);
  // now sda, sda1, ttyS0, null and eth0 too, with sda's controller as their parent; the PC
  // speaker, with no node and no module to load, still is not.
  EXPECT_EQ(report->devices_considered, 11u);
  EXPECT_EQ(report->devices_needed, 10u);
  const std::string printed = out.Take();
  EXPECT_THAT(printed, HasSubstr(absl::StrCat(kSda, "  a node (settle --for")));
  EXPECT_THAT(printed, HasSubstr(absl::StrCat(kNull, "  a node (settle --for")));
  EXPECT_THAT(printed,
              HasSubstr("/devices/pci0000:00/0000:00:03.0/net/eth0  a network interface"));
  EXPECT_THAT(printed, HasSubstr(absl::StrCat(kAhci, "  parent of ", kSda)));
  EXPECT_THAT(printed, ::testing::Not(HasSubstr("pcspkr")));
}

// As `hotring init` runs it: a device waiting for a driver (a modalias file, no driver link)
// goes first, before the needed decision is made, and only once; the rest follows in the
// needed walk's order. The hook between the two passes sees the first pass done and nothing
// of the second.
TEST(TriggerNeededTest, DriversFirstGoesBeforeTheNeededWalkAndTheHookSeesOnlyIt) {
  NeededMachine machine = MakeNeededMachine(kBoardRules);
  ASSERT_TRUE(machine.sys
                  .WriteFile(absl::StrCat(kUsbHost.substr(1), "/modalias"),
                             "pci:v00008086d00001E31sv00sd00bc0Csc03i30\n")
                  .ok());
  std::vector<std::string> args = NeededArgs(machine);
  args.push_back("--drivers-first");
  absl::StatusOr<std::optional<TriggerOptions>> parsed = ParseTriggerArgs(args);
  ASSERT_TRUE(parsed.ok() && parsed->has_value()) << parsed.status();
  std::optional<TriggerOptions>& options = *parsed;
  Output out;
  Output err;
  TriggerEnvironment env = QuietEnvironment(out, err);
  std::map<std::string, std::string> at_hook;
  int hook_calls = 0;
  env.after_drivers_first = [&] {
    ++hook_calls;
    for (const std::string& devpath : machine.devices) {
      at_hook[devpath] = Uevent(machine.sys, devpath);
    }
  };
  WriteOrder order(machine.sys, machine.devices);
  absl::StatusOr<TriggerReport> report = hotplug::Trigger(*options, env);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(err.Take(), "");
  EXPECT_EQ(hook_calls, 1);
  for (const std::string& devpath : machine.devices) {
    EXPECT_EQ(at_hook[devpath], devpath == kUsbHost ? "add" : machine.original[devpath]) << devpath;
  }
  // The USB host controller first, then the needed walk without it (it is also the parent
  // of the USB and input devices there).
  EXPECT_THAT(order.Read(),
              ElementsAreArray({std::string(kUsbHost), std::string(kPci), std::string(kUsb1),
                                std::string(kInput), std::string(kAhci), std::string(kSda),
                                std::string(kNull)}));
  EXPECT_EQ(report->triggered, 7u);
  EXPECT_EQ(report->devices_needed, 6u);
  EXPECT_EQ(report->devices_first, 1u);
  EXPECT_EQ(FormatTriggerSummary(*report, false),
            "needed: 6 of 9 devices, 1 waiting for a driver written first; 7 triggered, 0 failed");
  EXPECT_TRUE(report->first_write.has_value());
  // The same as a dry run, in the needed walk's words.
  options->dry_run = true;
  Output dry_out;
  Output dry_err;
  env.out = dry_out.file();
  env.err = dry_err.file();
  absl::StatusOr<TriggerReport> dry = hotplug::Trigger(*options, env);
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_THAT(dry_out.Take(), ::testing::StartsWith(absl::StrCat(
                                  kUsbHost, "  waits for a driver (written first)\n")));
}

// Among the devices waiting for a driver, a USB host controller goes first (its enumeration
// waits on timers after the driver binds), even after a device the bus lists before it.
TEST(TriggerNeededTest, DriversFirstPutsTheUsbHostControllerFirst) {
  NeededMachine machine = MakeNeededMachine("");
  const std::string vga = "/devices/pci0000:00/0000:00:02.0";
  ASSERT_TRUE(
      machine.sys
          .AddDevice(
              {.devpath = vga,
               .subsystem = "pci",
               .kind = FakeSysfs::Kind::kBus,
               .uevent = {{"MODALIAS", "pci:v00001234d00001111sv00001AF4sd00001100bc03sc00i00"}},
               .attributes = {{"modalias",
                               "pci:v00001234d00001111sv00001AF4sd00001100bc03sc00i00\n"}}})
          .ok());
  ASSERT_TRUE(machine.sys
                  .WriteFile(absl::StrCat(kUsbHost.substr(1), "/modalias"),
                             "pci:v00008086d00001E31sv00001AF4sd00001100bc0Csc03i30\n")
                  .ok());
  const RunResult run = Trigger({"--sysfs-root", machine.sys.root(), "--type", "devices",
                                 "--action", "add", "--drivers-first", "--dry-run"});
  EXPECT_EQ(run.code, 0) << run.err;
  const std::vector<std::string> lines = absl::StrSplit(run.out, '\n');
  ASSERT_GE(lines.size(), 2u) << run.out;
  EXPECT_EQ(lines[0],
            absl::StrCat("add -> ", machine.sys.root(), "/bus/pci/devices/0000:00:14.0/uevent"))
      << run.out;
  EXPECT_EQ(lines[1],
            absl::StrCat("add -> ", machine.sys.root(), "/bus/pci/devices/0000:00:02.0/uevent"))
      << run.out;
}

// The rules are loaded before anything is written: a configuration that does not load stops
// the run with nothing written, drivers-first pass or not.
TEST(TriggerNeededTest, ARuleFileThatDoesNotLoadWritesNothing) {
  NeededMachine machine = MakeNeededMachine("");
  ASSERT_TRUE(machine.sys
                  .WriteFile(absl::StrCat(kUsbHost.substr(1), "/modalias"),
                             "pci:v00008086d00001E31sv00001AF4sd00001100bc0Csc03i30\n")
                  .ok());
  ASSERT_TRUE(machine.sys.WriteFile("broken.conf", "sd[a-z] nobody-here:0 0660\n").ok());
  const std::map<std::string, std::string> before = AllUeventFiles(machine.sys);
  std::vector<std::string> args = NeededArgs(machine);
  args[4] = machine.sys.Path("broken.conf");
  args.push_back("--drivers-first");
  const RunResult run = Trigger(args);
  EXPECT_NE(run.code, 0);
  EXPECT_THAT(run.err, HasSubstr("nobody-here")) << run.err;
  EXPECT_THAT(Changed(before, AllUeventFiles(machine.sys)), ::testing::IsEmpty());
}

// Without --drivers-first the hook still runs once, before anything is written.
TEST(TriggerNeededTest, TheHookRunsOnceBeforeTheWalkWithoutADriversFirstPass) {
  NeededMachine machine = MakeNeededMachine(kBoardRules);
  absl::StatusOr<std::optional<TriggerOptions>> parsed = ParseTriggerArgs(NeededArgs(machine));
  ASSERT_TRUE(parsed.ok() && parsed->has_value()) << parsed.status();
  std::optional<TriggerOptions>& options = *parsed;
  Output out;
  Output err;
  TriggerEnvironment env = QuietEnvironment(out, err);
  const std::map<std::string, std::string> before = AllUeventFiles(machine.sys);
  int calls = 0;
  std::vector<std::string> changed_at_hook;
  env.after_drivers_first = [&] {
    ++calls;
    changed_at_hook = Changed(before, AllUeventFiles(machine.sys));
  };
  absl::StatusOr<TriggerReport> report = hotplug::Trigger(*options, env);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(changed_at_hook, ::testing::IsEmpty());
  EXPECT_EQ(report->triggered, 7u);
  EXPECT_EQ(report->devices_first, 0u);
}

TEST(TriggerNeededTest, FiltersStillApply) {
  NeededMachine machine = MakeNeededMachine(kBoardRules);
  std::vector<std::string> args = NeededArgs(machine);
  args.insert(args.end(), {"--subsystem-match", "block", "-n"});
  const RunResult run = Trigger(args);
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, absl::StrCat(kSda, "  rule ", machine.config, ":3 (owner 0:6, mode 0640)\n",
                                  "needed: 1 of 2 devices; 1 would be triggered (dry run)\n"));
}

TEST(TriggerNeededTest, BadConfigAndBadCombinationsWriteNothing) {
  NeededMachine machine = MakeNeededMachine("sd[a-z] nosuchuser:0 0640\n");
  const RunResult broken = Trigger(NeededArgs(machine));
  EXPECT_EQ(broken.code, 1);
  EXPECT_THAT(broken.err, HasSubstr(absl::StrCat(machine.config, ":1: ")));
  EXPECT_THAT(broken.err, HasSubstr("nosuchuser"));
  const std::vector<std::vector<std::string>> bad = {
      {"--config", machine.config},          // without --needed
      {"--modules-root", "/"},               // without --needed
      {"--needed", "--action", "change"},    // --needed replays add
      {"--needed", "--type", "subsystems"},  // no devices
      {"--needed", "--kernel-version", "../x"},
  };
  for (const std::vector<std::string>& extra : bad) {
    std::vector<std::string> args = {"--sysfs-root", machine.sys.root()};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult run = Trigger(args);
    EXPECT_EQ(run.code, 2) << absl::StrJoin(extra, " ");
    EXPECT_NE(run.err, "") << absl::StrJoin(extra, " ");
  }
  for (const std::string& devpath : machine.devices) {
    EXPECT_EQ(Uevent(machine.sys, devpath), machine.original[devpath]) << devpath;
  }
}

}  // namespace
}  // namespace hotring::hotplug

#include "hotplug/sysfs.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::FakeSysfs;
using ::testing::ElementsAre;

std::vector<std::string> Devpaths(const std::vector<SysfsEntry>& entries) {
  std::vector<std::string> out;
  for (const SysfsEntry& entry : entries) out.push_back(entry.devpath);
  return out;
}

constexpr absl::string_view kPci = "/devices/pci0000:00";
constexpr absl::string_view kAhci = "/devices/pci0000:00/0000:00:1f.2";
constexpr absl::string_view kSda =
    "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda";
constexpr absl::string_view kSda1 =
    "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1";
constexpr absl::string_view kUsb1 = "/devices/pci0000:00/0000:00:14.0/usb1";
constexpr absl::string_view kInput = "/devices/pci0000:00/0000:00:14.0/usb1/1-1/input/input3";
constexpr absl::string_view kMd0 = "/devices/virtual/block/md0";
constexpr absl::string_view kTtyS0 = "/devices/platform/serial8250/tty/ttyS0";

// A small machine: PCI root and AHCI controller (bus pci), a disk and its partition (class
// block), a USB bus with an input device, an md array, a serial port; plus modules, buses and
// drivers.
FakeSysfs MakeMachine() {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  EXPECT_TRUE(sys.ok()) << sys.status();
  const std::vector<FakeSysfs::Device> devices = {
      // Added children first: the walk must not depend on creation order.
      {.devpath = std::string(kSda1),
       .subsystem = "block",
       .uevent = {{"MAJOR", "8"}, {"MINOR", "1"}, {"DEVNAME", "sda1"}, {"DEVTYPE", "partition"},
                  {"PARTN", "1"}}},
      {.devpath = std::string(kSda),
       .subsystem = "block",
       .uevent = {{"MAJOR", "8"}, {"MINOR", "0"}, {"DEVNAME", "sda"}, {"DEVTYPE", "disk"}},
       .attributes = {{"removable", "0\n"}, {"size", "500118192\n"}}},
      {.devpath = std::string(kAhci),
       .subsystem = "pci",
       .kind = FakeSysfs::Kind::kBus,
       .uevent = {{"DRIVER", "ahci"}, {"PCI_CLASS", "10601"},
                  {"MODALIAS", "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01"}},
       .attributes = {{"vendor", "0x8086\n"}}},
      {.devpath = std::string(kPci), .subsystem = "pci", .kind = FakeSysfs::Kind::kBus},
      {.devpath = std::string(kUsb1),
       .subsystem = "usb",
       .kind = FakeSysfs::Kind::kBus,
       .uevent = {{"MAJOR", "189"}, {"MINOR", "0"}, {"DEVNAME", "bus/usb/001/001"},
                  {"DEVTYPE", "usb_device"}}},
      {.devpath = std::string(kInput),
       .subsystem = "input",
       .uevent = {{"PRODUCT", "3/46d/c52b/111"}, {"MODALIAS", "input:b0003v046D"}}},
      {.devpath = std::string(kMd0),
       .subsystem = "block",
       .uevent = {{"MAJOR", "9"}, {"MINOR", "0"}, {"DEVNAME", "md0"}}},
      {.devpath = std::string(kTtyS0),
       .subsystem = "tty",
       .uevent = {{"MAJOR", "4"}, {"MINOR", "64"}, {"DEVNAME", "ttyS0"}}},
  };
  for (const FakeSysfs::Device& device : devices) {
    EXPECT_TRUE(sys->AddDevice(device).ok()) << device.devpath;
  }
  EXPECT_TRUE(sys->AddModule("usbcore").ok());
  EXPECT_TRUE(sys->AddModule("ahci").ok());
  EXPECT_TRUE(sys->AddDriver("pci", "ahci").ok());
  EXPECT_TRUE(sys->AddDriver("usb", "hub").ok());
  return std::move(*sys);
}

TEST(SysfsTest, SubsystemsFirstThenDevicesParentsBeforeChildrenEachOnce) {
  FakeSysfs sys = MakeMachine();
  absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), SysfsFilter());
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_TRUE(scan->problems.empty());
  EXPECT_EQ(scan->vanished, 0u);
  EXPECT_THAT(Devpaths(scan->entries),
              ElementsAre(
                  // subsystems, by path: buses with their drivers, then modules
                  "/bus/pci", "/bus/pci/drivers/ahci", "/bus/usb", "/bus/usb/drivers/hub",
                  "/module/ahci", "/module/usbcore",
                  // devices, parents first, md last
                  kPci, "/devices/pci0000:00/0000:00:14.0/usb1",
                  "/devices/pci0000:00/0000:00:14.0/usb1/1-1/input/input3", kAhci, kSda, kSda1,
                  kTtyS0, kMd0));
  absl::flat_hash_map<std::string, SysfsEntry> by_path;
  for (const SysfsEntry& entry : scan->entries) by_path[entry.devpath] = entry;
  EXPECT_EQ(by_path["/module/ahci"].kind, SysfsEntryKind::kModule);
  EXPECT_EQ(by_path["/module/ahci"].subsystem, "module");
  EXPECT_EQ(by_path["/bus/pci"].kind, SysfsEntryKind::kBus);
  EXPECT_EQ(by_path["/bus/pci"].subsystem, "subsystem");
  EXPECT_EQ(by_path["/bus/pci/drivers/ahci"].kind, SysfsEntryKind::kDriver);
  EXPECT_EQ(by_path["/bus/pci/drivers/ahci"].subsystem, "drivers");
  EXPECT_EQ(by_path[std::string(kSda)].kind, SysfsEntryKind::kDevice);
  EXPECT_EQ(by_path[std::string(kSda)].subsystem, "block");
  EXPECT_EQ(by_path[std::string(kSda)].sysname, "sda");
  EXPECT_EQ(by_path[std::string(kAhci)].subsystem, "pci");
}

TEST(SysfsTest, DeviceListedUnderBusAndClassComesOnce) {
  FakeSysfs sys = MakeMachine();
  // The same device also linked from a class (its subsystem link now says "misc").
  ASSERT_TRUE(sys.AddDevice({.devpath = std::string(kAhci), .subsystem = "misc"}).ok());
  SysfsFilter filter;
  filter.subsystems = false;
  absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), filter);
  ASSERT_TRUE(scan.ok()) << scan.status();
  const std::vector<std::string> paths = Devpaths(scan->entries);
  EXPECT_EQ(std::count(paths.begin(), paths.end(), std::string(kAhci)), 1);
  EXPECT_EQ(paths.size(), 8u);
}

TEST(SysfsTest, DevpathOrder) {
  EXPECT_TRUE(DevpathBefore("/devices/a", "/devices/a/b"));
  EXPECT_FALSE(DevpathBefore("/devices/a/b", "/devices/a"));
  // Component-wise: the child of "a" comes before the sibling "a-b" (plain strcmp would put
  // "a-b" between "a" and "a/b").
  EXPECT_TRUE(DevpathBefore("/devices/a/b", "/devices/a-b"));
  EXPECT_FALSE(DevpathBefore("/devices/a", "/devices/a"));
  // md and dm after everything else, even their parents' later siblings.
  EXPECT_TRUE(DevpathBefore("/devices/zzz", "/devices/virtual/block/dm-0"));
  EXPECT_TRUE(DevpathBefore("/devices/zzz", "/devices/virtual/block/md127"));
  EXPECT_TRUE(DevpathBefore("/devices/virtual/block/dm-0", "/devices/virtual/block/dm-1"));
  // A sound card's controlC device after the card's other devices.
  const std::string card = "/devices/pci0000:00/0000:00:1b.0/sound/card0";
  EXPECT_TRUE(DevpathBefore(card + "/pcmC0D0p", card + "/controlC0"));
  EXPECT_TRUE(DevpathBefore(card + "/hwC0D0", card + "/controlC0"));
  EXPECT_FALSE(DevpathBefore(card + "/controlC0", card + "/pcmC0D0c"));
  EXPECT_TRUE(DevpathBefore(card, card + "/controlC0"));
  // ...but the card-level order is kept: card0's control before card1's devices.
  EXPECT_TRUE(DevpathBefore(card + "/controlC0",
                            "/devices/pci0000:00/0000:00:1b.0/sound/card1/pcmC1D0p"));
}

TEST(SysfsTest, FiltersFollowUdevadm) {
  FakeSysfs sys = MakeMachine();
  {
    SysfsFilter filter;
    filter.subsystem_match = {"bl*"};
    absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), filter);
    ASSERT_TRUE(scan.ok());
    // Subsystem entries are named module/subsystem/drivers: none matches "bl*".
    EXPECT_THAT(Devpaths(scan->entries), ElementsAre(kSda, kSda1, kMd0));
  }
  {
    SysfsFilter filter;
    filter.subsystems = false;
    filter.subsystem_nomatch = {"block", "pci"};
    absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), filter);
    ASSERT_TRUE(scan.ok());
    EXPECT_THAT(Devpaths(scan->entries), ElementsAre(kUsb1, kInput, kTtyS0));
  }
  {
    SysfsFilter filter;
    filter.sysname_match = {"sda*", "tty?0"};
    absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), filter);
    ASSERT_TRUE(scan.ok());
    EXPECT_THAT(Devpaths(scan->entries), ElementsAre(kSda, kSda1, kTtyS0));
  }
  {
    SysfsFilter filter;
    filter.devices = false;
    filter.subsystem_match = {"drivers"};
    absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), filter);
    ASSERT_TRUE(scan.ok());
    EXPECT_THAT(Devpaths(scan->entries), ElementsAre("/bus/pci/drivers/ahci",
                                                     "/bus/usb/drivers/hub"));
  }
  {
    SysfsFilter filter;
    filter.attr_match = {{"removable", std::nullopt}};  // exists
    absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), filter);
    ASSERT_TRUE(scan.ok());
    EXPECT_THAT(Devpaths(scan->entries), ElementsAre(kSda));
  }
  {
    SysfsFilter filter;
    filter.attr_match = {{"vendor", "0x80*"}};  // value glob, trailing newline ignored
    absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), filter);
    ASSERT_TRUE(scan.ok());
    EXPECT_THAT(Devpaths(scan->entries), ElementsAre(kAhci));
    filter.attr_match = {{"vendor", "0x10de"}};
    scan = ScanSysfs(sys.root(), filter);
    ASSERT_TRUE(scan.ok());
    EXPECT_TRUE(scan->entries.empty());
  }
}

TEST(SysfsTest, VanishedDevicesAreCountedNotReported) {
  FakeSysfs sys = MakeMachine();
  // A link left behind by a device that went away between readdir and realpath.
  ASSERT_EQ(::symlink("../../devices/virtual/input/gone", sys.Path("class/input/gone").c_str()),
            0);
  // Not an object at all: class/net/bonding_masters is a plain file in the real sysfs.
  ASSERT_TRUE(sys.WriteFile("class/net/bonding_masters", "").ok());
  absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), SysfsFilter());
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->vanished, 1u);
  EXPECT_TRUE(scan->problems.empty());
  EXPECT_EQ(scan->entries.size(), 14u);  // everything else is still there
}

TEST(SysfsTest, LinkOutsideTheRootIsAProblemNotADevice) {
  FakeSysfs sys = MakeMachine();
  ASSERT_EQ(::symlink("/tmp", sys.Path("class/tty/escape").c_str()), 0);
  absl::StatusOr<SysfsScan> scan = ScanSysfs(sys.root(), SysfsFilter());
  ASSERT_TRUE(scan.ok()) << scan.status();
  ASSERT_EQ(scan->problems.size(), 1u);
  EXPECT_TRUE(absl::StrContains(scan->problems[0].path, "class/tty/escape"));
  for (const SysfsEntry& entry : scan->entries) EXPECT_NE(entry.sysname, "escape");
}

TEST(SysfsTest, BadRootIsAnError) {
  EXPECT_FALSE(ScanSysfs("/nonexistent/sysfs", SysfsFilter()).ok());
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok());
  ASSERT_TRUE(sys->WriteFile("plain", "x").ok());
  EXPECT_FALSE(ScanSysfs(sys->Path("plain"), SysfsFilter()).ok());
  EXPECT_TRUE(absl::IsNotFound(ScanSysfs(sys->Path("devices"), SysfsFilter()).status()));
  // An empty but sysfs-shaped tree is fine: nothing to do.
  absl::StatusOr<SysfsScan> empty = ScanSysfs(sys->root(), SysfsFilter());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->entries.empty());
}

TEST(SysfsTest, ReadUeventFileBuildsTheEvent) {
  FakeSysfs sys = MakeMachine();
  const SysfsEntry entry{SysfsEntryKind::kDevice, std::string(kSda), "block", "sda"};
  absl::StatusOr<Event> event = ReadUeventFile(sys.root(), entry, "add", EventSource::kResync);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->action, "add");
  EXPECT_EQ(event->devpath, kSda);
  EXPECT_EQ(event->subsystem, "block");
  EXPECT_EQ(event->devname, "sda");
  EXPECT_EQ(event->major, "8");
  EXPECT_EQ(event->minor, "0");
  EXPECT_FALSE(event->seqnum.has_value());
  EXPECT_EQ(event->source, EventSource::kResync);
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(event->env, (Env{{"ACTION", "add"},
                             {"DEVPATH", std::string(kSda)},
                             {"SUBSYSTEM", "block"},
                             {"MAJOR", "8"},
                             {"MINOR", "0"},
                             {"DEVNAME", "sda"},
                             {"DEVTYPE", "disk"}}));
  const SysfsEntry ahci{SysfsEntryKind::kDevice, std::string(kAhci), "pci", "0000:00:1f.2"};
  absl::StatusOr<Event> pci = ReadUeventFile(sys.root(), ahci, "change", EventSource::kKernel);
  ASSERT_TRUE(pci.ok()) << pci.status();
  EXPECT_EQ(pci->modalias, "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01");
  EXPECT_EQ(pci->action, "change");

  const SysfsEntry gone{SysfsEntryKind::kDevice, "/devices/gone", "misc", "gone"};
  EXPECT_TRUE(absl::IsNotFound(
      ReadUeventFile(sys.root(), gone, "add", EventSource::kResync).status()));
  ASSERT_TRUE(sys.WriteFile("devices/platform/serial8250/tty/ttyS0/uevent", "MAJOR=4\ngarbage\n")
                  .ok());
  const SysfsEntry tty{SysfsEntryKind::kDevice, std::string(kTtyS0), "tty", "ttyS0"};
  EXPECT_TRUE(absl::IsInvalidArgument(
      ReadUeventFile(sys.root(), tty, "add", EventSource::kResync).status()));
}

TEST(SysfsTest, SynthesizeAddEventsCoversEveryDeviceAndSurvivesBreakage) {
  FakeSysfs sys = MakeMachine();
  {
    absl::StatusOr<std::vector<Event>> events = SynthesizeAddEvents(sys.root());
    ASSERT_TRUE(events.ok()) << events.status();
    std::vector<std::string> paths;
    for (const Event& event : *events) {
      EXPECT_EQ(event.action, "add");
      EXPECT_EQ(event.source, EventSource::kResync);
      EXPECT_FALSE(event.seqnum.has_value());
      paths.push_back(event.devpath);
    }
    // Devices only (no module/bus/driver objects), in walk order.
    EXPECT_THAT(paths, ElementsAre(kPci, kUsb1, kInput, kAhci, kSda, kSda1, kTtyS0, kMd0));
  }
  ASSERT_TRUE(sys.BreakUevent(kTtyS0, FakeSysfs::UeventFault::kUnreadableAndUnwritable).ok());
  ASSERT_TRUE(sys.WriteFile(absl::StrCat(kUsb1.substr(1), "/uevent"), "MAJOR=not-a-number\n").ok());
  absl::StatusOr<SynthesizedEvents> report = SynthesizeAddEventsReport(sys.root());
  ASSERT_TRUE(report.ok()) << report.status();
  std::vector<std::string> paths;
  for (const Event& event : report->events) paths.push_back(event.devpath);
  EXPECT_THAT(paths, ElementsAre(kPci, kInput, kAhci, kSda, kSda1, kMd0));
  ASSERT_EQ(report->problems.size(), 2u);
  EXPECT_TRUE(absl::StrContains(report->problems[0].path, "usb1/uevent"));
  EXPECT_TRUE(absl::StrContains(report->problems[1].path, "ttyS0/uevent"));
  EXPECT_EQ(report->vanished, 0u);
}

// Read-only smoke test over this machine's /sys: the walk works on the real layout (symlinks
// into /sys/devices, plain files in class directories, devices appearing and going), devices
// are unique, and every device's parent device, when it is one, comes first.
TEST(SysfsTest, RealSysfsWalkIsConsistent) {
  SysfsFilter filter;
  absl::StatusOr<SysfsScan> scan = ScanSysfs("/sys", filter);
  ASSERT_TRUE(scan.ok()) << scan.status();
  absl::flat_hash_map<std::string, size_t> position;
  size_t devices = 0;
  for (size_t i = 0; i < scan->entries.size(); ++i) {
    const SysfsEntry& entry = scan->entries[i];
    EXPECT_TRUE(position.emplace(entry.devpath, i).second) << "twice: " << entry.devpath;
    if (entry.kind != SysfsEntryKind::kDevice) {
      EXPECT_EQ(devices, 0u) << entry.devpath << " (a subsystem entry after a device)";
      continue;
    }
    ++devices;
    EXPECT_FALSE(entry.subsystem.empty()) << entry.devpath;
  }
  EXPECT_GT(devices, 0u);
  for (const SysfsEntry& entry : scan->entries) {
    for (size_t slash = entry.devpath.rfind('/'); slash != 0 && slash != std::string::npos;
         slash = entry.devpath.rfind('/', slash - 1)) {
      const auto parent = position.find(entry.devpath.substr(0, slash));
      if (parent != position.end()) {
        EXPECT_LT(parent->second, position[entry.devpath]) << entry.devpath;
      }
    }
  }
  absl::StatusOr<SynthesizedEvents> events = SynthesizeAddEventsReport("/sys");
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_GT(events->events.size(), 0u);
  for (const SysfsProblem& problem : events->problems) {
    ADD_FAILURE() << problem.path << ": " << problem.status;  // real uevent files all parse
  }
}

}  // namespace
}  // namespace hotring::hotplug

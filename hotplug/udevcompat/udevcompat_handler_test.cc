// The --udev-compat link end to end on a fake sysfs, a dev root and a run directory in the test's
// temporary directory, block devices being image files made by sgdisk and mkfs.ext4, and the
// announcements received on netlink group 2 in a private network namespace.
#include "hotplug/udevcompat/udevcompat_handler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udev/database.h"
#include "hotplug/udev/monitor.h"
#include "io/reactor.h"
#include "testing/fake_sysfs.h"
#include "testing/udev_monitor_listener.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug::udevcompat {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using testing::FakeSysfs;

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while (p != nullptr && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  EXPECT_EQ(p != nullptr ? ::pclose(p) : -1, 0) << command << ": " << out;
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Readlink(const std::string& path) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Event MakeEvent(std::string action, std::string subsystem, std::string devpath, uint64_t seqnum,
                std::vector<std::pair<std::string, std::string>> extra) {
  absl::StatusOr<Event> e = testing::MakeUevent(action, devpath, subsystem, seqnum, extra);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *e : Event{};
}

class UdevCompatHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::EnterPrivateNetworkNamespace().ok());
    absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
    ASSERT_TRUE(sys.ok());
    sys_.emplace(std::move(*sys));
    const char* t = std::getenv("TEST_TMPDIR");
    base_ = absl::StrCat(t != nullptr ? t : "/tmp", "/udevcompat_", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Shell(absl::StrCat("rm -rf ", base_, " && mkdir -p ", base_, "/dev ", base_, "/run ", base_, "/outside"));
    absl::StatusOr<std::unique_ptr<io::Reactor>> r = io::Reactor::Create();
    ASSERT_TRUE(r.ok());
    reactor_ = std::move(*r);
    // Listen on group 2 before anything is announced.
    absl::StatusOr<testing::UdevMonitorListener> listener = testing::UdevMonitorListener::Open();
    ASSERT_TRUE(listener.ok()) << listener.status();
    listener_.emplace(std::move(*listener));
  }
  void TearDown() override { handler_.reset(); }

  void MakeHandler() {
    absl::StatusOr<std::unique_ptr<UdevCompatHandler>> h = UdevCompatHandler::Create(
        {.run_dir = base_ + "/run", .dev_root = base_ + "/dev", .sysfs_root = sys_->root()});
    ASSERT_TRUE(h.ok()) << h.status();
    handler_ = std::move(*h);
  }

  void Handle(const Event& event) {
    absl::StatusOr<HandlerResult> r = reactor_->BlockOn(handler_->Handle(*reactor_, event));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->outcome, HandlerOutcome::kHandled);
  }

  // The announcements received since the last call, decoded.
  std::vector<std::map<std::string, std::string>> Announcements() {
    absl::StatusOr<std::vector<std::map<std::string, std::string>>> got = listener_->ReceiveAnnouncements();
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *std::move(got) : std::vector<std::map<std::string, std::string>>{};
  }

  uint64_t Counter(const std::string& name) {
    std::vector<std::pair<std::string, uint64_t>> counters;
    handler_->AppendCounters(counters);
    for (const auto& [k, v] : counters) {
      if (k == name) return v;
    }
    ADD_FAILURE() << "no counter " << name;
    return 0;
  }

  std::string Db(const std::string& id) { return ReadFile(absl::StrCat(base_, "/run/data/", id)); }

  void AddVirtioDisk() {
    ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:02.0", .subsystem = "pci",
                                 .kind = FakeSysfs::Kind::kBus}).ok());
    ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:02.0/virtio1",
                                 .subsystem = "virtio", .kind = FakeSysfs::Kind::kBus}).ok());
    ASSERT_TRUE(sys_->AddDevice({.devpath = kDisk,
                                 .subsystem = "block",
                                 .uevent = {{"MAJOR", "254"}, {"MINOR", "0"}, {"DEVNAME", "vda"}, {"DEVTYPE", "disk"}},
                                 .attributes = {{"serial", "SER1\n"}}}).ok());
    ASSERT_TRUE(sys_->AddDevice({.devpath = kPart,
                                 .subsystem = "block",
                                 .uevent = {{"MAJOR", "254"}, {"MINOR", "1"}, {"DEVNAME", "vda1"},
                                            {"DEVTYPE", "partition"}, {"PARTN", "1"}},
                                 .attributes = {{"partition", "1\n"}}}).ok());
  }

  // dev/vda: a GPT disk; dev/vda1: its first partition, an ext4 filesystem (also copied into
  // the disk image at the partition's offset).
  void MakeDiskImages(const std::string& label) {
    const std::string dev = base_ + "/dev";
    Shell(absl::StrCat("truncate -s 12M ", dev, "/vda && /sbin/sgdisk -U 11111111-2222-3333-4444-555555555555 ",
                       "-n 1:2048:+8M -c 1:rootpart -u 1:aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee ", dev, "/vda"));
    Shell(absl::StrCat("truncate -s 8M ", dev, "/vda1 && /sbin/mkfs.ext4 -q -F -L '", label,
                       "' -U 0b9c1d3e-5f7a-4c2b-9e8d-123456789abc ", dev, "/vda1"));
    Shell(absl::StrCat("dd if=", dev, "/vda1 of=", dev, "/vda bs=512 seek=2048 conv=notrunc status=none"));
  }

  Event DiskEvent(const std::string& action, uint64_t seq) {
    return MakeEvent(action, "block", kDisk, seq,
                     {{"MAJOR", "254"}, {"MINOR", "0"}, {"DEVNAME", "vda"}, {"DEVTYPE", "disk"}});
  }
  Event PartEvent(const std::string& action, uint64_t seq) {
    return MakeEvent(action, "block", kPart, seq,
                     {{"MAJOR", "254"}, {"MINOR", "1"}, {"DEVNAME", "vda1"}, {"DEVTYPE", "partition"}, {"PARTN", "1"}});
  }

  static constexpr char kDisk[] = "/devices/pci0000:00/0000:00:02.0/virtio1/block/vda";
  static constexpr char kPart[] = "/devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1";

  std::optional<FakeSysfs> sys_;
  std::string base_;
  std::unique_ptr<io::Reactor> reactor_;
  std::unique_ptr<UdevCompatHandler> handler_;
  std::optional<testing::UdevMonitorListener> listener_;
};

// The tag bloom filter of a libudev header (bytes 32..39, big-endian halves).
uint64_t HeaderBloom(const std::string& datagram) {
  uint64_t bloom = 0;
  for (size_t i = 32; i < 40 && i < datagram.size(); ++i)
    bloom = (bloom << 8) | static_cast<unsigned char>(datagram[i]);
  return bloom;
}

TEST_F(UdevCompatHandlerTest, VirtioDiskAndPartition) {
  AddVirtioDisk();
  MakeDiskImages("root fs");
  MakeHandler();
  Handle(DiskEvent("add", 10));
  Handle(PartEvent("add", 11));
  const std::string dev = base_ + "/dev";

  const udev::DatabaseEntry disk = udev::ParseDatabaseEntry(Db("b254:0"));
  EXPECT_THAT(disk.links, ElementsAre("disk/by-id/virtio-SER1", "disk/by-path/pci-0000:00:02.0",
                                      "disk/by-path/virtio-pci-0000:00:02.0"));
  EXPECT_GT(disk.usec_initialized, 0u);
  EXPECT_EQ(udev::PropertyValue(disk.properties, "ID_SERIAL"), "SER1");
  EXPECT_EQ(udev::PropertyValue(disk.properties, "ID_PATH"), "pci-0000:00:02.0");
  EXPECT_EQ(udev::PropertyValue(disk.properties, "ID_PART_TABLE_TYPE"), "gpt");
  EXPECT_EQ(udev::PropertyValue(disk.properties, "ID_PART_TABLE_UUID"), "11111111-2222-3333-4444-555555555555");

  const udev::DatabaseEntry part = udev::ParseDatabaseEntry(Db("b254:1"));
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_FS_TYPE"), "ext4");
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_FS_LABEL"), "root_fs");
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_FS_UUID"), "0b9c1d3e-5f7a-4c2b-9e8d-123456789abc");
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_PART_ENTRY_NAME"), "rootpart");
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_PART_ENTRY_DISK"), "254:0");
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_PART_ENTRY_OFFSET"), "2048");
  // Imported from the disk (IMPORT{parent}="ID_*").
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_SERIAL"), "SER1");
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_PART_TABLE_TYPE"), "gpt");
  EXPECT_THAT(part.links,
              ElementsAre("disk/by-id/virtio-SER1-part1", "disk/by-path/pci-0000:00:02.0-part1",
                          "disk/by-path/virtio-pci-0000:00:02.0-part1",
                          "disk/by-uuid/0b9c1d3e-5f7a-4c2b-9e8d-123456789abc", "disk/by-label/root\\x20fs",
                          "disk/by-partuuid/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                          "disk/by-partlabel/rootpart"));
  for (const std::string& link : part.links) {
    EXPECT_EQ(Readlink(absl::StrCat(dev, "/", link)), "../../vda1") << link;
  }
  EXPECT_EQ(Readlink(dev + "/disk/by-path/pci-0000:00:02.0"), "../../vda");

  const auto messages = Announcements();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].at("ACTION"), "add");
  EXPECT_EQ(messages[1].at("SEQNUM"), "11");
  EXPECT_EQ(messages[1].at("ID_FS_TYPE"), "ext4");
  EXPECT_THAT(messages[1].at("DEVLINKS"), HasSubstr("/dev/disk/by-label/root\\x20fs"));
  EXPECT_EQ(messages[1].at("USEC_INITIALIZED"), absl::StrCat(part.usec_initialized));

  // A change keeps the first initialization time.
  Handle(PartEvent("change", 12));
  EXPECT_EQ(udev::ParseDatabaseEntry(Db("b254:1")).usec_initialized, part.usec_initialized);

  // Remove: links and database entry go; the announcement still carries the properties.
  Handle(PartEvent("remove", 13));
  EXPECT_FALSE(Exists(dev + "/disk/by-label/root\\x20fs"));
  EXPECT_FALSE(Exists(dev + "/disk/by-uuid/0b9c1d3e-5f7a-4c2b-9e8d-123456789abc"));
  EXPECT_FALSE(Exists(base_ + "/run/data/b254:1"));
  EXPECT_TRUE(Exists(base_ + "/run/data/b254:0"));
  EXPECT_TRUE(Exists(dev + "/disk/by-path/pci-0000:00:02.0"));
  const auto after = Announcements();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[1].at("ACTION"), "remove");
  EXPECT_EQ(after[1].at("ID_FS_TYPE"), "ext4");
  EXPECT_EQ(Counter("udevcompat_links_removed"), 7u);
  EXPECT_EQ(Counter("udevcompat_db_removed"), 1u);
  EXPECT_EQ(Counter("udevcompat_monitor_sent"), 4u);
  EXPECT_EQ(Counter("udevcompat_errors"), 0u);
}

TEST_F(UdevCompatHandlerTest, LinkTakenByAnotherDeviceIsNotRemoved) {
  AddVirtioDisk();
  MakeDiskImages("shared");
  MakeHandler();
  Handle(PartEvent("add", 1));
  const std::string link = base_ + "/dev/disk/by-label/shared";
  ASSERT_EQ(Readlink(link), "../../vda1");
  // Another device with the same label took the name since.
  ASSERT_EQ(::unlink(link.c_str()), 0);
  ASSERT_EQ(::symlink("../../vdb1", link.c_str()), 0);
  Handle(PartEvent("remove", 2));
  EXPECT_EQ(Readlink(link), "../../vdb1");
}

TEST_F(UdevCompatHandlerTest, LabelsNeverLeaveTheDevRoot) {
  AddVirtioDisk();
  MakeDiskImages("../../x");
  MakeHandler();
  Handle(PartEvent("add", 1));
  // Encoded: one file name inside by-label.
  EXPECT_EQ(Readlink(base_ + "/dev/disk/by-label/..\\x2f..\\x2fx"), "../../vda1");
  EXPECT_FALSE(Exists(base_ + "/x"));
  EXPECT_FALSE(Exists(base_ + "/dev/x"));
}

TEST_F(UdevCompatHandlerTest, SymlinkedDirectoryInTheDevRootIsRefused) {
  AddVirtioDisk();
  MakeDiskImages("root");
  ASSERT_EQ(::symlink((base_ + "/outside").c_str(), (base_ + "/dev/disk").c_str()), 0);
  MakeHandler();
  Handle(PartEvent("add", 1));
  EXPECT_THAT(Shell("ls -A " + base_ + "/outside"), IsEmpty());
  EXPECT_EQ(Counter("udevcompat_links_refused"), 7u);
  // The database lists only links that exist.
  EXPECT_THAT(udev::ParseDatabaseEntry(Db("b254:1")).links, IsEmpty());
}

TEST_F(UdevCompatHandlerTest, MalformedSuperblockIsCountedAndTheEventStillHandled) {
  AddVirtioDisk();
  MakeDiskImages("root");
  // Corrupt the ext4 block size field of the partition.
  Shell(absl::StrCat("printf '\\036' | dd of=", base_, "/dev/vda1 bs=1 seek=1048 conv=notrunc status=none"));
  MakeHandler();
  Handle(PartEvent("add", 1));
  EXPECT_EQ(Counter("udevcompat_probe_errors"), 1u);
  const udev::DatabaseEntry part = udev::ParseDatabaseEntry(Db("b254:1"));
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_FS_TYPE"), "");
  EXPECT_EQ(udev::PropertyValue(part.properties, "ID_PART_ENTRY_NAME"), "rootpart");
  EXPECT_EQ(Announcements().size(), 1u);
}

TEST_F(UdevCompatHandlerTest, UsbKeyboardEventNodeAndInputDevice) {
  const std::string intf = "/devices/pci0000:00/0000:00:04.0/usb1/1-1/1-1:1.0";
  ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:04.0", .subsystem = "pci",
                               .kind = FakeSysfs::Kind::kBus}).ok());
  ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:04.0/usb1", .subsystem = "usb",
                               .kind = FakeSysfs::Kind::kBus, .uevent = {{"DEVTYPE", "usb_device"}}}).ok());
  ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:04.0/usb1/1-1", .subsystem = "usb",
                               .kind = FakeSysfs::Kind::kBus, .uevent = {{"DEVTYPE", "usb_device"}},
                               .attributes = {{"idVendor", "0627"}, {"idProduct", "0001"},
                                              {"manufacturer", "QEMU"}, {"product", "QEMU USB Keyboard"},
                                              {"serial", "68284-0000:00:04.0-1"}}}).ok());
  ASSERT_TRUE(sys_->AddDevice({.devpath = intf, .subsystem = "usb", .kind = FakeSysfs::Kind::kBus,
                               .uevent = {{"DEVTYPE", "usb_interface"}},
                               .attributes = {{"bInterfaceNumber", "00"}, {"bInterfaceClass", "03"}}}).ok());
  const std::string input = intf + "/0003:0627:0001.0001/input/input2";
  ASSERT_TRUE(sys_->AddDevice({.devpath = intf + "/0003:0627:0001.0001", .subsystem = "hid",
                               .kind = FakeSysfs::Kind::kBus}).ok());
  ASSERT_TRUE(sys_->AddDevice({.devpath = input, .subsystem = "input"}).ok());
  ASSERT_TRUE(sys_->WriteFile(input + "/capabilities/ev", testing::KernelBitmap("120013") + "\n").ok());
  ASSERT_TRUE(sys_->WriteFile(input + "/capabilities/key",
                              testing::KernelBitmap("1000000000007 ff9f207ac14057ff febeffdfffefffff "
                                                    "fffffffffffffffe") + "\n").ok());
  ASSERT_TRUE(sys_->WriteFile(input + "/id/bustype", "0003\n").ok());
  ASSERT_TRUE(sys_->AddDevice({.devpath = input + "/event2", .subsystem = "input",
                               .uevent = {{"MAJOR", "13"}, {"MINOR", "66"}, {"DEVNAME", "input/event2"}}}).ok());
  MakeHandler();
  Handle(MakeEvent("add", "input", input, 20, {{"PRODUCT", "3/627/1/110"}, {"NAME", "\"QEMU USB Keyboard\""}}));
  Handle(MakeEvent("add", "input", input + "/event2", 21,
                   {{"MAJOR", "13"}, {"MINOR", "66"}, {"DEVNAME", "input/event2"}}));
  const udev::DatabaseEntry parent = udev::ParseDatabaseEntry(Db("+input:input2"));
  EXPECT_EQ(udev::PropertyValue(parent.properties, "ID_INPUT_KEYBOARD"), "1");
  EXPECT_THAT(parent.links, IsEmpty());
  const udev::DatabaseEntry event = udev::ParseDatabaseEntry(Db("c13:66"));
  EXPECT_EQ(udev::PropertyValue(event.properties, "ID_INPUT"), "1");
  EXPECT_EQ(udev::PropertyValue(event.properties, "ID_INPUT_KEY"), "1");
  EXPECT_EQ(udev::PropertyValue(event.properties, "ID_INPUT_KEYBOARD"), "1");
  EXPECT_EQ(udev::PropertyValue(event.properties, "ID_BUS"), "usb");
  EXPECT_EQ(udev::PropertyValue(event.properties, "ID_VENDOR_ID"), "0627");
  EXPECT_EQ(udev::PropertyValue(event.properties, "ID_SERIAL"), "QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1");
  EXPECT_EQ(udev::PropertyValue(event.properties, "ID_PATH"), "pci-0000:00:04.0-usb-0:1:1.0");
  EXPECT_THAT(event.links,
              ElementsAre("input/by-id/usb-QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1-event-kbd",
                          "input/by-path/pci-0000:00:04.0-usb-0:1:1.0-event-kbd"));
  EXPECT_EQ(Readlink(base_ + "/dev/input/by-path/pci-0000:00:04.0-usb-0:1:1.0-event-kbd"), "../../input/event2");
  const auto messages = Announcements();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].at("DEVNAME"), "input/event2");
  EXPECT_EQ(messages[1].at("ID_INPUT_KEYBOARD"), "1");
}

TEST_F(UdevCompatHandlerTest, SeatTagsInTheDatabaseTheTagIndexAndTheAnnouncements) {
  const std::string gpu = "/devices/pci0000:00/0000:00:02.0";
  ASSERT_TRUE(sys_->AddDevice({.devpath = gpu, .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
                               .uevent = {{"DRIVER", "bochs-drm"}},
                               .attributes = {{"class", "0x030000"}}}).ok());
  ASSERT_TRUE(
      sys_->AddDevice({.devpath = gpu + "/drm/card0",
                       .subsystem = "drm",
                       .uevent = {{"MAJOR", "226"}, {"MINOR", "0"}, {"DEVNAME", "dri/card0"}}})
          .ok());
  MakeHandler();
  Handle(MakeEvent("add", "pci", gpu, 30, {{"DRIVER", "bochs-drm"}}));
  Handle(MakeEvent("add", "drm", gpu + "/drm/card0", 31,
                   {{"MAJOR", "226"}, {"MINOR", "0"}, {"DEVNAME", "dri/card0"}}));
  EXPECT_THAT(udev::ParseDatabaseEntry(Db("+pci:0000:00:02.0")).tags, IsEmpty());
  const std::string card = Db("c226:0");
  EXPECT_THAT(card, HasSubstr("E:ID_FOR_SEAT=drm-pci-0000_00_02_0\n"));
  EXPECT_THAT(
      card,
      HasSubstr("G:master-of-seat\nG:seat\nG:uaccess\nQ:master-of-seat\nQ:seat\nQ:uaccess\nV:1\n"));
  for (const char* tag : {"seat", "uaccess", "master-of-seat"}) {
    EXPECT_TRUE(Exists(absl::StrCat(base_, "/run/tags/", tag, "/c226:0"))) << tag;
  }
  auto messages = Announcements();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].count("TAGS"), 0u);
  EXPECT_EQ(messages[1].at("TAGS"), ":master-of-seat:seat:uaccess:");
  EXPECT_EQ(messages[1].at("CURRENT_TAGS"), ":master-of-seat:seat:uaccess:");
  EXPECT_EQ(messages[1].at("ID_FOR_SEAT"), "drm-pci-0000_00_02_0");
  // The header's bloom filter holds the three tags (what udev_monitor_filter_add_match_tag's
  // in-kernel filter tests); the untagged PCI device's is empty.
  const std::vector<std::string>& raw = listener_->received();
  ASSERT_EQ(raw.size(), 2u);
  EXPECT_EQ(HeaderBloom(raw[0]), 0u);
  EXPECT_EQ(HeaderBloom(raw[1]),
            udev::TagBloomBits("seat") | udev::TagBloomBits("uaccess") | udev::TagBloomBits("master-of-seat"));

  // qemu's seat bridge: its ID_SEAT goes into the database, and the device below imports it.
  const std::string bridge = "/devices/pci0000:00/0000:00:0a.0";
  ASSERT_TRUE(sys_->AddDevice({.devpath = bridge, .subsystem = "pci", .kind = FakeSysfs::Kind::kBus,
                               .attributes = {{"vendor", "0x1b36"}, {"device", "0x000a"}}}).ok());
  ASSERT_TRUE(sys_->AddDevice({.devpath = bridge + "/0000:01:00.0", .subsystem = "pci",
                               .kind = FakeSysfs::Kind::kBus}).ok());
  Handle(MakeEvent("add", "pci", bridge, 32, {}));
  Handle(MakeEvent("add", "pci", bridge + "/0000:01:00.0", 33, {}));
  EXPECT_THAT(Db("+pci:0000:00:0a.0"), HasSubstr("E:ID_SEAT=seat-pci-pci-0000_00_0a_0\n"));
  const udev::DatabaseEntry below = udev::ParseDatabaseEntry(Db("+pci:0000:01:00.0"));
  EXPECT_EQ(udev::PropertyValue(below.properties, "ID_SEAT"), "seat-pci-pci-0000_00_0a_0");
  EXPECT_THAT(below.tags, ElementsAre("seat-pci-pci-0000_00_0a_0"));
  EXPECT_TRUE(Exists(base_ + "/run/tags/seat-pci-pci-0000_00_0a_0/+pci:0000:01:00.0"));
  EXPECT_TRUE(Exists(base_ + "/run/tags/seat-pci-pci-0000_00_0a_0/+pci:0000:00:0a.0"));
  Announcements();

  // A change that no longer sets a tag: it stays among the device's tags (G:, TAGS=) but not
  // the current ones (Q:, CURRENT_TAGS=), as sd-device keeps them.
  ASSERT_TRUE(sys_->WriteFile(bridge + "/device", "0x000b\n").ok());
  Handle(MakeEvent("change", "pci", bridge, 34, {}));
  const udev::DatabaseEntry changed = udev::ParseDatabaseEntry(Db("+pci:0000:00:0a.0"));
  EXPECT_THAT(changed.tags, ElementsAre("seat", "seat-pci-pci-0000_00_0a_0"));
  EXPECT_THAT(changed.current_tags, IsEmpty());
  messages = Announcements();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].at("TAGS"), ":seat:seat-pci-pci-0000_00_0a_0:");
  EXPECT_EQ(messages[0].count("CURRENT_TAGS"), 0u);

  // Remove: the index files go with the entry; the announcement still carries the tags.
  Handle(MakeEvent("remove", "drm", gpu + "/drm/card0", 35,
                   {{"MAJOR", "226"}, {"MINOR", "0"}, {"DEVNAME", "dri/card0"}}));
  EXPECT_FALSE(Exists(base_ + "/run/data/c226:0"));
  for (const char* tag : {"seat", "uaccess", "master-of-seat"}) {
    EXPECT_FALSE(Exists(absl::StrCat(base_, "/run/tags/", tag, "/c226:0"))) << tag;
  }
  EXPECT_TRUE(Exists(base_ + "/run/tags/seat/+pci:0000:00:0a.0"));
  messages = Announcements();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].at("ACTION"), "remove");
  EXPECT_EQ(messages[0].at("TAGS"), ":master-of-seat:seat:uaccess:");
}

TEST_F(UdevCompatHandlerTest, EventWithoutSeqnumIsRecordedButNotAnnounced) {
  AddVirtioDisk();
  MakeDiskImages("root");
  MakeHandler();
  Event e = PartEvent("add", 1);
  e.seqnum.reset();
  e.env.erase(std::remove_if(e.env.begin(), e.env.end(), [](const auto& kv) { return kv.first == "SEQNUM"; }),
              e.env.end());
  Handle(e);
  EXPECT_TRUE(Exists(base_ + "/run/data/b254:1"));
  EXPECT_THAT(Announcements(), IsEmpty());
  EXPECT_EQ(Counter("udevcompat_monitor_skipped"), 1u);
}

}  // namespace
}  // namespace hotring::hotplug::udevcompat

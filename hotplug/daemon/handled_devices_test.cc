#include "hotplug/daemon/handled_devices.h"

#include "gtest/gtest.h"

namespace hotring::hotplug {
namespace {

Event Device(std::string action, std::string devpath, std::string subsystem,
             std::vector<std::pair<std::string, std::string>> extra = {}) {
  Event e;
  e.action = action;
  e.devpath = devpath;
  e.subsystem = subsystem;
  e.env = {{"ACTION", action}, {"DEVPATH", devpath}, {"SUBSYSTEM", subsystem}};
  for (auto& [k, v] : extra) {
    if (k == "DEVNAME") e.devname = v;
    e.env.emplace_back(k, v);
  }
  return e;
}

SettleCondition Cond(absl::string_view text) {
  absl::StatusOr<SettleCondition> c = ParseSettleCondition(text);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(SettleConditionTest, Parses) {
  EXPECT_EQ(Cond("DEVNAME=/dev/vda").value, "vda");
  EXPECT_EQ(Cond("DEVPATH=/devices/a=b").value, "/devices/a=b");
  EXPECT_EQ(Cond("LABEL=").value, "");
  EXPECT_TRUE(Cond("UUID=x").names_filesystem());
  EXPECT_FALSE(ParseSettleCondition("vda").ok());
  EXPECT_FALSE(ParseSettleCondition("=vda").ok());
  EXPECT_FALSE(ParseSettleCondition("DEV NAME=vda").ok());
}

TEST(DevicePropertiesTest, PacksEveryPieceAndFindsEachVariable) {
  const std::string long_value(3000, 'v');
  const DeviceProperties p(Device("add", "/devices/x", "block",
                                  {{"DEVNAME", "sda"}, {"EMPTY", ""}, {"LONG", long_value},
                                   {std::string("WITH\0NUL", 8), std::string("a\0b", 3)}}));
  EXPECT_EQ(p.devpath(), "/devices/x");
  EXPECT_EQ(p.subsystem(), "block");
  EXPECT_EQ(p.devname(), "sda");
  EXPECT_EQ(p.Get("ACTION"), "add");
  EXPECT_EQ(p.Get("DEVPATH"), "/devices/x");
  EXPECT_EQ(p.Get("EMPTY"), "");
  EXPECT_EQ(p.Get("LONG"), long_value);
  EXPECT_EQ(p.Get(absl::string_view("WITH\0NUL", 8)), absl::string_view("a\0b", 3));
  EXPECT_EQ(p.Get("MISSING"), std::nullopt);
  EXPECT_EQ(p.Get("sda"), std::nullopt);  // a value is never taken for a key
  EXPECT_FALSE(p.empty());
  EXPECT_GT(p.bytes(), 3000u);
  EXPECT_TRUE(DeviceProperties().empty());
  EXPECT_EQ(DeviceProperties().bytes(), 0u);
  EXPECT_EQ(DeviceProperties().devpath(), "");
  EXPECT_EQ(DeviceProperties().Get("ACTION"), std::nullopt);
}

// DEVPATH, SUBSYSTEM and DEVNAME variables that repeat the pieces are not packed twice, and
// are still found; ones that differ (or repeat) are packed and found as before.
TEST(DevicePropertiesTest, VariablesThatRepeatThePiecesArePackedOnce) {
  const DeviceProperties p(Device("add", "/devices/x", "block", {{"DEVNAME", "sda"}}));
  // The length, the flag byte, three pieces, ACTION (a number) = add: nothing else.
  EXPECT_EQ(p.bytes(), 1 + 1 + (2 + 10) + (2 + 5) + (2 + 3) + (2 + 2 + 3));
  EXPECT_EQ(p.Get("DEVPATH"), "/devices/x");
  EXPECT_EQ(p.Get("SUBSYSTEM"), "block");
  EXPECT_EQ(p.Get("DEVNAME"), "sda");
  EXPECT_EQ(p.Get("ACTION"), "add");

  // No DEVNAME variable: none is found, though the piece is there (empty).
  const DeviceProperties none(Device("add", "/devices/y", "net"));
  EXPECT_EQ(none.Get("DEVNAME"), std::nullopt);
  EXPECT_EQ(none.Get("DEVPATH"), "/devices/y");

  // A variable that says otherwise than its field is kept, and the first one is the answer.
  Event odd = Device("add", "/devices/z", "block");
  odd.devname = "vdb";
  odd.env.emplace_back("DEVNAME", "other");
  odd.env.emplace_back("DEVNAME", "vdb");
  odd.env.emplace_back("SUBSYSTEM", "second");
  const DeviceProperties q(odd);
  EXPECT_EQ(q.devname(), "vdb");
  EXPECT_EQ(q.Get("DEVNAME"), "other");
  EXPECT_EQ(q.Get("SUBSYSTEM"), "block");
}

// Common names are packed as numbers, the rest by name; both are found, and a name is never
// mistaken for another that shares its start.
TEST(DevicePropertiesTest, CommonNamesArePackedAsNumbers) {
  const DeviceProperties p(Device("add", "/d", "s",
                                  {{"SEQNUM", "12"}, {"MAJOR", "8"}, {"MAJORX", "9"},
                                   {"DEVNUM", "3"}, {"MINOR", ""}, {"OWN", "v"}}));
  EXPECT_EQ(p.Get("SEQNUM"), "12");
  EXPECT_EQ(p.Get("MAJOR"), "8");
  EXPECT_EQ(p.Get("MAJORX"), "9");
  EXPECT_EQ(p.Get("DEVNUM"), "3");
  EXPECT_EQ(p.Get("MINOR"), "");
  EXPECT_EQ(p.Get("OWN"), "v");
  EXPECT_EQ(p.Get("MAJ"), std::nullopt);
  // length, flags, pieces "/d" "s" "", then ACTION SEQNUM MAJOR as numbers, MAJORX by name,
  // DEVNUM MINOR as numbers, OWN by name.
  EXPECT_EQ(p.bytes(), 1 + 1 + (2 + 2) + (2 + 1) + 2 + (2 + 2 + 3) + (2 + 2 + 2) +
                           (2 + 2 + 1) + (2 + 6 + 2 + 1) + (2 + 2 + 1) + (2 + 2 + 0) +
                           (2 + 3 + 2 + 1));
}

TEST(HandledDevicesTest, PropertiesMatchExactly) {
  HandledDevice d{
      DeviceProperties(Device("add", "/devices/virtio1/block/vda", "block", {{"DEVNAME", "vda"}}))};
  EXPECT_TRUE(Satisfies(d, Cond("DEVNAME=vda")));
  EXPECT_TRUE(Satisfies(d, Cond("DEVNAME=/dev/vda")));
  EXPECT_FALSE(Satisfies(d, Cond("DEVNAME=vdb")));
  EXPECT_TRUE(Satisfies(d, Cond("SUBSYSTEM=block")));
  EXPECT_FALSE(Satisfies(d, Cond("SUBSYSTEM=net")));
  EXPECT_FALSE(Satisfies(d, Cond("MODALIAS=x")));
}

TEST(HandledDevicesTest, FilesystemFromPropertiesOrProbe) {
  HandledDevice tagged{DeviceProperties(
      Device("add", "/devices/b/vda1", "block", {{"DEVNAME", "vda1"}, {"ID_FS_LABEL", "root"}}))};
  EXPECT_TRUE(Satisfies(tagged, Cond("LABEL=root")));
  EXPECT_FALSE(WantsProbe(tagged, Cond("LABEL=root")));  // the property decides
  EXPECT_TRUE(WantsProbe(tagged, Cond("UUID=x")));       // no ID_FS_UUID: the superblock may

  HandledDevice plain{
      DeviceProperties(Device("add", "/devices/b/vda2", "block", {{"DEVNAME", "vda2"}}))};
  EXPECT_TRUE(WantsProbe(plain, Cond("LABEL=data")));
  EXPECT_FALSE(Satisfies(plain, Cond("LABEL=data")));
  plain.probe = std::make_unique<ProbeResult>();
  plain.probe->fs = probe::FsIdentity{"vfat", "data", "ABCD-1234"};
  EXPECT_FALSE(WantsProbe(plain, Cond("LABEL=data")));
  EXPECT_TRUE(Satisfies(plain, Cond("LABEL=data")));
  EXPECT_TRUE(Satisfies(plain, Cond("UUID=abcd-1234")));  // case-insensitive UUIDs
  EXPECT_FALSE(Satisfies(plain, Cond("LABEL=DATA")));     // labels are exact
  EXPECT_FALSE(Satisfies(plain, Cond("LABEL=")));         // an empty label matches nothing

  HandledDevice nic{
      DeviceProperties(Device("add", "/devices/net/eth0", "net", {{"INTERFACE", "eth0"}}))};
  EXPECT_FALSE(WantsProbe(nic, Cond("LABEL=data")));
}

TEST(HandledDevicesTest, RemoveForgetsAndTheRecordIsBounded) {
  HandledDevices devices(3);
  ASSERT_NE(devices.Record(Device("add", "/devices/a", "x")), nullptr);
  ASSERT_NE(devices.Record(Device("add", "/devices/b", "x")), nullptr);
  EXPECT_EQ(devices.Record(Device("remove", "/devices/a", "x")), nullptr);
  EXPECT_EQ(devices.size(), 1u);
  for (int i = 0; i < 100; ++i) {
    HandledDevice* d = devices.Record(Device("change", "/devices/b", "x"));
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->properties.Get("ACTION"), "change");
  }
  ASSERT_NE(devices.Record(Device("add", "/devices/c", "x")), nullptr);
  ASSERT_NE(devices.Record(Device("add", "/devices/d", "x")), nullptr);
  ASSERT_NE(devices.Record(Device("add", "/devices/e", "x")), nullptr);
  EXPECT_EQ(devices.size(), 3u);
  std::vector<std::string> kept;
  devices.ForEach([&](HandledDevice& d) {
    kept.push_back(std::string(d.properties.devpath()));
    return false;
  });
  std::sort(kept.begin(), kept.end());
  // The ring holds the last 3 events: b (recorded again and again, but before c, d and e)
  // fell out.
  EXPECT_EQ(kept, (std::vector<std::string>{"/devices/c", "/devices/d", "/devices/e"}));
}

// Slots are made as events arrive; while the record grows, the slots made before stay where
// they are (the index views their short, in-place DEVPATHs): every device is still found and
// forgotten by its DEVPATH, and once full the oldest falls out first.
TEST(HandledDevicesTest, GrowsOnDemandAndKeepsEveryEntryFindable) {
  HandledDevices devices(1000);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_NE(devices.Record(Device("add", "/d" + std::to_string(i), "x")), nullptr);
  }
  EXPECT_EQ(devices.size(), 1000u);
  // Recording a device again finds its old slot through the index and frees it.
  for (int i = 0; i < 1000; i += 2) {
    ASSERT_EQ(devices.Record(Device("remove", "/d" + std::to_string(i), "x")), nullptr);
  }
  EXPECT_EQ(devices.size(), 500u);
  ASSERT_NE(devices.Record(Device("add", "/new", "x")), nullptr);  // takes the oldest slot
  size_t seen = 0;
  bool has_d1 = false;
  bool has_new = false;
  devices.ForEach([&](HandledDevice& d) {
    ++seen;
    has_d1 = has_d1 || d.properties.devpath() == "/d1";
    has_new = has_new || d.properties.devpath() == "/new";
    return false;
  });
  EXPECT_EQ(seen, 501u);
  EXPECT_TRUE(has_d1);
  EXPECT_TRUE(has_new);
  ASSERT_NE(devices.Record(Device("add", "/more", "x")), nullptr);  // evicts /d1, the oldest live
  has_d1 = false;
  devices.ForEach([&](HandledDevice& d) {
    has_d1 = has_d1 || d.properties.devpath() == "/d1";
    return false;
  });
  EXPECT_FALSE(has_d1);
  EXPECT_EQ(devices.size(), 501u);
}

TEST(SettleWaiterTest, EveryConditionMustBeMetByAnyDevice) {
  SettleWaiter waiter({Cond("DEVNAME=vda"), Cond("SUBSYSTEM=net")});
  EXPECT_FALSE(
      waiter.Offer(HandledDevice{DeviceProperties(Device("add", "/devices/other", "usb"))}));
  EXPECT_FALSE(waiter.Offer(HandledDevice{
      DeviceProperties(Device("add", "/devices/vda", "block", {{"DEVNAME", "vda"}}))}));
  EXPECT_EQ(waiter.Unmet(), "SUBSYSTEM=net");
  EXPECT_TRUE(
      waiter.Offer(HandledDevice{DeviceProperties(Device("add", "/devices/eth0", "net"))}));
  EXPECT_TRUE(waiter.done());
  EXPECT_EQ(waiter.Unmet(), "");
  EXPECT_EQ(waiter.met_by(0), "vda");
  EXPECT_EQ(waiter.met_by(1), "");  // a net device has no node
}

// root=LABEL=...: the first device that met a condition is the one to mount; a later device
// with the same label does not replace it.
TEST(SettleWaiterTest, RemembersTheDeviceThatMetEachCondition) {
  SettleWaiter waiter({Cond("LABEL=root")});
  HandledDevice first{DeviceProperties(Device("add", "/devices/vdb", "block", {{"DEVNAME", "vdb"}}))};
  first.probe = std::make_unique<ProbeResult>();
  first.probe->fs = probe::FsIdentity{"ext4", "root", "u1"};
  HandledDevice second{DeviceProperties(Device("add", "/devices/vdc", "block", {{"DEVNAME", "vdc"}}))};
  second.probe = std::make_unique<ProbeResult>();
  second.probe->fs = probe::FsIdentity{"ext4", "root", "u2"};
  EXPECT_EQ(waiter.met_by(0), "");
  EXPECT_TRUE(waiter.Offer(first));
  EXPECT_TRUE(waiter.Offer(second));
  EXPECT_EQ(waiter.met_by(0), "vdb");
}

}  // namespace
}  // namespace hotring::hotplug

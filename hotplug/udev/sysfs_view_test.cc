// DirSysfsView's reads of a tree's files, and CachingSysfsView: each question asked of the view
// beneath once until Clear().
#include "hotplug/udev/sysfs_view.h"

#include <sys/stat.h>

#include <map>
#include <thread>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::udev {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;
using testing::FakeSysfs;

TEST(DirSysfsViewTest, ReadsAttributesOfEverySizeWhole) {
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok()) << sys.status();
  const std::string dev = "/devices/platform/thing";
  // A read that fills its buffer is followed by another, at the page boundary and beyond it.
  const std::string page(4096, 'a');
  const std::string large = std::string(10000, 'b') + "\n";
  ASSERT_TRUE(sys->AddDevice({.devpath = dev,
                              .subsystem = "platform",
                              .kind = FakeSysfs::Kind::kBus,
                              .attributes = {{"short", "1\n"}, {"page", page}, {"large", large}, {"empty", ""}}})
                  .ok());
  const DirSysfsView view(sys->root());
  EXPECT_THAT(view.Attribute(dev, "short"), Optional(std::string("1")));
  EXPECT_THAT(view.Attribute(dev, "page"), Optional(page));
  EXPECT_THAT(view.Attribute(dev, "large"), Optional(std::string(10000, 'b')));
  EXPECT_THAT(view.Attribute(dev, "empty"), Optional(std::string()));
  EXPECT_EQ(view.Attribute(dev, "missing"), std::nullopt);
  // A directory is no attribute.
  ASSERT_TRUE(sys->WriteFile(dev + "/power/control", "auto\n").ok());
  EXPECT_EQ(view.Attribute(dev, "power"), std::nullopt);
  EXPECT_THAT(view.Attribute(dev, "power/control"), Optional(std::string("auto")));
  // Nor is a FIFO (which reads as empty, like an empty attribute).
  ASSERT_EQ(mkfifo((sys->root() + dev + "/pipe").c_str(), 0644), 0);
  EXPECT_EQ(view.Attribute(dev, "pipe"), std::nullopt);
}

TEST(DirSysfsViewTest, OnSysfsAnEmptyAttributeIsEmptyAndADirectoryNone) {
  // Read without asking the file's type: sysfs holds no FIFO. The cpu bus's root device has an
  // empty uevent file on every kernel with CPU devices.
  const DirSysfsView view("/sys");
  if (!view.IsDevice("/devices/system/cpu")) GTEST_SKIP() << "no /sys/devices/system/cpu here";
  EXPECT_THAT(view.Attribute("/devices/system/cpu", "uevent"), Optional(std::string()));
  EXPECT_EQ(view.Attribute("/devices/system", "cpu"), std::nullopt);
  EXPECT_EQ(view.Attribute("/devices/system/cpu", "missing"), std::nullopt);
}

// Answers from a map and counts what it was asked.
class CountingView final : public SysfsView {
 public:
  std::optional<std::string> Attribute(absl::string_view devpath, absl::string_view name) const override {
    ++asked[std::string("a ") + std::string(devpath) + " " + std::string(name)];
    const auto it = files.find(std::string(devpath) + "/" + std::string(name));
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> LinkName(absl::string_view devpath, absl::string_view name) const override {
    ++asked[std::string("l ") + std::string(devpath) + " " + std::string(name)];
    if (name == "subsystem" && devices.count(std::string(devpath)) > 0) return "net";
    return std::nullopt;
  }
  bool IsDevice(absl::string_view devpath) const override {
    ++asked[std::string("d ") + std::string(devpath)];
    return devices.count(std::string(devpath)) > 0;
  }
  std::vector<std::string> List(absl::string_view path) const override {
    ++asked[std::string("ls ") + std::string(path)];
    return {"x"};
  }

  std::map<std::string, std::string> files;
  std::map<std::string, bool> devices;
  mutable std::map<std::string, int> asked;
};

TEST(CachingSysfsViewTest, AsksTheViewBeneathOnceUntilCleared) {
  CountingView base;
  base.files["/devices/virtual/net/dummy0/type"] = "1";
  base.devices["/devices/virtual/net/dummy0"] = true;
  CachingSysfsView view(base);
  const std::string dev = "/devices/virtual/net/dummy0";
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(view.Attribute(dev, "type"), Optional(std::string("1")));
    EXPECT_EQ(view.Attribute(dev, "missing"), std::nullopt);
    EXPECT_THAT(view.LinkName(dev, "subsystem"), Optional(std::string("net")));
    // The walk up from a device with no parent device: every builtin that asks for a parent
    // asks the same directories.
    EXPECT_EQ(ParentOf(view, dev), std::nullopt);
    EXPECT_THAT(view.List(dev), ElementsAre("x"));
  }
  EXPECT_EQ(base.asked["a " + dev + " type"], 1);
  EXPECT_EQ(base.asked["a " + dev + " missing"], 1);  // a missing file is kept as missing
  EXPECT_EQ(base.asked["l " + dev + " subsystem"], 1);
  EXPECT_EQ(base.asked["d /devices/virtual/net"], 1);
  EXPECT_EQ(base.asked["d /devices/virtual"], 1);
  EXPECT_EQ(base.asked["ls " + dev], 3);  // listings are not kept

  base.files[dev + "/type"] = "772";
  EXPECT_THAT(view.Attribute(dev, "type"), Optional(std::string("1")));
  view.Clear();
  EXPECT_THAT(view.Attribute(dev, "type"), Optional(std::string("772")));
  EXPECT_EQ(base.asked["a " + dev + " type"], 2);
}

TEST(DeviceShapesTest, EventsShareWhatStaysWhileADeviceIsThere) {
  CountingView base;
  const std::string dev = "/devices/virtual/net/dummy0";
  base.devices[dev] = true;
  DeviceShapes shapes;
  for (int event = 0; event < 3; ++event) {
    CachingSysfsView view(base, &shapes);  // one per event
    EXPECT_TRUE(view.IsDevice(dev));
    EXPECT_FALSE(view.IsDevice("/devices/virtual/net"));
    EXPECT_THAT(view.LinkName(dev, "subsystem"), Optional(std::string("net")));
    EXPECT_EQ(view.LinkName(dev, "driver"), std::nullopt);
  }
  EXPECT_EQ(base.asked["d " + dev], 1);
  EXPECT_EQ(base.asked["d /devices/virtual/net"], 1);
  EXPECT_EQ(base.asked["l " + dev + " subsystem"], 1);
  EXPECT_EQ(base.asked["l " + dev + " driver"], 3);  // binding changes it without an event here
  shapes.Forget(dev);
  CachingSysfsView view(base, &shapes);
  EXPECT_TRUE(view.IsDevice(dev));
  EXPECT_EQ(base.asked["d " + dev], 2);
  EXPECT_FALSE(view.IsDevice("/devices/virtual/net"));
  EXPECT_EQ(base.asked["d /devices/virtual/net"], 1);  // the parent stays
}

TEST(DeviceShapesTest, EventsShareAParentsUeventFileUntilAnEventOfItStarts) {
  CountingView base;
  const std::string parent = "/devices/system/memory";
  const std::string pci = "/devices/pci0000:00/0000:00:02.0";
  base.files[parent + "/uevent"] = "";
  base.files[pci + "/uevent"] = "DRIVER=virtio-pci\nPCI_CLASS=20000";
  base.files[pci + "/vendor"] = "0x1af4";
  base.files["/devices/big/uevent"] = std::string(DeviceShapes::kMaxUevent + 1, 'x');
  DeviceShapes shapes;
  for (int event = 0; event < 3; ++event) {
    CachingSysfsView view(base, &shapes);  // one per event
    EXPECT_THAT(view.Attribute(parent, "uevent"), Optional(std::string()));
    EXPECT_THAT(UeventValue(view, pci, "DRIVER"), Optional(std::string("virtio-pci")));
    EXPECT_EQ(view.Attribute("/devices/none", "uevent"), std::nullopt);
    EXPECT_THAT(view.Attribute(pci, "vendor"), Optional(std::string("0x1af4")));
    EXPECT_TRUE(view.Attribute("/devices/big", "uevent").has_value());
  }
  EXPECT_EQ(base.asked["a " + parent + " uevent"], 1);
  EXPECT_EQ(base.asked["a " + pci + " uevent"], 1);
  EXPECT_EQ(base.asked["a /devices/none uevent"], 1);  // no device there: kept as missing
  EXPECT_EQ(base.asked["a " + pci + " vendor"], 3);    // other attributes are the event's own
  EXPECT_EQ(base.asked["a /devices/big uevent"], 3);   // past the bound: read each time
  // The driver goes (an unbind event of the device starts): read again, once.
  base.files[pci + "/uevent"] = "PCI_CLASS=20000";
  shapes.ForgetUevent(pci);
  for (int event = 0; event < 2; ++event) {
    CachingSysfsView view(base, &shapes);
    EXPECT_EQ(UeventValue(view, pci, "DRIVER"), std::nullopt);
    EXPECT_THAT(view.Attribute(parent, "uevent"), Optional(std::string()));
  }
  EXPECT_EQ(base.asked["a " + pci + " uevent"], 2);
  EXPECT_EQ(base.asked["a " + parent + " uevent"], 1);  // another device's stays
  // A read that raced with the forgetting is not kept.
  const uint64_t before = shapes.generation();
  shapes.ForgetUevent(pci);
  shapes.KeepUevent(pci, std::string("DRIVER=stale"), before);
  EXPECT_EQ(shapes.Uevent(pci), std::nullopt);
}

TEST(DeviceShapesTest, ForgetTakesADeviceAndWhatIsBeneathItOnly) {
  DeviceShapes shapes;
  for (const char* p : {"/devices/a", "/devices/a/b", "/devices/a/b/c", "/devices/a/b/c/d", "/devices/a/bc",
                        "/devices/a/b-1", "/devices/a/b.0", "/devices/a/b0"}) {
    shapes.KeepIsDevice(p, true, shapes.generation());
  }
  shapes.Forget("/devices/a/b");
  EXPECT_EQ(shapes.IsDevice("/devices/a/b"), std::nullopt);
  EXPECT_EQ(shapes.IsDevice("/devices/a/b/c"), std::nullopt);
  EXPECT_EQ(shapes.IsDevice("/devices/a/b/c/d"), std::nullopt);
  for (const char* p : {"/devices/a", "/devices/a/bc", "/devices/a/b-1", "/devices/a/b.0", "/devices/a/b0"}) {
    EXPECT_THAT(shapes.IsDevice(p), Optional(true)) << p;
  }
  EXPECT_EQ(shapes.size(), 5u);
}

TEST(DeviceShapesTest, AnAnswerReadWhileSomethingWasForgottenIsNotKept) {
  // A thread reads sysfs, another's event forgets the device meanwhile: the answer read before
  // the forgetting may be the forgotten one.
  DeviceShapes shapes;
  const uint64_t before = shapes.generation();
  shapes.Forget("/devices/a");
  shapes.KeepIsDevice("/devices/a", true, before);
  shapes.KeepSubsystem("/devices/a", "usb", before);
  EXPECT_EQ(shapes.IsDevice("/devices/a"), std::nullopt);
  EXPECT_EQ(shapes.Subsystem("/devices/a"), std::nullopt);
  const uint64_t after = shapes.generation();
  shapes.KeepIsDevice("/devices/a", true, after);
  EXPECT_THAT(shapes.IsDevice("/devices/a"), Optional(true));
  shapes.Clear();
  shapes.KeepIsDevice("/devices/b", true, after);
  EXPECT_EQ(shapes.size(), 0u);
}

TEST(DeviceShapesTest, StartsOverPastItsBound) {
  DeviceShapes shapes(/*max_entries=*/4);
  for (int i = 0; i < 4; ++i) shapes.KeepIsDevice(absl::StrCat("/devices/d", i), true, shapes.generation());
  EXPECT_EQ(shapes.size(), 4u);
  shapes.KeepSubsystem("/devices/d0", "pci", shapes.generation());  // known: no new entry
  EXPECT_EQ(shapes.size(), 4u);
  shapes.KeepIsDevice("/devices/d4", false, shapes.generation());
  EXPECT_EQ(shapes.size(), 1u);
  EXPECT_THAT(shapes.IsDevice("/devices/d4"), Optional(false));
  EXPECT_EQ(shapes.IsDevice("/devices/d0"), std::nullopt);
}

TEST(DeviceShapesTest, ThreadsKeepAskAndForgetAtOnce) {
  DeviceShapes shapes(/*max_entries=*/64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shapes, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string dev = absl::StrCat("/devices/t", t, "/d", i % 50);
        const uint64_t generation = shapes.generation();
        shapes.KeepIsDevice(dev, true, generation);
        shapes.KeepSubsystem(dev, "pci", generation);
        const std::optional<bool> device = shapes.IsDevice(dev);
        EXPECT_TRUE(!device.has_value() || *device);  // forgotten meanwhile, or kept
        if (i % 10 == 0) shapes.Forget(absl::StrCat("/devices/t", (t + 1) % 4));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(shapes.size(), 64u);
}

}  // namespace
}  // namespace hotring::hotplug::udev

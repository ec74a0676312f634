// DirSysfsView's reads of a tree's files, and CachingSysfsView: each question asked of the view
// beneath once until Clear().
#include "hotplug/udev/sysfs_view.h"

#include <sys/stat.h>

#include <map>
#include <string>
#include <utility>

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

}  // namespace
}  // namespace hotring::hotplug::udev

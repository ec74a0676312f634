// What the stage does around udev's builtins: the node paths builtins see, keyboard's actions,
// and the resources loaded at start.
#include "hotplug/udevrules/builtin_calls.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udevrules/compiled_rules.h"

namespace hotring::hotplug::udevrules {
namespace {

// The compiler checks IMPORT{builtin}/RUN{builtin} names against its own list (it does not link
// the builtins); that list must be the registry's, name for name, in udevd's order.
TEST(BuiltinNamesTest, CompilerKnowsExactlyTheRegistrysBuiltins) {
  std::vector<std::string> registry;
  for (const udev::BuiltinInfo& b : udev::Builtins()) {
    registry.push_back(absl::StrCat(b.name, b.run_once ? " once" : ""));
  }
  std::vector<std::string> compiler;
  for (const BuiltinInfo& b : DefaultBuiltins()) compiler.push_back(absl::StrCat(b.name, b.run_once ? " once" : ""));
  EXPECT_EQ(compiler, registry);
}

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string TempDir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(t != nullptr ? t : "/tmp", "/builtin_calls_", name);
  EXPECT_EQ(std::system(absl::StrCat("rm -rf ", dir, " && mkdir -p ", dir).c_str()), 0);
  return dir;
}

TEST(PropertiesBeneathTest, MovesOnlyDevnameBeneathTheDevRoot) {
  const std::vector<PropertyView> props = {{"DEVNAME", "/dev/input/event3"}, {"SUBSYSTEM", "input"}};
  std::string storage;
  EXPECT_THAT(PropertiesBeneath(props, "/tmp/d", &storage),
              ElementsAre(Pair("DEVNAME", "/tmp/d/input/event3"), Pair("SUBSYSTEM", "input")));
  EXPECT_THAT(PropertiesBeneath(props, "/dev", &storage),
              ElementsAre(Pair("DEVNAME", "/dev/input/event3"), Pair("SUBSYSTEM", "input")));
  const std::vector<PropertyView> relative = {{"DEVNAME", "sda"}};
  EXPECT_THAT(PropertiesBeneath(relative, "/tmp/d", &storage), ElementsAre(Pair("DEVNAME", "/tmp/d/sda")));
}

TEST(ApplyKeyboardTest, WritesAttributesInOrderAndLogsWarnings) {
  udev::KeyboardSetup setup;
  setup.writes = {{"/devices/platform/i8042/serio0", "force_release", "130,131"},
                  {"/devices/platform/i8042/serio1", "sensitivity", "200"}};
  setup.warnings = {"unknown key 'frob'"};
  std::vector<std::string> written, log;
  auto write = [&](absl::string_view dev, absl::string_view name, absl::string_view value) {
    written.push_back(absl::StrCat(dev, "/", name, "=", value));
    return name == "sensitivity" ? absl::PermissionDeniedError("read-only") : absl::OkStatus();
  };
  EXPECT_TRUE(ApplyKeyboard(setup, write, &log).ok());
  EXPECT_THAT(written, ElementsAre("/devices/platform/i8042/serio0/force_release=130,131",
                                   "/devices/platform/i8042/serio1/sensitivity=200"));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0], HasSubstr("unknown key 'frob'"));
  EXPECT_THAT(log[1], HasSubstr("sensitivity: read-only"));
}

TEST(ApplyKeyboardTest, AMissingNodeFailsTheBuiltinAndANodeThatIsNoInputDeviceIsLogged) {
  const std::string dir = TempDir("keyboard");
  udev::KeyboardSetup setup;
  setup.devnode = dir + "/event9";
  setup.keycodes = {{0x1e, 30}};
  setup.needs_node = true;
  std::vector<std::string> log;
  auto write = [](absl::string_view, absl::string_view, absl::string_view) { return absl::OkStatus(); };
  absl::Status missing = ApplyKeyboard(setup, write, &log);
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.message()), HasSubstr("event9"));
  std::ofstream(setup.devnode) << "";
  EXPECT_TRUE(ApplyKeyboard(setup, write, &log).ok()) << "udevd logs a failed EVIOCSKEYCODE and goes on";
  EXPECT_EQ(log.size(), 1u);
}

TEST(LoadBuiltinWorldTest, ReadsTheLinkFilesAndGoesOnWithoutHwdb) {
  const std::string dir = TempDir("world");
  ASSERT_EQ(::mkdir((dir + "/network").c_str(), 0755), 0);
  std::ofstream(dir + "/network/10-lan.link") << "[Match]\nOriginalName=eth*\n[Link]\nName=lan0\n";
  std::vector<std::string> warnings;
  std::unique_ptr<BuiltinWorld> world = LoadBuiltinWorld(
      BuiltinSources{.sysfs_root = dir, .hwdb_paths = {dir + "/hwdb.bin"}, .network_dirs = {dir + "/network"}},
      &warnings);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->resources.hwdb, nullptr);
  ASSERT_NE(world->resources.link_configs, nullptr);
  ASSERT_EQ(world->resources.link_configs->configs().size(), 1u);
  EXPECT_EQ(world->resources.link_configs->configs()[0].name, "lan0");
  EXPECT_THAT(warnings, ::testing::IsEmpty());
}

TEST(LoadBuiltinWorldTest, ABrokenHwdbIsAWarningNotAFailure) {
  const std::string dir = TempDir("badhwdb");
  std::ofstream(dir + "/hwdb.bin") << "not a hwdb";
  std::vector<std::string> warnings;
  std::unique_ptr<BuiltinWorld> world = LoadBuiltinWorld(
      BuiltinSources{.sysfs_root = dir, .hwdb_paths = {dir + "/hwdb.bin"}, .network_dirs = {dir + "/none"}},
      &warnings);
  EXPECT_EQ(world->resources.hwdb, nullptr);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("hwdb"));
}

}  // namespace
}  // namespace hotring::hotplug::udevrules

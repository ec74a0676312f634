// DaemonHost keeps an event's sysfs reads, for the rules and the builtins they call alike, as
// udevd's sd_device keeps a device's attributes and parent for its event; a write drops them.
#include "hotplug/udevrules/daemon_host.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hotplug/udev/builtin_registry.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::udevrules {
namespace {

using testing::FakeSysfs;

constexpr char kPci[] = "/devices/pci0000:00/0000:00:1f.6";
constexpr char kNet[] = "/devices/pci0000:00/0000:00:1f.6/net/eth0";

class DaemonHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
    ASSERT_TRUE(sys.ok()) << sys.status();
    sys_.emplace(std::move(*sys));
    ASSERT_TRUE(sys_->AddDevice({.devpath = kPci, .subsystem = "pci", .kind = FakeSysfs::Kind::kBus}).ok());
    ASSERT_TRUE(sys_->AddDevice({.devpath = kNet,
                                 .subsystem = "net",
                                 .uevent = {{"INTERFACE", "eth0"}, {"IFINDEX", "2"}},
                                 .attributes = {{"type", "1\n"}}})
                    .ok());
    context_.roots.sysfs = sys_->root();
    context_.builtins = &resources_;
  }

  // ID_PATH as path_id sets it ("" when it finds no path).
  std::string PathId(DaemonHost& host) {
    OwnedProperties out;
    const std::vector<std::string> argv = {"path_id"};
    const absl::Status ran = host.RunBuiltin("path_id", "path_id", argv, kNet, {}, &out);
    EXPECT_TRUE(ran.ok() || absl::IsNotFound(ran)) << ran;
    for (const auto& [key, value] : out) {
      if (key == "ID_PATH") return value;
    }
    return "";
  }

  std::optional<FakeSysfs> sys_;
  udev::BuiltinResources resources_;
  HostContext context_;
};

TEST_F(DaemonHostTest, AnEventReadsAnAttributeOnceUntilItWrites) {
  DaemonHost host(context_);
  std::string value;
  ASSERT_TRUE(host.ReadAttribute(kNet, "type", &value));
  EXPECT_EQ(value, "1");
  ASSERT_TRUE(sys_->WriteFile(std::string(kNet) + "/type", "772\n").ok());
  ASSERT_TRUE(host.ReadAttribute(kNet, "type", &value));
  EXPECT_EQ(value, "1");
  // The next event reads the file again.
  DaemonHost next(context_);
  ASSERT_TRUE(next.ReadAttribute(kNet, "type", &value));
  EXPECT_EQ(value, "772");
  // ATTR{...}= of this event: what it read before may be stale.
  ASSERT_TRUE(sys_->WriteFile(std::string(kNet) + "/ifalias", "").ok());
  ASSERT_TRUE(host.WriteAttribute(absl::StrCat("/sys", kNet, "/ifalias"), "x").ok());
  ASSERT_TRUE(host.ReadAttribute(kNet, "type", &value));
  EXPECT_EQ(value, "772");
}

TEST_F(DaemonHostTest, TheBuiltinsOfAnEventShareItsReads) {
  DaemonHost host(context_);
  std::string parent;
  ASSERT_TRUE(host.Parent(kNet, &parent));
  EXPECT_EQ(parent, kPci);
  EXPECT_EQ(PathId(host), "pci-0000:00:1f.6");
  // The PCI device stops being one (its uevent file goes) while the event runs: the event's
  // rules and builtins go on with the parent they found, as udevd's device object does.
  ASSERT_EQ(::unlink(sys_->UeventPath(kPci).c_str()), 0);
  EXPECT_EQ(PathId(host), "pci-0000:00:1f.6");
  ASSERT_TRUE(host.Parent(kNet, &parent));
  EXPECT_EQ(parent, kPci);
  // A new event, or this one after a write, looks again.
  DaemonHost next(context_);
  EXPECT_FALSE(next.Parent(kNet, &parent));
  EXPECT_EQ(PathId(next), "");
  ASSERT_TRUE(sys_->WriteFile(std::string(kNet) + "/ifalias", "").ok());
  ASSERT_TRUE(host.WriteAttribute(absl::StrCat("/sys", kNet, "/ifalias"), "x").ok());
  EXPECT_FALSE(host.Parent(kNet, &parent));
}

}  // namespace
}  // namespace hotring::hotplug::udevrules

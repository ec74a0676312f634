// SysfsFixture: the tests of udev's builtins and seat rules over a fake sysfs tree. Owns the
// FakeSysfs, made in SetUp; Add puts a device in it, and a device it cannot add fails the test.
#ifndef HOTRING_HOTPLUG_UDEV_SYSFS_FIXTURE_H_
#define HOTRING_HOTPLUG_UDEV_SYSFS_FIXTURE_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "testing/fake_sysfs.h"

namespace hotring::hotplug::udev {

// A device's uevent variables or sysfs attributes, in order: what Add takes and what the tests
// write their devices with.
using Attrs = std::vector<std::pair<std::string, std::string>>;

class SysfsFixture : public ::testing::Test {
 protected:
  // `kind`: what Add makes when it is not told (a bus device, or a class device).
  explicit SysfsFixture(testing::FakeSysfs::Kind kind = testing::FakeSysfs::Kind::kBus)
      : default_kind_(kind) {}

  void SetUp() override {
    absl::StatusOr<testing::FakeSysfs> sys = testing::FakeSysfs::Create();
    ASSERT_TRUE(sys.ok()) << sys.status();
    sys_.emplace(std::move(*sys));
  }

  void Add(const std::string& devpath, const std::string& subsystem, Attrs uevent = {},
           Attrs attributes = {}, std::optional<testing::FakeSysfs::Kind> kind = std::nullopt) {
    ASSERT_TRUE(sys_->AddDevice({.devpath = devpath,
                                 .subsystem = subsystem,
                                 .kind = kind.value_or(default_kind_),
                                 .uevent = std::move(uevent),
                                 .attributes = std::move(attributes)})
                    .ok())
        << devpath;
  }

  std::optional<testing::FakeSysfs> sys_;

 private:
  const testing::FakeSysfs::Kind default_kind_;
};

}  // namespace hotring::hotplug::udev

#endif  // HOTRING_HOTPLUG_UDEV_SYSFS_FIXTURE_H_

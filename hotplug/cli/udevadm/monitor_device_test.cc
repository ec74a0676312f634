// The rules of monitor_device.h and monitor_format.h on hand-made datagrams. What 252 itself
// prints for the same kinds of datagrams is compared by //testing/udevadm:monitor_compare_test.
#include "hotplug/cli/udevadm/monitor_device.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/cli/udevadm/monitor_format.h"
#include "hotplug/udev/monitor.h"

namespace hotring::hotplug::udevadm {
namespace {

using Properties = std::vector<std::pair<std::string, std::string>>;
using ::testing::ElementsAre;
using ::testing::Pair;

constexpr char kDevpath[] = "/devices/virtual/test/dev";

// A kernel-format datagram of `strings` (each "KEY=VALUE" or anything else, verbatim).
std::string Kernel(const std::vector<std::string>& strings, const std::string& header = "add@/devices/x") {
  std::string out = header;
  out.push_back('\0');
  for (const std::string& s : strings) {
    out += s;
    out.push_back('\0');
  }
  return out;
}

// ACTION, DEVPATH, SUBSYSTEM and SEQNUM, then `more`.
std::vector<std::string> Base(std::vector<std::string> more) {
  std::vector<std::string> out = {"ACTION=add", absl::StrCat("DEVPATH=", kDevpath), "SUBSYSTEM=test",
                                  "SEQNUM=7"};
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

std::string Libudev(const udev::MonitorMessage& message) {
  absl::StatusOr<std::string> d = udev::EncodeMonitorMessage(message);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : "";
}

TEST(MonitorDeviceTest, PropertiesComeInSdDevicesOrder) {
  absl::StatusOr<MonitorDevice> d = ParseMonitorDatagram(Kernel(Base(
      {"MINOR=3", "MAJOR=8", "DEVNAME=sda", "DEVLINKS=/dev/b\t/dev/a /dev/b", "TAGS=:seat:", "X=1",
       "CURRENT_TAGS=:uaccess:", "X=2", "USEC_INITIALIZED=0x10", "UDEV_DATABASE_VERSION=1",
       "V=cut here\nand here", "=empty key", ".HIDDEN=", "DEVTYPE=disk"})));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(d->properties,
              ElementsAre(Pair("ACTION", "add"), Pair("DEVPATH", kDevpath), Pair("SUBSYSTEM", "test"),
                          Pair("SEQNUM", "7"), Pair("DEVNAME", "/dev/sda"), Pair("X", "2"),
                          Pair("USEC_INITIALIZED", "16"), Pair("V", "cut here"), Pair("", "empty key"),
                          Pair(".HIDDEN", ""), Pair("DEVTYPE", "disk"), Pair("MAJOR", "8"), Pair("MINOR", "3"),
                          Pair("DEVLINKS", "/dev/b /dev/a"), Pair("TAGS", ":seat:uaccess:"),
                          Pair("CURRENT_TAGS", ":uaccess:")));
  EXPECT_EQ(d->devtype, "disk");
}

TEST(MonitorDeviceTest, LibudevMessagesAreReadToTheirEndWhateverTheLengthFieldSays) {
  udev::MonitorMessage m;
  m.subsystem = "test";
  for (const std::string& s : Base({"EXTRA=1"})) {
    const size_t eq = s.find('=');
    m.properties.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  std::string d = Libudev(m);
  const uint32_t short_length = 10;
  std::memcpy(d.data() + 20, &short_length, 4);
  absl::StatusOr<MonitorDevice> device = ParseMonitorDatagram(d);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_THAT(device->properties.back(), Pair("EXTRA", "1"));
  d[9] ^= 1;  // the magic
  EXPECT_FALSE(ParseMonitorDatagram(d).ok());
}

TEST(MonitorDeviceTest, DevpathIsSimplifiedAndMustLieBeneathSys) {
  absl::StatusOr<MonitorDevice> d =
      ParseMonitorDatagram(Kernel({"ACTION=add", "DEVPATH=/devices//a/./b/", "SUBSYSTEM=s", "SEQNUM=1"}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->devpath, "/devices/a/b");
  for (const char* bad : {"DEVPATH=", "DEVPATH=/", "DEVPATH=devices/a"}) {
    EXPECT_FALSE(ParseMonitorDatagram(Kernel({"ACTION=add", bad, "SUBSYSTEM=s", "SEQNUM=1"})).ok()) << bad;
  }
  EXPECT_TRUE(ParseMonitorDatagram(Kernel({"ACTION=add", "DEVPATH=/bus/usb/drivers/hub", "SUBSYSTEM=drivers",
                                           "SEQNUM=1"}))
                  .ok());
  EXPECT_FALSE(ParseMonitorDatagram(Kernel({"ACTION=add", "DEVPATH=/drivers/hub", "SUBSYSTEM=drivers",
                                            "SEQNUM=1"}))
                   .ok());
}

TEST(MonitorDeviceTest, NumbersAreReadAsSystemdReadsThem) {
  for (const char* good : {"SEQNUM= 12", "SEQNUM=0x10", "SEQNUM=010", "SEQNUM=+5", "SEQNUM=0b11", "MAJOR=0x8",
                           "MAJOR=4095", "DEVMODE=07777", "DEVUID=0", "DEVUID=4294967294", "IFINDEX=0x10",
                           "DISKSEQ=9", "USEC_INITIALIZED= 7"}) {
    EXPECT_TRUE(ParseMonitorDatagram(Kernel(Base({good}))).ok()) << good;
  }
  for (const char* bad : {"SEQNUM=0", "SEQNUM=-5", "SEQNUM=09", "SEQNUM=5 ", "SEQNUM=18446744073709551616",
                          "MAJOR=4096", "MAJOR=abc", "DEVMODE=9999", "DEVUID=65535", "DEVUID=0x10", "DEVUID=05",
                          "DEVGID=+5", "IFINDEX=0", "IFINDEX=2147483648", "DISKSEQ=0", "USEC_INITIALIZED=x"}) {
    EXPECT_FALSE(ParseMonitorDatagram(Kernel(Base({bad}))).ok()) << bad;
  }
  // MAJOR 0: no device number, and MINOR is not looked at.
  absl::StatusOr<MonitorDevice> d = ParseMonitorDatagram(Kernel(Base({"MAJOR=0", "MINOR=abc"})));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->properties.size(), 4u);
  EXPECT_FALSE(ParseMonitorDatagram(Kernel(Base({"MAJOR=8", "MINOR=1048576"}))).ok());
}

TEST(MonitorDeviceTest, MalformedMessagesAreDropped) {
  EXPECT_FALSE(ParseMonitorDatagram(Kernel(Base({"NOEQUALS"}))).ok());
  EXPECT_FALSE(ParseMonitorDatagram(Kernel(Base({}), "add/devices/x")).ok());
  EXPECT_FALSE(ParseMonitorDatagram(Kernel(Base({""}))).ok());  // an empty string
  std::string unterminated = Kernel(Base({}));
  unterminated.pop_back();
  EXPECT_FALSE(ParseMonitorDatagram(unterminated).ok());
  EXPECT_FALSE(ParseMonitorDatagram(Kernel({"ACTION=ADD", "DEVPATH=/a", "SUBSYSTEM=s", "SEQNUM=1"})).ok());
  EXPECT_FALSE(ParseMonitorDatagram(Kernel({"ACTION=add", "DEVPATH=/a", "SUBSYSTEM=s"})).ok());
  EXPECT_FALSE(ParseMonitorDatagram(std::string("add@/a\0A=1\0", 11)).ok());  // under 32 bytes
  EXPECT_TRUE(ParseMonitorDatagram(Kernel(Base({}), "@/")).ok());
}

TEST(MonitorDeviceTest, TagsKeepTheEmptyOneForMatchingOnly) {
  absl::StatusOr<MonitorDevice> d = ParseMonitorDatagram(Kernel(Base({"TAGS=:a\\b:", "CURRENT_TAGS=c"})));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(d->tags, ElementsAre("", "ab", "c"));
  EXPECT_THAT(d->properties.back(), Pair("CURRENT_TAGS", ":c:"));
  for (const char* bad : {"TAGS=:a b:", "TAGS=:a\\:b:", "TAGS=:a\\"}) {
    EXPECT_FALSE(ParseMonitorDatagram(Kernel(Base({bad}))).ok()) << bad;
  }
  MonitorFilter empty_tag{.tags = {""}};
  EXPECT_TRUE(empty_tag.Passes(*d));
  absl::StatusOr<MonitorDevice> plain = ParseMonitorDatagram(Kernel(Base({"TAGS=seat"})));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(empty_tag.Passes(*plain));
}

TEST(MonitorFilterTest, SocketFilterReadsTheHeaderAndTheCheckReadsTheProperties) {
  udev::MonitorMessage block;
  block.subsystem = "block";
  block.devtype = "disk";
  block.tags = {"seat"};
  block.properties = {{"ACTION", "add"}, {"DEVPATH", "/devices/a"}, {"SUBSYSTEM", "block"}, {"SEQNUM", "1"}};
  const std::string hashed = Libudev(block);
  udev::MonitorMessage unhashed = block;
  unhashed.subsystem = "";
  unhashed.devtype = "";
  unhashed.tags = {};
  const std::string bare = Libudev(unhashed);

  const MonitorFilter by_subsystem{.subsystems = {{"block", std::nullopt}}};
  EXPECT_TRUE(by_subsystem.PassesSocketFilter(hashed));
  EXPECT_FALSE(by_subsystem.PassesSocketFilter(bare));
  EXPECT_TRUE(by_subsystem.PassesSocketFilter(Kernel(Base({}))));  // not libudev: passes
  EXPECT_TRUE((MonitorFilter{.subsystems = {{"block", "disk"}}}).PassesSocketFilter(hashed));
  EXPECT_FALSE((MonitorFilter{.subsystems = {{"block", "partition"}}}).PassesSocketFilter(hashed));
  EXPECT_TRUE((MonitorFilter{.tags = {"seat"}}).PassesSocketFilter(hashed));
  EXPECT_FALSE((MonitorFilter{.tags = {"seat"}}).PassesSocketFilter(bare));
  EXPECT_TRUE(MonitorFilter{}.PassesSocketFilter(bare));

  // "-s block/" wants DEVTYPE present and empty.
  absl::StatusOr<MonitorDevice> none = ParseMonitorDatagram(Kernel(Base({})));
  absl::StatusOr<MonitorDevice> empty = ParseMonitorDatagram(Kernel(Base({"DEVTYPE="})));
  ASSERT_TRUE(none.ok() && empty.ok());
  const MonitorFilter empty_devtype{.subsystems = {{"test", ""}}};
  EXPECT_FALSE(empty_devtype.Passes(*none));
  EXPECT_TRUE(empty_devtype.Passes(*empty));
}

}  // namespace
}  // namespace hotring::hotplug::udevadm

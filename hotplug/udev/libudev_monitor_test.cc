// hotring's libudev-format announcements received by Debian's libudev (udev_monitor with a
// subsystem filter, i.e. an in-kernel BPF filter over the header's MurmurHash2 values), in a
// private network namespace (nothing reaches the host's listeners) and a private mount namespace
// where /run/udev/control exists (libudev only listens to group 2 when a udev seems to run).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udev/database.h"
#include "hotplug/udev/monitor.h"
#include "io/netlink.h"
#include "testing/udev_namespace.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug::udev {
namespace {

using ::testing::Contains;
using ::testing::Not;

void EnterNamespaces() {
  const absl::Status entered = testing::EnterUdevTestNamespaces();
  ASSERT_TRUE(entered.ok()) << entered;
  const int fd = open("/run/udev/control", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
}

MonitorMessage Message(const std::string& subsystem, const std::string& devpath, const std::string& seqnum,
                       std::vector<std::pair<std::string, std::string>> extra) {
  MonitorMessage m;
  m.subsystem = subsystem;
  m.properties = {{"ACTION", "change"}, {"DEVPATH", devpath}, {"SUBSYSTEM", subsystem}, {"SEQNUM", seqnum}};
  for (auto& kv : extra) m.properties.push_back(std::move(kv));
  return m;
}

std::string ReadLine(FILE* f) {
  char buf[4096];
  if (fgets(buf, sizeof(buf), f) == nullptr) return "";
  std::string line(buf);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

TEST(LibudevMonitorTest, UdevMonitorReceivesOurAnnouncementThroughItsFilter) {
  EnterNamespaces();
  if (HasFatalFailure()) return;
  FILE* client = popen("hotplug/udev/libudev_monitor_client input 1", "r");
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(ReadLine(client), "ready");
  absl::StatusOr<UniqueFd> sender = io::OpenUeventSender();
  ASSERT_TRUE(sender.ok()) << sender.status();
  // A block device first: the client's filter (subsystem "input") drops it in the kernel.
  absl::StatusOr<std::string> block = EncodeMonitorMessage(
      Message("block", "/devices/virtual/hotring_test/block/vdz", "7", {{"DEVTYPE", "disk"}}));
  ASSERT_TRUE(block.ok());
  ASSERT_TRUE(io::SendToGroup(sender->get(), kUdevMonitorGroup, *block).ok());
  absl::StatusOr<std::string> input = EncodeMonitorMessage(Message(
      "input", "/devices/virtual/hotring_test/input/input9/event9", "8",
      {{"MAJOR", "13"}, {"MINOR", "73"}, {"DEVNAME", "/dev/input/event9"}, {"ID_INPUT", "1"},
       {"ID_INPUT_KEY", "1"}, {"ID_INPUT_KEYBOARD", "1"}, {"ID_PATH", "platform-i8042-serio-0"},
       {"DEVLINKS", "/dev/input/by-path/platform-i8042-serio-0-event-kbd"},
       {"USEC_INITIALIZED", "123456"}}));
  ASSERT_TRUE(input.ok());
  ASSERT_TRUE(io::SendToGroup(sender->get(), kUdevMonitorGroup, *input).ok());
  std::vector<std::string> lines;
  for (std::string line = ReadLine(client); !line.empty(); line = ReadLine(client)) lines.push_back(line);
  const int rc = pclose(client);
  EXPECT_EQ(rc, 0) << absl::StrJoin(lines, "\n");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(), "device");
  EXPECT_THAT(lines, Contains("syspath=/sys/devices/virtual/hotring_test/input/input9/event9"));
  EXPECT_THAT(lines, Contains("ACTION=change"));
  EXPECT_THAT(lines, Contains("SUBSYSTEM=input"));
  EXPECT_THAT(lines, Contains("DEVPATH=/devices/virtual/hotring_test/input/input9/event9"));
  EXPECT_THAT(lines, Contains("SEQNUM=8"));
  EXPECT_THAT(lines, Contains("ID_INPUT_KEYBOARD=1"));
  EXPECT_THAT(lines, Contains("ID_PATH=platform-i8042-serio-0"));
  EXPECT_THAT(lines, Contains("DEVLINKS=/dev/input/by-path/platform-i8042-serio-0-event-kbd"));
  EXPECT_THAT(lines, Contains("initialized=1"));
  EXPECT_THAT(lines, Not(Contains("SUBSYSTEM=block")));
}

// Lines of `client` until EOF, and its exit status.
std::pair<std::vector<std::string>, int> Finish(FILE* client) {
  std::vector<std::string> lines;
  for (std::string line = ReadLine(client); !line.empty(); line = ReadLine(client))
    lines.push_back(line);
  return {lines, pclose(client)};
}

TEST(LibudevMonitorTest, TagFilterReceivesOnlyAnnouncementsWithTheTag) {
  EnterNamespaces();
  if (HasFatalFailure()) return;
  FILE* client = popen("hotplug/udev/libudev_monitor_client tag:seat 1", "r");
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(ReadLine(client), "ready");
  absl::StatusOr<UniqueFd> sender = io::OpenUeventSender();
  ASSERT_TRUE(sender.ok()) << sender.status();
  // Untagged, then tagged "uaccess" only: the kernel's bloom filter drops both (were one let
  // through, it would be the one device the client prints).
  absl::StatusOr<std::string> untagged = EncodeMonitorMessage(
      Message("input", "/devices/virtual/hotring_test/input/input8/event8", "7", {}));
  ASSERT_TRUE(untagged.ok());
  MonitorMessage uaccess = Message("sound", "/devices/virtual/hotring_test/sound/card9/controlC9",
                                   "8", {{"TAGS", ":uaccess:"}, {"CURRENT_TAGS", ":uaccess:"}});
  uaccess.tags = {"uaccess"};
  absl::StatusOr<std::string> uaccess_only = EncodeMonitorMessage(uaccess);
  ASSERT_TRUE(uaccess_only.ok());
  MonitorMessage seat = Message("input", "/devices/virtual/hotring_test/input/input9", "9",
                                {{"ID_FOR_SEAT", "input-platform-i8042-serio-0"},
                                 {"TAGS", ":seat:uaccess:"}, {"CURRENT_TAGS", ":seat:"}});
  seat.tags = {"seat", "uaccess"};
  absl::StatusOr<std::string> tagged = EncodeMonitorMessage(seat);
  ASSERT_TRUE(tagged.ok());
  for (const std::string* m : {&*untagged, &*uaccess_only, &*tagged}) {
    ASSERT_TRUE(io::SendToGroup(sender->get(), kUdevMonitorGroup, *m).ok());
  }
  const auto [lines, rc] = Finish(client);
  EXPECT_EQ(rc, 0) << absl::StrJoin(lines, "\n");
  EXPECT_THAT(lines, Contains("SEQNUM=9"));
  EXPECT_THAT(lines, Contains("ID_FOR_SEAT=input-platform-i8042-serio-0"));
  EXPECT_THAT(lines, Contains("tag=seat"));
  EXPECT_THAT(lines, Contains("tag=uaccess"));
  EXPECT_THAT(lines, Not(Contains("SEQNUM=7")));
  EXPECT_THAT(lines, Not(Contains("SEQNUM=8")));
}

// udev_enumerate_add_match_tag lists /run/udev/tags/<tag>/ and reads each device's entry: what
// DatabaseDir writes, for the machine's /dev/null (c1:3), in this test's private /run.
TEST(LibudevMonitorTest, EnumerateByTagFindsOurTagIndexAndEntry) {
  EnterNamespaces();
  if (HasFatalFailure()) return;
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open("/run/udev");
  ASSERT_TRUE(db.ok()) << db.status();
  DatabaseEntry entry;
  entry.usec_initialized = 42;
  entry.properties = {{"ID_FOR_SEAT", "mem-test"}};
  entry.tags = {"hotring-test", "seat"};
  entry.current_tags = {"seat"};
  ASSERT_TRUE(db->Write("c1:3", FormatDatabaseEntry(entry)).ok());
  for (const std::string& tag : entry.tags) ASSERT_TRUE(db->AddTag(tag, "c1:3").ok());
  FILE* client = popen("hotplug/udev/libudev_monitor_client enumerate-tag hotring-test", "r");
  ASSERT_NE(client, nullptr);
  const auto [lines, rc] = Finish(client);
  EXPECT_EQ(rc, 0) << absl::StrJoin(lines, "\n");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "device"), 1) << absl::StrJoin(lines, "\n");
  EXPECT_THAT(lines, Contains("syspath=/sys/devices/virtual/mem/null"));
  EXPECT_THAT(lines, Contains("ID_FOR_SEAT=mem-test"));
  // sd-device joins its tag set in hash order.
  EXPECT_THAT(lines,
              Contains(::testing::AnyOf("TAGS=:hotring-test:seat:", "TAGS=:seat:hotring-test:")));
  EXPECT_THAT(lines, Contains("CURRENT_TAGS=:seat:"));
  EXPECT_THAT(lines, Contains("tag=seat"));
  EXPECT_THAT(lines, Contains("initialized=1"));
  // Without the index file the device is not listed, whatever its entry says.
  ASSERT_TRUE(db->RemoveTag("hotring-test", "c1:3").ok());
  client = popen("hotplug/udev/libudev_monitor_client enumerate-tag hotring-test", "r");
  ASSERT_NE(client, nullptr);
  const auto [after, rc2] = Finish(client);
  EXPECT_EQ(rc2, 0);
  EXPECT_THAT(after, ::testing::IsEmpty());
}

}  // namespace
}  // namespace hotring::hotplug::udev

// hotring's libudev-format announcements received by Debian's libudev (udev_monitor with a
// subsystem filter, i.e. an in-kernel BPF filter over the header's MurmurHash2 values), in a
// private network namespace (nothing reaches the host's listeners) and a private mount namespace
// where /run/udev/control exists (libudev only listens to group 2 when a udev seems to run).
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/udevcompat/monitor.h"
#include "io/netlink.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug::udevcompat {
namespace {

using ::testing::Contains;
using ::testing::Not;

void EnterNamespaces() {
  ASSERT_TRUE(testing::EnterPrivateNetworkNamespace().ok());
  ASSERT_EQ(unshare(CLONE_NEWNS), 0) << "unshare(CLONE_NEWNS)";
  ASSERT_EQ(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
  ASSERT_EQ(mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"), 0) << "mount tmpfs on /run";
  ASSERT_EQ(mkdir("/run/udev", 0755), 0);
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
  FILE* client = popen("hotplug/udevcompat/libudev_monitor_client input 1", "r");
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

}  // namespace
}  // namespace hotring::hotplug::udevcompat

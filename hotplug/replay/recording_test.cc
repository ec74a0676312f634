#include "hotplug/replay/recording.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "hotplug/replay/line_format.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

Recording Sample() {
  Recording r;
  r.kernel = "6.1.0-13-amd64";
  r.loaded_modules = {"ahci", "virtio_blk"};
  r.passwd = {"root:x:0:0:root:/root:/bin/sh"};
  r.group = {"root:x:0:", "disk:x:6:"};
  RecordedDevice disk;
  disk.devpath = "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda";
  disk.subsystem = "block";
  disk.kind = SubsystemKind::kClass;
  disk.attributes = {{"uevent", "MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVTYPE=disk\n"},
                     {"dev", "8:0\n"}};
  RecordedDevice pci;
  pci.devpath = "/devices/pci0000:00/0000:00:1f.2";
  pci.subsystem = "pci";
  pci.kind = SubsystemKind::kBus;
  pci.attributes = {{"modalias", "pci:v00008086d00002922sv*\n"}};
  pci.driver = "/bus/pci/drivers/ahci";
  r.devices = {pci, disk};
  r.events = {{{"ACTION", "add"}, {"DEVPATH", pci.devpath}, {"SUBSYSTEM", "pci"},
               {"MODALIAS", "pci:v00008086d00002922sv*"}, {"SEQNUM", "1"}},
              {{"ACTION", "add"}, {"DEVPATH", disk.devpath}, {"SUBSYSTEM", "block"},
               {"DEVNAME", "sda"}, {"MAJOR", "8"}, {"MINOR", "0"}, {"SEQNUM", "2"}}};
  return r;
}

TEST(Recording, FormatsOneFactPerLineAndRoundTrips) {
  const std::string text = FormatRecording(Sample());
  EXPECT_THAT(text, HasSubstr("hotring-recording 1\nkernel 6.1.0-13-amd64\nloaded ahci\n"));
  EXPECT_THAT(text, HasSubstr("\ndevice /devices/pci0000:00/0000:00:1f.2 bus pci\n"));
  EXPECT_THAT(text, HasSubstr("\ndriver /devices/pci0000:00/0000:00:1f.2 /bus/pci/drivers/ahci\n"));
  EXPECT_THAT(text, HasSubstr(" dev \"8:0\\n\"\n"));
  EXPECT_THAT(text, HasSubstr("\nevent ACTION=add DEVPATH=/devices/pci0000:00/0000:00:1f.2 "));
  absl::StatusOr<Recording> parsed = ParseRecording(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(FormatRecording(*parsed), text);
  EXPECT_EQ(parsed->devices[1].subsystem, "block");
  EXPECT_EQ(parsed->devices[1].kind, SubsystemKind::kClass);
  EXPECT_THAT(parsed->devices[1].attributes[1], Pair("dev", "8:0\n"));
  EXPECT_EQ(parsed->devices[0].driver, "/bus/pci/drivers/ahci");
  ASSERT_EQ(parsed->events.size(), 2u);
  EXPECT_THAT(parsed->events[1].back(), Pair("SEQNUM", "2"));
  EXPECT_THAT(parsed->group, ElementsAre("root:x:0:", "disk:x:6:"));
}

TEST(Recording, CommentsAndBlankLinesAreSkipped) {
  absl::StatusOr<Recording> r =
      ParseRecording("hotring-recording 1\n# taken on board 3\n\n  # indented\nkernel 6.1\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kernel, "6.1");
}

std::string ErrorOf(absl::string_view body) {
  return std::string(
      ParseRecording(absl::StrCat("hotring-recording 1\nkernel 6.1\n", body)).status().message());
}

TEST(Recording, ErrorsNameTheLine) {
  EXPECT_EQ(ParseRecording("hotring-recording 2\n").status().message(),
            "1: not a recording (the first line must be 'hotring-recording 1')");
  EXPECT_EQ(ParseRecording("hotring-recording 1\n").status().message(), "no kernel line");
  EXPECT_EQ(ErrorOf("bogus x\n"), "3: unknown keyword bogus");
  EXPECT_EQ(ErrorOf("attr /devices/x uevent \"\"\n"),
            "3: attr before its device line: /devices/x");
  EXPECT_THAT(ErrorOf("device /devices/../etc\n"), HasSubstr("3: bad devpath"));
  EXPECT_THAT(ErrorOf("device /sys/x\n"), HasSubstr("3: bad devpath"));
  EXPECT_THAT(ErrorOf("device /devices/x\ndevice /devices/x\n"), HasSubstr("4: device /devices/x twice"));
  EXPECT_THAT(ErrorOf("device /devices/x tree y\n"), HasSubstr("3: subsystem kind must be"));
  EXPECT_THAT(ErrorOf("device /devices/x\nattr /devices/x ../../etc/passwd y\n"),
              HasSubstr("4: bad attribute name"));
  EXPECT_THAT(ErrorOf("device /devices/x\ndriver /devices/x /etc\n"), HasSubstr("4: driver must be"));
  EXPECT_THAT(ErrorOf("event ACTION=add DEVPATH=/devices/x\n"), HasSubstr("3: event without SEQNUM"));
  EXPECT_THAT(ErrorOf("event ACTION=add SEQNUM=1\n"), HasSubstr("3: bad event"));
  EXPECT_THAT(ErrorOf("event ACTION=add DEVPATH=/module/x SEQNUM=1\n"),
              HasSubstr("3: event DEVPATH outside /devices"));
  EXPECT_THAT(ErrorOf("event novalue\n"), HasSubstr("3: event field novalue is not KEY=VALUE"));
  EXPECT_THAT(ErrorOf("loaded \"a b\"\n"), HasSubstr("3: bad module name"));
  EXPECT_THAT(ErrorOf("kernel 6.2\n"), HasSubstr("3: second kernel line"));
  EXPECT_THAT(ErrorOf("loaded \"x\n"), HasSubstr("3: unterminated quoted field"));
  EXPECT_THAT(ErrorOf(std::string(kMaxLineBytes + 1, 'a')), HasSubstr("3: line too long"));
}

TEST(Recording, BoundsAttributes) {
  std::string body = "device /devices/x\n";
  for (size_t i = 0; i <= kMaxDeviceAttributes; ++i) {
    body += absl::StrCat("attr /devices/x a", i, " v\n");
  }
  EXPECT_THAT(ErrorOf(body), HasSubstr("more than 16 attributes"));
  EXPECT_THAT(ErrorOf(absl::StrCat("device /devices/x\nattr /devices/x a ",
                                   std::string(kMaxAttributeBytes + 1, 'v'), "\n")),
              HasSubstr("4: attribute longer than 8 KiB"));
}

TEST(Recording, SafeNames) {
  EXPECT_TRUE(IsSafeDevpath("/devices/platform/serial8250/tty/ttyS0"));
  EXPECT_FALSE(IsSafeDevpath("/devices/a//b"));
  EXPECT_FALSE(IsSafeDevpath("/devices/a/./b"));
  EXPECT_FALSE(IsSafeDevpath("/devices/a b"));
  EXPECT_FALSE(IsSafeName(".."));
  EXPECT_FALSE(IsSafeName("a/b"));
  EXPECT_TRUE(IsSafeName("0000:00:1f.2"));
  EXPECT_TRUE(IsSafeDriverPath("/bus/serio/drivers/i8042 kbd"));  // seen on a qemu guest
  EXPECT_FALSE(IsSafeDriverPath("/bus/x/../../etc"));
  EXPECT_FALSE(IsSafeDriverPath("/etc/x"));
  EXPECT_FALSE(IsSafeDriverPath("/bus/x\ny"));
}

}  // namespace
}  // namespace hotring::hotplug::replay

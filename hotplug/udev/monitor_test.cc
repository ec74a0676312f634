#include "hotplug/udev/monitor.h"

#include <arpa/inet.h>

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::udev {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

uint32_t Be32At(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return ntohl(v);
}
uint32_t HostAt(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

MonitorMessage Keyboard() {
  MonitorMessage m;
  m.subsystem = "input";
  m.tags = {"seat", "uaccess"};
  m.properties = {{"ACTION", "add"},         {"DEVPATH", "/devices/x/input/input2/event2"},
                  {"SUBSYSTEM", "input"},    {"DEVNAME", "/dev/input/event2"},
                  {"SEQNUM", "1234"},        {"MAJOR", "13"},
                  {"MINOR", "66"},           {"ID_INPUT", "1"},
                  {"ID_INPUT_KEYBOARD", "1"}, {"USEC_INITIALIZED", "42"}};
  return m;
}

TEST(MurmurHash2, KnownValues) {
  // Reference values of Austin Appleby's MurmurHash2 (seed 0) on a little-endian machine.
  EXPECT_EQ(MurmurHash2(""), 0u);
  EXPECT_EQ(MurmurHash2("a"), 0x92685f5eu);
  EXPECT_EQ(MurmurHash2("abcd"), 0x26873021u);
  // Equal input, equal hash; the tail bytes count.
  EXPECT_NE(MurmurHash2("input"), MurmurHash2("inpuT"));
}

TEST(MonitorMessage, HeaderAsLibudevLaysItOut) {
  absl::StatusOr<std::string> d = EncodeMonitorMessage(Keyboard());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->substr(0, 8), std::string("libudev\0", 8));
  EXPECT_EQ(Be32At(*d, 8), 0xfeedcafeu);
  EXPECT_EQ(HostAt(*d, 12), 40u);  // header size
  EXPECT_EQ(HostAt(*d, 16), 40u);  // properties offset
  EXPECT_EQ(HostAt(*d, 20), d->size() - 40);
  EXPECT_EQ(Be32At(*d, 24), MurmurHash2("input"));
  EXPECT_EQ(Be32At(*d, 28), 0u);  // no devtype
  const uint64_t bloom = TagBloomBits("seat") | TagBloomBits("uaccess");
  EXPECT_EQ(Be32At(*d, 32), static_cast<uint32_t>(bloom >> 32));
  EXPECT_EQ(Be32At(*d, 36), static_cast<uint32_t>(bloom));
  EXPECT_EQ(d->substr(40, 11), std::string("ACTION=add\0", 11));
  EXPECT_EQ(d->back(), '\0');
}

TEST(MonitorMessage, RoundTrips) {
  absl::StatusOr<std::string> d = EncodeMonitorMessage(Keyboard());
  ASSERT_TRUE(d.ok());
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> back = DecodeMonitorMessage(*d);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Keyboard().properties);
}

TEST(MonitorMessage, RefusesWhatLibudevWouldDrop) {
  MonitorMessage m = Keyboard();
  m.properties.erase(m.properties.begin() + 4);  // SEQNUM
  EXPECT_FALSE(EncodeMonitorMessage(m).ok());
  m = Keyboard();
  m.properties.emplace_back("X", std::string("a\0b", 3));
  EXPECT_FALSE(EncodeMonitorMessage(m).ok());
  m = Keyboard();
  m.properties.emplace_back("X", "a\nb");
  EXPECT_FALSE(EncodeMonitorMessage(m).ok());
  m = Keyboard();
  m.properties.emplace_back("BIG", std::string(9000, 'x'));
  EXPECT_FALSE(EncodeMonitorMessage(m).ok());
}

TEST(MonitorMessage, DecodeRejectsBadInput) {
  absl::StatusOr<std::string> d = EncodeMonitorMessage(Keyboard());
  ASSERT_TRUE(d.ok());
  std::string bad_magic = *d;
  bad_magic[8] ^= 1;
  EXPECT_FALSE(DecodeMonitorMessage(bad_magic).ok());
  std::string bad_len = *d;
  bad_len[20] = '\xff';
  bad_len[21] = '\xff';
  EXPECT_FALSE(DecodeMonitorMessage(bad_len).ok());
  EXPECT_FALSE(DecodeMonitorMessage("add@/devices/x").ok());
  EXPECT_FALSE(DecodeMonitorMessage(d->substr(0, 20)).ok());
}

}  // namespace
}  // namespace hotring::hotplug::udev

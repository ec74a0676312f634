#include "hotplug/cli/udevadm/control_protocol.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::udevadm {
namespace {

// SET_LOG_LEVEL 3 and EXIT as Debian's udevadm 252 sent them to a stand-in socket
// (testing/udevadm/golden/control_separate.out): 28 bytes, then zeros up to 280. SET_ENV's
// text goes where the integer goes (the union).
std::string Hex(const std::string& bytes) { return absl::BytesToHexString(bytes); }

TEST(ControlProtocolTest, EncodesAs252Sends) {
  absl::StatusOr<std::string> level = EncodeUdevControl({.type = UdevControlType::kSetLogLevel, .intval = 3});
  ASSERT_TRUE(level.ok()) << level.status();
  ASSERT_EQ(level->size(), kUdevControlMessageSize);
  EXPECT_EQ(Hex(level->substr(0, 28)), "756465762d3235320000000000000000ea1dadde0100000003000000");
  EXPECT_EQ(level->substr(28), std::string(kUdevControlMessageSize - 28, '\0'));

  absl::StatusOr<std::string> exit = EncodeUdevControl({.type = UdevControlType::kExit});
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(Hex(exit->substr(0, 28)), "756465762d3235320000000000000000ea1dadde0800000000000000");

  absl::StatusOr<std::string> env = EncodeUdevControl({.type = UdevControlType::kSetEnv, .text = "FOO=bar"});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(Hex(env->substr(0, 31)), "756465762d3235320000000000000000ea1dadde05000000464f4f3d626172");
  EXPECT_EQ(env->substr(31), std::string(kUdevControlMessageSize - 31, '\0'));
}

TEST(ControlProtocolTest, RefusesTextThatDoesNotFit) {
  EXPECT_FALSE(EncodeUdevControl({.type = UdevControlType::kSetEnv, .text = std::string(256, 'x')}).ok());
}

TEST(ControlProtocolTest, TheDaemonsParserReadsWhatItEncodes) {
  absl::StatusOr<std::string> bytes = EncodeUdevControl({.type = UdevControlType::kSetChildrenMax, .intval = 7});
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<udev::ControlMessage> back = udev::ParseControlMessage(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->type, static_cast<int32_t>(UdevControlType::kSetChildrenMax));
  EXPECT_EQ(back->intval, 7);
  std::string bad_magic = *bytes;
  bad_magic[16] = 0;
  EXPECT_FALSE(udev::ParseControlMessage(bad_magic).ok());
  EXPECT_FALSE(udev::ParseControlMessage(bytes->substr(0, 100)).ok());
}

}  // namespace
}  // namespace hotring::hotplug::udevadm

// The control message codec against what Debian 12's udevadm 252 sent
// (testdata/udevadm_control_252.txt, recorded by testing/udevd/capture_control_goldens.sh).
#include "hotplug/udev/control_message.h"

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::udev {
namespace {

// "control -p FOO=bar baz" -> its packets, in order.
std::map<std::string, std::vector<std::string>> Goldens() {
  std::map<std::string, std::vector<std::string>> packets;
  std::ifstream in("hotplug/udev/testdata/udevadm_control_252.txt");
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> parts = absl::StrSplit(line, " | ");
    if (parts.size() != 2) continue;
    packets[parts[0]].push_back(absl::HexStringToBytes(parts[1]));
  }
  return packets;
}

ControlMessage Parsed(const std::string& packet) {
  absl::StatusOr<ControlMessage> message = ParseControlMessage(packet);
  EXPECT_TRUE(message.ok()) << message.status();
  return message.ok() ? *message : ControlMessage{};
}

TEST(ControlMessageTest, ParsesWhatUdevadmSends) {
  const std::map<std::string, std::vector<std::string>> goldens = Goldens();
  ASSERT_EQ(goldens.size(), 11u);
  struct Case {
    std::string command;
    ControlType type;
    int32_t intval;
    std::string text;
  };
  const Case cases[] = {
      {"control --log-level=debug", ControlType::kSetLogLevel, 7, ""},
      {"control --log-level=err", ControlType::kSetLogLevel, 3, ""},
      {"control -s", ControlType::kStopExecQueue, 0, ""},
      {"control -S", ControlType::kStartExecQueue, 0, ""},
      {"control -R", ControlType::kReload, 0, ""},
      {"control -p FOO=bar baz", ControlType::kSetEnv, 0x3d4f4f46, "FOO=bar baz"},
      {"control --property=FOO=", ControlType::kSetEnv, 0x3d4f4f46, "FOO="},
      {"control -m 7", ControlType::kSetChildrenMax, 7, ""},
      {"control --ping", ControlType::kPing, 0, ""},
      {"settle", ControlType::kPing, 0, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.command);
    const std::vector<std::string>& packets = goldens.at(c.command);
    // Each request, then END: udevadm waits for the hang-up after it.
    ASSERT_EQ(packets.size(), 2u);
    const ControlMessage request = Parsed(packets[0]);
    EXPECT_EQ(request.type, static_cast<int32_t>(c.type));
    EXPECT_EQ(request.intval, c.intval);
    if (c.type == ControlType::kSetEnv) {
      EXPECT_EQ(request.text, c.text);
    }
    EXPECT_EQ(Parsed(packets[1]).type, static_cast<int32_t>(ControlType::kEndMessages));
  }
  // EXIT is the last message: no END follows it.
  const std::vector<std::string>& exit = goldens.at("control --exit");
  ASSERT_EQ(exit.size(), 1u);
  EXPECT_EQ(Parsed(exit[0]).type, static_cast<int32_t>(ControlType::kExit));
}

TEST(ControlMessageTest, EncodesWhatUdevadmSends) {
  const std::map<std::string, std::vector<std::string>> goldens = Goldens();
  ASSERT_FALSE(goldens.empty());
  EXPECT_EQ(EncodeControlMessage(ControlType::kSetLogLevel, 7),
            goldens.at("control --log-level=debug")[0]);
  EXPECT_EQ(EncodeControlMessage(ControlType::kSetEnv, 0, "FOO=bar baz"),
            goldens.at("control -p FOO=bar baz")[0]);
  EXPECT_EQ(EncodeControlMessage(ControlType::kSetChildrenMax, 7), goldens.at("control -m 7")[0]);
  EXPECT_EQ(EncodeControlMessage(ControlType::kPing), goldens.at("settle")[0]);
  EXPECT_EQ(EncodeControlMessage(ControlType::kEndMessages), goldens.at("settle")[1]);
  EXPECT_EQ(EncodeControlMessage(ControlType::kExit), goldens.at("control --exit")[0]);
}

TEST(ControlMessageTest, RefusesWrongSizeAndMagic) {
  const std::string good = EncodeControlMessage(ControlType::kPing);
  EXPECT_FALSE(ParseControlMessage("").ok());
  EXPECT_FALSE(ParseControlMessage(good.substr(0, good.size() - 1)).ok());
  EXPECT_FALSE(ParseControlMessage(good + "x").ok());
  std::string bad_magic = good;
  bad_magic[16] ^= 1;
  const absl::StatusOr<ControlMessage> parsed = ParseControlMessage(bad_magic);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("magic"), absl::string_view::npos);
}

TEST(ControlMessageTest, TextWithoutNulIsCutAt255Bytes) {
  std::string packet = EncodeControlMessage(ControlType::kSetEnv, 0, "K=v");
  for (size_t i = 24; i < packet.size(); ++i) packet[i] = 'x';
  const ControlMessage message = Parsed(packet);
  EXPECT_EQ(message.text.size(), kControlBufSize - 1);
  // Longer text is cut on encoding too, leaving the NUL udevd relies on.
  const std::string long_text(400, 'y');
  EXPECT_EQ(Parsed(EncodeControlMessage(ControlType::kSetEnv, 0, long_text)).text,
            long_text.substr(0, 255));
}

TEST(ControlMessageTest, NamesTypes) {
  EXPECT_EQ(ControlTypeName(5), "SET_ENV");
  EXPECT_EQ(ControlTypeName(8), "EXIT");
  EXPECT_EQ(ControlTypeName(42), "UNKNOWN");
  EXPECT_EQ(ControlTypeName(-1), "UNKNOWN");
}

}  // namespace
}  // namespace hotring::hotplug::udev

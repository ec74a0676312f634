#include "hotplug/udev/ifindex.h"

#include "gtest/gtest.h"

namespace hotring::hotplug::udev {
namespace {

TEST(ParseIfindex, AsSdDeviceReadsIt) {
  EXPECT_EQ(ParseIfindex("3"), 3);
  EXPECT_EQ(ParseIfindex("+3"), 3);
  EXPECT_EQ(ParseIfindex(" 3"), 3);
  EXPECT_EQ(ParseIfindex("0x10"), 16);
  EXPECT_EQ(ParseIfindex("010"), 8);
  EXPECT_EQ(ParseIfindex("0b11"), 3);
  EXPECT_EQ(ParseIfindex("0o17"), 15);
  EXPECT_EQ(ParseIfindex("2147483647"), 2147483647);
  for (const char* refused : {"", " ", "0", "-1", "3 ", "3x", "x3", "0x", "0b", "2147483648", "99999999999999999999"}) {
    EXPECT_EQ(ParseIfindex(refused), std::nullopt) << "'" << refused << "'";
  }
}

}  // namespace
}  // namespace hotring::hotplug::udev

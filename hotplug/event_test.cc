#include "hotplug/event.h"

#include "gtest/gtest.h"

namespace hotring::hotplug {
namespace {

TEST(EventTest, LabelNamesSeqnumActionAndDevpath) {
  Event event;
  event.action = "add";
  event.devpath = "/devices/virtual/block/loop0";
  EXPECT_EQ(EventLabel(event), "ACTION=add DEVPATH=/devices/virtual/block/loop0");
  event.seqnum = 1234;
  EXPECT_EQ(EventLabel(event), "SEQNUM=1234 ACTION=add DEVPATH=/devices/virtual/block/loop0");
}

TEST(EventTest, GetFindsTheFirstValueInArrivalOrder) {
  Event event;
  event.env = {{"ACTION", "add"}, {"ID", "1"}, {"ID", "2"}};
  ASSERT_TRUE(event.Get("ID").has_value());
  EXPECT_EQ(*event.Get("ID"), "1");
  EXPECT_FALSE(event.Get("MISSING").has_value());
}

}  // namespace
}  // namespace hotring::hotplug

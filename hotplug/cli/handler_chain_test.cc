// The udev stages' flags of `hotring daemon` (and so of the udevd drop-in, which passes them):
// each lands in the ChainOptions field the chain builds the stage from; a bad value is refused.
#include "hotplug/cli/handler_chain.h"

#include <string>
#include <vector>

#include "core/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::Status Parse(const std::vector<std::string>& args, ChainOptions& chain) {
  FlagSet flags("daemon", "");
  AddChainFlags(flags, chain);
  return flags.Parse(args, nullptr).status();
}

TEST(HandlerChainFlagsTest, UdevPathsAndNames) {
  ChainOptions chain;
  ASSERT_TRUE(Parse({"--udev-compat", "--udev-rules-dir", "/r", "--udev-hwdb", "/img/hwdb.bin", "--udev-hwdb",
                     "/usr/lib/udev/hwdb.bin", "--udev-link-dir", "/img/network", "--udev-resolve-names",
                     "never"},
                    chain)
                  .ok());
  EXPECT_TRUE(chain.udev_compat);
  EXPECT_THAT(chain.udev_rules_dirs, ElementsAre("/r"));
  EXPECT_THAT(chain.udev_hwdb, ElementsAre("/img/hwdb.bin", "/usr/lib/udev/hwdb.bin"));
  EXPECT_THAT(chain.udev_link_dirs, ElementsAre("/img/network"));
  ASSERT_TRUE(chain.udev_resolve_names.has_value());
  EXPECT_EQ(*chain.udev_resolve_names, udevrules::ResolveNames::kNever);
}

TEST(HandlerChainFlagsTest, DefaultsLeaveUdevdsChoices) {
  ChainOptions chain;
  ASSERT_TRUE(Parse({}, chain).ok());
  EXPECT_TRUE(chain.udev_hwdb.empty());
  EXPECT_TRUE(chain.udev_link_dirs.empty());
  EXPECT_FALSE(chain.udev_resolve_names.has_value()) << "udev.conf's resolve_names then decides";
}

TEST(HandlerChainFlagsTest, BadResolveNamesIsRefused) {
  ChainOptions chain;
  const absl::Status s = Parse({"--udev-resolve-names", "sometimes"}, chain);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("not early, late or never"));
}

}  // namespace
}  // namespace hotring::hotplug

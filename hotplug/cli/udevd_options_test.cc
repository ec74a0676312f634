#include "hotplug/cli/udevd_options.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

UdevdSettings Args(const std::vector<std::string>& args) {
  UdevdSettings s;
  const absl::Status parsed = ApplyUdevdArgs(args, s, nullptr);
  EXPECT_TRUE(parsed.ok()) << parsed;
  return s;
}

TEST(UdevdOptionsTest, DebianInitramfsCommandLine) {
  // initramfs-tools' init-top/udev.
  const UdevdSettings s = Args({"--daemon", "--resolve-names=never"});
  EXPECT_TRUE(s.daemonize);
  EXPECT_EQ(s.resolve_names, udevrules::ResolveNames::kNever);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(UdevdOptionsTest, ShortAndLongOptions) {
  const UdevdSettings s = Args({"-d", "-D", "-c", "3", "-t", "1min 30s", "-N", "late", "-e", "0",
                                "--timeout-signal=SIGTERM"});
  EXPECT_TRUE(s.daemonize);
  EXPECT_TRUE(s.debug);
  EXPECT_EQ(s.children_max, 3u);
  EXPECT_EQ(s.event_timeout, absl::Seconds(90));
  EXPECT_EQ(s.resolve_names, udevrules::ResolveNames::kLate);
  EXPECT_EQ(s.timeout_signal, 15);
  const UdevdSettings v = Args({"-V"});
  EXPECT_TRUE(v.version);
  const UdevdSettings h = Args({"--help"});
  EXPECT_TRUE(h.help_shown);
}

TEST(UdevdOptionsTest, BadValuesAreWarningsAsForUdevd) {
  const UdevdSettings s =
      Args({"--children-max=lots", "--event-timeout=soon", "--resolve-names=maybe"});
  EXPECT_EQ(s.children_max, 0u);
  EXPECT_EQ(s.event_timeout, absl::Seconds(180));
  EXPECT_EQ(s.resolve_names, udevrules::ResolveNames::kEarly);
  ASSERT_EQ(s.warnings.size(), 3u);
  EXPECT_THAT(s.warnings[0], HasSubstr("--children-max="));
  EXPECT_THAT(s.warnings[2], HasSubstr("maybe"));
}

TEST(UdevdOptionsTest, UnknownOptionAndExecDelayAreRefused) {
  UdevdSettings s;
  EXPECT_FALSE(ApplyUdevdArgs({"--frobnicate"}, s, nullptr).ok());
  const absl::Status delay = ApplyUdevdArgs({"--exec-delay=2"}, s, nullptr);
  ASSERT_FALSE(delay.ok());
  EXPECT_EQ(delay.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(delay.message(), HasSubstr("exec-delay"));
}

TEST(UdevdOptionsTest, LaterSourcesWin) {
  UdevdSettings s;
  udevrules::UdevConf conf;
  conf.log_level = 3;
  conf.children_max = 4;
  conf.event_timeout = absl::Seconds(30);
  ApplyUdevConf(conf, s);
  EXPECT_EQ(s.log_level, 3);
  ApplyLogLevelEnvironment("info", s);
  EXPECT_EQ(s.log_level, 6);
  ASSERT_TRUE(ApplyUdevdArgs({"-c", "5"}, s, nullptr).ok());
  EXPECT_EQ(s.children_max, 5u);
  ApplyKernelCmdline("quiet udev.children_max=6 udev.log_level=debug", false, s);
  EXPECT_EQ(s.children_max, 6u);
  EXPECT_EQ(s.log_level, 7);
  EXPECT_EQ(s.event_timeout, absl::Seconds(30));
}

TEST(UdevdOptionsTest, KernelCommandLine) {
  UdevdSettings s;
  ApplyKernelCmdline(
      "BOOT_IMAGE=/vmlinuz root=UUID=x ro udev.log-priority=err udev.children_max=2 "
      "udev.event_timeout=20 net.ifnames=0 udev.exec_delay=0 udev.timeout_signal=SIGINT",
      false, s);
  EXPECT_EQ(s.log_level, 3);
  EXPECT_EQ(s.children_max, 2u);
  EXPECT_EQ(s.event_timeout, absl::Seconds(20));
  EXPECT_EQ(s.net_ifnames, false);
  EXPECT_EQ(s.timeout_signal, 2);
  EXPECT_TRUE(s.warnings.empty()) << absl::StrJoin(s.warnings, "\n");
}

TEST(UdevdOptionsTest, RdPrefixOnlyInAnInitrd) {
  UdevdSettings real_root;
  ApplyKernelCmdline("rd.udev.children_max=2 rd.udev.log_level=debug", false, real_root);
  EXPECT_EQ(real_root.children_max, 0u);
  EXPECT_FALSE(real_root.log_level.has_value());
  UdevdSettings initrd;
  ApplyKernelCmdline("udev.children_max=3 rd.udev.children_max=2 rd.udev.log_level=debug", true,
                     initrd);
  EXPECT_EQ(initrd.children_max, 2u);  // the later word
  EXPECT_EQ(initrd.log_level, 7);
}

TEST(UdevdOptionsTest, KernelCommandLineWarningsNeverStopTheBoot) {
  UdevdSettings s;
  ApplyKernelCmdline(
      "udev.children_max=many udev.exec_delay=5 udev.bogus=1 udev.log_level net.ifnames=x "
      "\"udev.event_timeout=1 min\"",
      false, s);
  EXPECT_EQ(s.children_max, 0u);
  EXPECT_EQ(s.event_timeout, absl::Minutes(1));  // the quotes group the words
  EXPECT_FALSE(s.net_ifnames.has_value());
  ASSERT_EQ(s.warnings.size(), 5u) << absl::StrJoin(s.warnings, "\n");
  EXPECT_THAT(s.warnings[1], HasSubstr("never delayed"));
  EXPECT_THAT(s.warnings[2], HasSubstr("udev.bogus"));
}

TEST(UdevdOptionsTest, DefaultChildrenMaxAsUdevd) {
  EXPECT_EQ(UdevdDefaultChildrenMax(2, 24ull << 30), 20u);   // 2 x 2 + 16
  EXPECT_EQ(UdevdDefaultChildrenMax(1, 256ull << 20), 10u);  // memory, at least 10
  EXPECT_EQ(UdevdDefaultChildrenMax(64, 4ull << 30), 32u);   // 4 GiB / 128 MiB
  EXPECT_EQ(UdevdDefaultChildrenMax(4096, 1ull << 40), 2048u);
  EXPECT_EQ(UdevdDefaultChildrenMax(0, 0), 10u);
}

TEST(UdevdOptionsTest, DaemonArgs) {
  UdevdSettings s;
  EXPECT_THAT(UdevdDaemonArgs(s, 20),
              ElementsAre("--udev-control", "--udev-compat", "--children-max", "20",
                          "--event-timeout", "180", "--udev-resolve-names", "early",
                          "--log-level", "info"));
  s.children_max = 1;
  s.resolve_names = udevrules::ResolveNames::kNever;  // initramfs-tools' --resolve-names=never
  s.event_timeout = absl::Milliseconds(2500);
  s.log_level = 2;  // crit: hotring's most severe level
  EXPECT_THAT(UdevdDaemonArgs(s, 20),
              ElementsAre("--udev-control", "--udev-compat", "--children-max", "1",
                          "--event-timeout", "2.5", "--udev-resolve-names", "never",
                          "--log-level", "error"));
  s.debug = true;
  EXPECT_EQ(UdevdDaemonArgs(s, 20).back(), "debug");
}

TEST(UdevdOptionsTest, ArgsFile) {
  EXPECT_THAT(ParseArgsFile("# board\n--config\n/etc/mdev.conf\n\n  --no-modules  \n"),
              ElementsAre("--config", "/etc/mdev.conf", "--no-modules"));
  EXPECT_TRUE(ParseArgsFile("").empty());
}

}  // namespace
}  // namespace hotring::hotplug

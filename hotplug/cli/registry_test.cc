#include "hotplug/cli/registry.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/command_table.h"
#include "gtest/gtest.h"
#include "hotplug/cli/bench_registry.h"

namespace hotring::hotplug {
namespace {

TEST(RegistryTest, HasEveryCommandOnce) {
  for (const char* name :
       {"daemon", "send", "settle", "control", "monitor", "trigger", "report", "record", "replay",
        "mdev", "init", "modprobe", "udevd", "udevadm", "bench", "selfcheck", "--version", "version", "help",
        "--help"}) {
    const Command* command = FindCommand(CommandRegistry(), "", name);
    ASSERT_NE(command, nullptr) << name;
    EXPECT_NE(command->run, nullptr) << name;
    EXPECT_FALSE(command->summary.empty()) << name;
  }
  // No name twice within a group: the first would hide the second.
  std::set<std::pair<std::string, std::string>> seen;
  for (const Command& command : CommandRegistry()) {
    for (absl::string_view name : absl::StrSplit(command.name, '|')) {
      EXPECT_TRUE(seen.emplace(std::string(command.group), std::string(name)).second) << name;
    }
  }
}

TEST(RegistryTest, HasEveryBenchmark) {
  for (const char* name : {"reactor", "events", "coldplug", "startup", "rules", "modules",
                           "memory", "sysv", "uds", "uds-server", "uds-client", "dgram-fanin",
                           "boot"}) {
    EXPECT_NE(FindCommand(BenchRegistry(), "bench", name), nullptr) << name;
    EXPECT_EQ(FindCommand(CommandRegistry(), "", name), nullptr) << name;  // not a command
    // The board's binary carries none of them: hotring-bench does.
    EXPECT_EQ(FindCommand(CommandRegistry(), "bench", name), nullptr) << name;
  }
}

TEST(RegistryTest, ProgramNamesAreTheirCommands) {
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"/sbin/mdev", "mdev"},
      {"/init", "init"},
      {"/sbin/modprobe", "modprobe"},
      {"/lib/systemd/systemd-udevd", "udevd"},
      {"/sbin/udevd", "udevd"}};
  for (const auto& [argv0, name] : programs) {
    EXPECT_EQ(FindProgram(CommandRegistry(), argv0), FindCommand(CommandRegistry(), "", name))
        << argv0;
  }
  // The uevent helper is send with --autostart: a program of its own, not a command.
  const Command* helper = FindProgram(CommandRegistry(), "/usr/lib/hotring/hotring-send");
  ASSERT_NE(helper, nullptr);
  EXPECT_NE(helper, FindCommand(CommandRegistry(), "", "send"));
  EXPECT_EQ(FindCommand(CommandRegistry(), "", "hotring-send"), nullptr);
  EXPECT_EQ(FindProgram(CommandRegistry(), "/usr/bin/hotring"), nullptr);
}

TEST(RegistryTest, UsageListsTheCommandsNotTheBenchmarks) {
  const std::string usage = Usage();
  EXPECT_TRUE(absl::StartsWith(usage, "usage: hotring <command> [options]\n\ncommands:\n"));
  for (const char* line :
       {"\n  daemon                 serve the control socket and kernel uevents\n",
        "\n  mdev [-s|-d [-f]]      busybox's mdev", "\n  bench NAME             benchmarks",
        "\n  --version              print the version\n", "As `hotring-send` (a symlink)"}) {
    EXPECT_TRUE(absl::StrContains(usage, line)) << line;
  }
  EXPECT_FALSE(absl::StrContains(usage, "dgram-fanin"));
  EXPECT_FALSE(absl::StrContains(usage, "|version"));
  EXPECT_FALSE(absl::StrContains(usage, "\n  hotring-send"));
}

}  // namespace
}  // namespace hotring::hotplug

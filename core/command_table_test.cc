#include "core/command_table.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hotring {
namespace {

int RunDaemon(const std::vector<std::string>&) { return 10; }
int RunMdev(const std::vector<std::string>& args) { return 20 + static_cast<int>(args.size()); }
int RunBenchEvents(const std::vector<std::string>&) { return 30; }

constexpr Command kTable[] = {
    {"", "daemon", "", "serve the control socket and kernel uevents", RunDaemon},
    {"", "mdev", "[-s|-d [-f]]", "busybox's mdev\n(also as `mdev`)", RunMdev, "mdev|mdev.static"},
    {"bench", "events", "", "the event pipeline", RunBenchEvents},
    {"", "a-command-with-a-long-name", "[ARGS]", "said on the next line", RunDaemon},
    {"", "--version|version", "", "print the version", RunBenchEvents},
};

TEST(CommandTableTest, FindsByGroupAndName) {
  const Command* daemon = FindCommand(kTable, "", "daemon");
  ASSERT_NE(daemon, nullptr);
  EXPECT_EQ(daemon->run({}), 10);
  EXPECT_EQ(FindCommand(kTable, "", "events"), nullptr);  // a benchmark, not a command
  const Command* events = FindCommand(kTable, "bench", "events");
  ASSERT_NE(events, nullptr);
  EXPECT_EQ(events->run({}), 30);
  EXPECT_EQ(FindCommand(kTable, "", "nope"), nullptr);
  // Every name of an entry finds it; a part of one does not.
  const Command* version = FindCommand(kTable, "", "--version");
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(FindCommand(kTable, "", "version"), version);
  EXPECT_EQ(FindCommand(kTable, "", "--version|version"), nullptr);
  EXPECT_EQ(FindCommand(kTable, "", "vers"), nullptr);
}

TEST(CommandTableTest, FindsByTheProgramNameOfArgv0) {
  const Command* mdev = FindProgram(kTable, "/sbin/mdev");
  ASSERT_NE(mdev, nullptr);
  EXPECT_EQ(mdev->run({"-s"}), 21);
  EXPECT_EQ(FindProgram(kTable, "mdev.static"), mdev);
  EXPECT_EQ(FindProgram(kTable, "/usr/bin/hotring"), nullptr);
  EXPECT_EQ(FindProgram(kTable, "/sbin/"), nullptr);
  EXPECT_EQ(FindProgram(kTable, "/bin/mdevx"), nullptr);
}

TEST(CommandTableTest, ListsAGroupInTableOrder) {
  EXPECT_EQ(CommandList(kTable, ""),
            "  daemon                 serve the control socket and kernel uevents\n"
            "  mdev [-s|-d [-f]]      busybox's mdev\n"
            "                         (also as `mdev`)\n"
            "  a-command-with-a-long-name [ARGS]\n"
            "                         said on the next line\n"
            "  --version              print the version\n");
  EXPECT_EQ(CommandList(kTable, "bench"), "  events                 the event pipeline\n");
}

}  // namespace
}  // namespace hotring

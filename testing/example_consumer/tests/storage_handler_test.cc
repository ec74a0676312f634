// The storage handler, run by a replay of the host board: every block device with a node is
// accepted, the rules make the nodes the project expects.
#include "gtest/gtest.h"
#include "testing/fixture.h"

namespace {

using hotring::testing::CommandRun;
using hotring::testing::DevEntry;
using hotring::testing::EnvOf;
using hotring::testing::FindDevEntry;
using hotring::testing::Manifest;
using hotring::testing::ReplayRecording;
using hotring::testing::RunsOf;

TEST(StorageHandler, AcceptsEveryBlockDeviceWithANode) {
  absl::StatusOr<Manifest> m = ReplayRecording({.recording = "boards/host/host.rec",
                                                .config = "boards/host/mdev.conf",
                                                .exec = {"handlers/storage.sh"}});
  ASSERT_TRUE(m.ok()) << m.status();
  int block = 0;
  for (const CommandRun* run : RunsOf(*m, "exec")) {
    ASSERT_EQ(run->argv.size(), 2u);
    EXPECT_EQ(run->argv[0], "storage.sh");
    if (run->argv[1] != "block") continue;
    ++block;
    // Block devices without DEVNAME are refused (exit 1) by design; all others pass.
    EXPECT_EQ(run->status, EnvOf(*run, "DEVNAME").empty() ? "exit 1" : "exit 0")
        << EnvOf(*run, "DEVPATH");
  }
  EXPECT_GT(block, 0);
  const DevEntry* vda = FindDevEntry(*m, "vda");
  ASSERT_NE(vda, nullptr);
  EXPECT_EQ(vda->gid, 6u);  // disk, from the board's /etc/group
  EXPECT_EQ(vda->mode, 0660u);
  // Listed as a block node whoever runs the test (the replay makes placeholders, not nodes).
  EXPECT_EQ(vda->type, DevEntry::Type::kBlock);
  EXPECT_EQ(vda->major, 254u);
  // The rule's command ran for the disk, with MDEV naming its node.
  bool disk_command = false;
  for (const CommandRun* run : RunsOf(*m, "rule")) {
    disk_command |= run->argv == std::vector<std::string>{"echo disk $MDEV"} &&
                    EnvOf(*run, "MDEV") == "vda" && run->status == "exit 0";
  }
  EXPECT_TRUE(disk_command);
  EXPECT_TRUE(m->problems.empty());
}

}  // namespace

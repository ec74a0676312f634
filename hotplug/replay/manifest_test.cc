#include "hotplug/replay/manifest.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Manifest, SortsDevAndRunsAndHidesTheWorkDir) {
  Manifest m;
  m.dev.push_back({.path = "sda", .type = DevEntry::Type::kBlock, .major = 8, .minor = 0,
                   .uid = 0, .gid = 6, .mode = 0660});
  m.dev.push_back({.path = "disk", .type = DevEntry::Type::kDir, .mode = 0755});
  m.dev.push_back({.path = "disk/root", .type = DevEntry::Type::kLink, .target = "../sda"});
  m.modules = {"module ahci kernel/ahci.ko"};
  CommandRun second{.kind = "exec", .order = 20, .argv = {"handler.sh", "block"},
                    .env = {"SEQNUM=2", "ACTION=add", "X=/tmp/w1/dev"}, .status = "exit 3"};
  CommandRun first{.kind = "rule",
                   .order = 10,
                   .argv = {"/bin/sh", "-c", "cd '/tmp/w1/dev' || exit 126\necho $MDEV"},
                   .env = {"SEQNUM=1", "MDEV=sda"},
                   .status = "exit 0"};
  m.runs = {second, first};
  const std::string text = FormatManifest(m, "/tmp/w1");
  EXPECT_EQ(text,
            "hotring-manifest 1\n"
            "# the dev root, by path: dir|file PATH UID:GID MODE, node PATH char|block MAJ:MIN "
            "UID:GID MODE, link PATH TARGET\n"
            "dir disk 0:0 0755\n"
            "link disk/root ../sda\n"
            "node sda block 8:0 0:6 0660\n"
            "# modules, in load order\n"
            "module ahci kernel/ahci.ko\n"
            "# commands, in the order they ran: run SEQNUM KIND ARGV..., its environment, its "
            "end\n"
            "run 1 rule \"echo $MDEV\"\n"
            "  env MDEV=sda\n"
            "  env SEQNUM=1\n"
            "  exit 0\n"
            "run 2 exec handler.sh block\n"
            "  env ACTION=add\n"
            "  env SEQNUM=2\n"
            "  env X=<work>/dev\n"
            "  exit 3\n");
}

TEST(Manifest, ParsesBackWhatItFormats) {
  Manifest m;
  m.dev.push_back({.path = "ttyS0", .type = DevEntry::Type::kChar, .major = 4, .minor = 64,
                   .uid = 0, .gid = 5, .mode = 0620});
  m.dev.push_back({.path = "sda", .type = DevEntry::Type::kLink, .target = "disk/boot"});
  m.modules = {"module ahci kernel/ahci.ko"};
  m.runs.push_back({.kind = "exec", .argv = {"h.sh", "tty"}, .env = {"SEQNUM=3", "A=b c"},
                    .status = "exit 3"});
  m.firmware = {{"brcm/fw.bin", "found"}, {"missing file.bin", "missing"}};
  m.problems = {"daemon exit 1"};
  const std::string text = FormatManifest(m, "");
  EXPECT_THAT(text, HasSubstr("\nfirmware brcm/fw.bin found\nfirmware \"missing file.bin\" missing\n"
                              "# problems\n"));
  absl::StatusOr<Manifest> back = ParseManifest(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(FormatManifest(*back, ""), text);
  ASSERT_EQ(back->dev.size(), 2u);
  EXPECT_EQ(back->dev[1].path, "ttyS0");
  EXPECT_EQ(back->dev[1].gid, 5u);
  EXPECT_EQ(back->dev[1].mode, 0620u);
  ASSERT_EQ(back->runs.size(), 1u);
  EXPECT_THAT(back->runs[0].argv, ElementsAre("h.sh", "tty"));
  EXPECT_THAT(back->runs[0].env, ElementsAre("A=b c", "SEQNUM=3"));
  EXPECT_EQ(back->runs[0].status, "exit 3");
  EXPECT_EQ(back->firmware, m.firmware);
  EXPECT_EQ(ParseManifest("x\n").status().message(),
            "1: not a manifest (the first line must be 'hotring-manifest 1')");
  EXPECT_EQ(ParseManifest("hotring-manifest 1\nnode a pipe 1:2 0:0 0600\n").status().message(),
            "2: node type must be char or block");
  EXPECT_EQ(ParseManifest("hotring-manifest 1\n  env A=b\n").status().message(),
            "2: an indented line outside a run");
}

TEST(Manifest, NoFirmwareSectionWithoutRequests) {
  EXPECT_THAT(FormatManifest(Manifest{}, ""), ::testing::Not(HasSubstr("firmware")));
}

TEST(Manifest, ProblemsAreListedLast) {
  Manifest m;
  m.problems = {"daemon exit 1"};
  EXPECT_THAT(FormatManifest(m, ""), HasSubstr("# problems\nproblem \"daemon exit 1\"\n"));
}

TEST(Manifest, ModulesFromDryRunLogStripTheRoot) {
  absl::StatusOr<std::vector<std::string>> lines = ModulesFromDryRunLog(
      "load libata /r/lib/modules/6.1/kernel/ata/libata.ko\n"
      "load ahci /r/lib/modules/6.1/kernel/ata/ahci.ko mobile_lpm_policy=1 x=2\n"
      "install snd sh -c 'true'\n",
      "/r");
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, ElementsAre("module libata lib/modules/6.1/kernel/ata/libata.ko",
                                  "module ahci lib/modules/6.1/kernel/ata/ahci.ko "
                                  "\"mobile_lpm_policy=1 x=2\"",
                                  "install snd \"sh -c 'true'\""));
  EXPECT_EQ(ModulesFromDryRunLog("load\n", "").status().message(), "1: no module name");
  EXPECT_EQ(ModulesFromDryRunLog("\nload x\n", "").status().message(), "2: load without a path");
  EXPECT_THAT(ModulesFromDryRunLog("unload x y\n", "").status().message(),
              HasSubstr("1: unknown line"));
}

TEST(Manifest, RunRecordsRoundTrip) {
  const CommandRun run{.kind = "exec", .order = 42, .argv = {"h", "a b"},
                       .env = {"K=v\nw"}, .status = "signal 9"};
  absl::StatusOr<CommandRun> back = ParseRunRecord(FormatRunRecord(run));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, "exec");
  EXPECT_EQ(back->order, 42u);
  EXPECT_THAT(back->argv, ElementsAre("h", "a b"));
  EXPECT_THAT(back->env, ElementsAre("K=v\nw"));
  EXPECT_EQ(back->status, "signal 9");
  EXPECT_EQ(ParseRunRecord("kind exec\n").status().message(), "run record without status");
  EXPECT_EQ(ParseRunRecord("kind exec\norder x\n").status().message(), "2: order is not a number");
  EXPECT_EQ(ParseRunRecord("nope 1\n").status().message(), "1: unknown keyword nope");
}

}  // namespace
}  // namespace hotring::hotplug::replay

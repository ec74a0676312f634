// End-to-end tests of `settle --for`, the pending report of a settle that times out, the
// coldplug summary line and the timeline (`--record-timeline`, `hotring report`), with the real
// binary, a recording handler and events over a private control socket.
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "hotplug/client/client.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::BackgroundCommand;
using ::hotring::testing::CommandResult;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::HotringBinary;
using ::hotring::testing::MakeTempDir;
using ::hotring::testing::RunHotring;
using ::hotring::testing::TestEvent;
using Recorder = ::hotring::testing::HandlerRecorder;
using RawSender = ::hotring::testing::ControlSender;

DaemonProcess StartDaemon(std::vector<std::string> args) {
  absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start({.args = std::move(args)});
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return std::move(*daemon);
}

std::map<std::string, uint64_t> Status(const DaemonProcess& daemon) {
  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon.Status();
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : std::map<std::string, uint64_t>{};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult Hotring(const std::vector<std::string>& args) {
  absl::StatusOr<CommandResult> r = RunHotring(args);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult{};
}

// The disk's event comes while an unrelated device's handler still runs (it never ends): the
// settle for the disk returns once the disk is handled, and not before.
TEST(SettleForTest, ReturnsWhenTheMatchingDeviceIsHandledWhileAnotherStillRuns) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/slow", {{"HANG", "1"}})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(2, "/devices/pci0/net/eth0", {})));
  ASSERT_TRUE(daemon.WaitForCounters({{"handled", 1}}).ok()) << daemon.Log();

  // Not yet: nothing named vda was handled. The bounded wait ends with exit 1.
  CommandResult early = Hotring({"settle", "--socket", daemon.socket(), "--for", "DEVNAME=vda",
                                 "--timeout", "0.5"});
  EXPECT_EQ(early.exit_code, 1) << early.err;

  absl::StatusOr<BackgroundCommand> waiting = BackgroundCommand::Start(
      {HotringBinary(), "settle", "--socket", daemon.socket(), "--for", "DEVNAME=/dev/vda",
       "--for", "DEVPATH=/devices/pci0/net/eth0", "--timeout", "60"});
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  ASSERT_TRUE(sender.SendEvent(
      TestEvent(3, "/devices/pci0/virtio1/block/vda", {{"DEVNAME", "vda"}})));
  absl::StatusOr<CommandResult> settled = waiting->Wait(absl::Seconds(60));
  ASSERT_TRUE(settled.ok()) << settled.status();
  EXPECT_EQ(settled->exit_code, 0) << settled->err;
  // The slow device is still running: this settle did not wait for everything.
  auto status = Status(daemon);
  EXPECT_EQ(status["running"], 1u);
  EXPECT_EQ(status["handled"], 2u);
  const std::vector<testing::HandlerRun> runs = recorder.RunsUnder("/devices/pci0/virtio1");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].end, -1);

  // Already handled: returns at once, also for a plain property.
  EXPECT_EQ(Hotring({"settle", "--socket", daemon.socket(), "--for", "DEVNAME=vda", "--timeout",
                     "5"})
                .exit_code,
            0);
  EXPECT_EQ(Hotring({"settle", "--socket", daemon.socket(), "--for", "SUBSYSTEM=test",
                     "--timeout", "5"})
                .exit_code,
            0);
  // Bad conditions are a clear error.
  CommandResult bad = Hotring({"settle", "--socket", daemon.socket(), "--for", "vda"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("KEY=VALUE"), std::string::npos) << bad.err;
  daemon.Kill();
}

// A timed-out settle says what is pending and where: running (with the handler's pid and
// program), queued behind its parent, held behind a SEQNUM gap.
TEST(SettleForTest, TimeoutPrintsEachPendingEventAndWhereItIs) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1",
                                      "--reorder-timeout", "600"});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/hub", {{"HANG", "1"}})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(2, "/devices/hub/port1", {})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(4, "/devices/late", {})));  // 3 never comes
  const auto in = daemon.WaitForCounters({{"received", 3}, {"running", 1}});
  ASSERT_TRUE(in.ok()) << in.status() << "\n" << daemon.Log();
  CommandResult settle = Hotring({"settle", "--socket", daemon.socket(), "--timeout", "0.3"});
  EXPECT_EQ(settle.exit_code, 1);
  const std::string& err = settle.err;
  EXPECT_NE(err.find("timeout after 300ms: events still pending"), std::string::npos) << err;
  EXPECT_NE(err.find("SEQNUM 1 /devices/hub running for "), std::string::npos) << err;
  EXPECT_NE(err.find(absl::StrCat(": exec pid ")), std::string::npos) << err;
  EXPECT_NE(err.find(absl::StrCat(recorder.handler(), " test")), std::string::npos) << err;
  EXPECT_NE(err.find("SEQNUM 2 /devices/hub/port1 queued for "), std::string::npos) << err;
  EXPECT_NE(err.find("behind SEQNUM 1 /devices/hub (parent, running)"), std::string::npos) << err;
  EXPECT_NE(err.find("SEQNUM 4 /devices/late held for "), std::string::npos) << err;
  EXPECT_NE(err.find("behind a gap: SEQNUM 3 not received"), std::string::npos) << err;
  EXPECT_NE(err.find("pending: 1 held, 1 queued, 1 running"), std::string::npos) << err;
  // `control pending` answers the same.
  CommandResult pending = Hotring({"control", "pending", "--socket", daemon.socket()});
  EXPECT_EQ(pending.exit_code, 0);
  EXPECT_NE(pending.out.find("event 4 /devices/late held"), std::string::npos) << pending.out;
  daemon.Kill();
}

// An `add` of block device /devices/virtual/block/DEVPATH named NAME, with more variables.
hotplug::EnvVars BlockAdd(uint64_t seqnum, const std::string& devpath, const std::string& name,
                          hotplug::EnvVars extra = {}) {
  hotplug::EnvVars env = {{"ACTION", "add"},
                          {"DEVPATH", "/devices/virtual/block/" + devpath},
                          {"SUBSYSTEM", "block"},
                          {"SEQNUM", absl::StrCat(seqnum)},
                          {"DEVNAME", name}};
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Writes a minimal ext4 superblock (what the prober reads) into `path`.
void WriteExtImage(const std::string& path, absl::string_view label, bool malformed) {
  std::string bytes(4096, '\0');
  bytes[1024 + 0x38] = '\x53';
  bytes[1024 + 0x39] = '\xEF';
  bytes[1024 + 0x60] = '\x40';  // extents: ext4
  if (malformed) bytes[1024 + 0x18] = 40;  // a 2^50-byte block
  for (int i = 0; i < 16; ++i) bytes[1024 + 0x68 + i] = static_cast<char>(0x10 + i);
  bytes.replace(1024 + 0x78, label.size(), label.data(), label.size());
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(SettleForTest, LabelAndUuidFromTheSuperblockOrFromProperties) {
  absl::StatusOr<std::string> dev = MakeTempDir("hotring_settle_dev");
  ASSERT_TRUE(dev.ok());
  WriteExtImage(*dev + "/vdb", "myroot", false);
  WriteExtImage(*dev + "/vdc", "broken", true);
  std::ofstream(*dev + "/vdd") << std::string(8192, '\0');  // no filesystem the prober knows
  DaemonProcess daemon =
      StartDaemon({"--expect-seqnum", "1", "--probe-dev-root", *dev});
  RawSender sender(daemon.socket());
  auto block = [](uint64_t seqnum, std::string name, hotplug::EnvVars extra = {}) {
    return BlockAdd(seqnum, name, name, std::move(extra));
  };
  absl::StatusOr<BackgroundCommand> waiting = BackgroundCommand::Start(
      {HotringBinary(), "settle", "--socket", daemon.socket(), "--for", "LABEL=myroot",
       "--timeout", "60"});
  ASSERT_TRUE(waiting.ok());
  ASSERT_TRUE(sender.SendEvent(block(1, "vdc")));
  ASSERT_TRUE(sender.SendEvent(block(2, "vdb")));
  ASSERT_TRUE(sender.SendEvent(block(3, "vdd", {{"ID_FS_LABEL", "tagged"}})));
  absl::StatusOr<CommandResult> settled = waiting->Wait(absl::Seconds(60));
  ASSERT_TRUE(settled.ok());
  EXPECT_EQ(settled->exit_code, 0) << settled->err << daemon.Log();
  ASSERT_TRUE(daemon.Settle().ok());
  EXPECT_EQ(Hotring({"settle", "--socket", daemon.socket(), "--for",
                     "UUID=10111213-1415-1617-1819-1a1b1c1d1e1f", "--timeout", "5"})
                .exit_code,
            0);
  EXPECT_EQ(Hotring({"settle", "--socket", daemon.socket(), "--for", "LABEL=tagged",
                     "--timeout", "5"})
                .exit_code,
            0);
  // The reply names the device that met each condition: what root=LABEL=... mounts.
  absl::StatusOr<std::vector<std::string>> devices = SettleForDevices(
      daemon.socket(), {"LABEL=myroot", "LABEL=tagged", "SUBSYSTEM=block"}, absl::Seconds(5));
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(*devices, (std::vector<std::string>{"vdb", "vdd", "vdc"}));
  EXPECT_EQ(Hotring({"settle", "--socket", daemon.socket(), "--for", "LABEL=broken",
                     "--timeout", "0.3"})
                .exit_code,
            1);
  // The malformed superblock was counted once (a device is probed once per handling).
  EXPECT_EQ(Status(daemon)["probe_errors"], 1u) << daemon.Log();
  EXPECT_TRUE(daemon.Stop().ok());
}

// A disk image with an MBR (disk identifier 0x1a2b3c4d) and partition 1 at sector 1.
void WriteMbrImage(const std::string& path) {
  std::string bytes(8192, '\0');
  bytes.replace(0x1b8, 4, "\x4d\x3c\x2b\x1a", 4);
  bytes[0x1be + 4] = '\x83';        // Linux
  bytes[0x1be + 8] = 1;             // first sector
  bytes[0x1be + 12] = 8;            // 8 sectors
  bytes[510] = '\x55';
  bytes[511] = '\xaa';
  std::ofstream(path, std::ios::binary) << bytes;
}

// root=PARTUUID= and PARTLABEL=: from the parent disk's table (read once the partition is
// handled), from udev's properties, or from the kernel's PARTNAME.
TEST(SettleForTest, PartitionUuidAndLabelFromTheDisksTableOrFromProperties) {
  absl::StatusOr<std::string> dev = MakeTempDir("hotring_settle_part");
  ASSERT_TRUE(dev.ok());
  WriteMbrImage(*dev + "/vde");
  std::ofstream(*dev + "/vde1") << std::string(4096, '\0');
  std::ofstream(*dev + "/vdf") << std::string(4096, '\0');  // no table
  std::ofstream(*dev + "/vdf1") << std::string(4096, '\0');
  DaemonProcess daemon = StartDaemon({"--expect-seqnum", "1", "--probe-dev-root", *dev});
  RawSender sender(daemon.socket());
  absl::StatusOr<BackgroundCommand> waiting = BackgroundCommand::Start(
      {HotringBinary(), "settle", "--socket", daemon.socket(), "--for",
       "PARTUUID=1A2B3C4D-01", "--timeout", "60"});
  ASSERT_TRUE(waiting.ok());
  ASSERT_TRUE(sender.SendEvent(BlockAdd(1, "vdf", "vdf", {{"DEVTYPE", "disk"}})));
  ASSERT_TRUE(sender.SendEvent(
      BlockAdd(2, "vdf/vdf1", "vdf1", {{"DEVTYPE", "partition"}, {"PARTN", "1"}, {"PARTNAME", "boot"}})));
  ASSERT_TRUE(sender.SendEvent(BlockAdd(3, "vde", "vde", {{"DEVTYPE", "disk"}})));
  ASSERT_TRUE(sender.SendEvent(
      BlockAdd(4, "vde/vde1", "vde1", {{"DEVTYPE", "partition"}, {"PARTN", "1"}})));
  ASSERT_TRUE(sender.SendEvent(BlockAdd(5, "vdg", "vdg",
                                     {{"DEVTYPE", "partition"}, {"PARTN", "2"},
                                      {"ID_PART_ENTRY_UUID", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"},
                                      {"ID_PART_ENTRY_NAME", "data"}})));
  absl::StatusOr<CommandResult> settled = waiting->Wait(absl::Seconds(60));
  ASSERT_TRUE(settled.ok());
  EXPECT_EQ(settled->exit_code, 0) << settled->err << daemon.Log();
  ASSERT_TRUE(daemon.Settle().ok());
  absl::StatusOr<std::vector<std::string>> devices = SettleForDevices(
      daemon.socket(),
      {"PARTUUID=1a2b3c4d-01", "PARTLABEL=boot", "PARTLABEL=data",
       "PARTUUID=AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE"},
      absl::Seconds(5));
  ASSERT_TRUE(devices.ok()) << devices.status() << daemon.Log();
  EXPECT_EQ(*devices, (std::vector<std::string>{"vde1", "vdf1", "vdg", "vdg"}));
  // The disk itself is no partition, and the table has no partition 2.
  EXPECT_EQ(Hotring({"settle", "--socket", daemon.socket(), "--for", "PARTUUID=1a2b3c4d-02",
                     "--timeout", "0.3"})
                .exit_code,
            1);
  EXPECT_EQ(Status(daemon)["probe_errors"], 0u) << daemon.Log();
  EXPECT_TRUE(daemon.Stop().ok());
}

// The timeline file has a record per transition; `report` reads it; the coldplug line is
// written once, when the first burst settles.
TEST(TimelineTest, FileHasEveryTransitionAndTheReportReadsIt) {
  absl::StatusOr<std::string> dir = MakeTempDir("hotring_timeline");
  ASSERT_TRUE(dir.ok());
  const std::string file = *dir + "/timeline";
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1",
                                      "--reorder-timeout", "0.2", "--record-timeline", file});
  RawSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(TestEvent(1, "/devices/a", {{"SLEEP_MS", "50"}})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(2, "/devices/a/b", {})));
  ASSERT_TRUE(sender.SendEvent(TestEvent(4, "/devices/c", {{"EXIT", "1"}})));  // 3 missing
  ASSERT_TRUE(daemon.Settle().ok()) << daemon.Log();
  // Before stopping: the running daemon's kept lines make the same report.
  CommandResult live = Hotring({"report", "--socket", daemon.socket()});
  EXPECT_EQ(live.exit_code, 0) << live.err;
  EXPECT_NE(live.out.find("3 events in"), std::string::npos) << live.out;
  ASSERT_TRUE(daemon.Stop().ok());

  const std::string text = ReadFile(file);
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "# hotring timeline 1");
  std::map<char, int> kinds;
  for (const std::string& line : lines) ++kinds[line[0]];
  EXPECT_EQ(kinds['R'], 3);
  EXPECT_EQ(kinds['L'], 3);
  EXPECT_EQ(kinds['S'], 3);
  EXPECT_EQ(kinds['H'], 3);
  EXPECT_EQ(kinds['G'], 1);
  auto has = [&](absl::string_view prefix, absl::string_view suffix) {
    for (const std::string& line : lines) {
      if (absl::StartsWith(line, prefix) && absl::EndsWith(line, suffix)) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("R ", " 1 add test /devices/a")) << text;
  EXPECT_TRUE(has("L ", " 2 2 /devices/a/b")) << text;
  EXPECT_TRUE(has("G ", " 3 3 timeout")) << text;
  EXPECT_TRUE(has("H ", " 3 failed")) << text;  // SEQNUM 4 was released third

  CommandResult report =
      Hotring({"report", "--from", file, "--svg", *dir + "/timeline.svg", "--top", "5"});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("3 events in"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("2 handled, 1 failed"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("waited for SEQNUM 1 add /devices/a (test)"), std::string::npos)
      << report.out;
  EXPECT_NE(report.out.find("SEQNUM 3-3 never arrived"), std::string::npos) << report.out;
  const std::string svg = ReadFile(*dir + "/timeline.svg");
  EXPECT_NE(svg.find("<svg "), std::string::npos);
  EXPECT_NE(svg.find(">2 add /devices/a/b<"), std::string::npos) << svg.substr(0, 2000);

  // One summary line at the default level, with the failure counted.
  const std::string log = daemon.Log();
  EXPECT_NE(log.find("coldplug: 3 events in "), std::string::npos) << log;
  EXPECT_NE(log.find("1 failed or timed out"), std::string::npos) << log;
}

// A running daemon's timeline comes in pages (one datagram each): every event arrives.
TEST(TimelineTest, ReportFromARunningDaemonReadsEveryPage) {
  DaemonProcess daemon = StartDaemon({"--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  for (uint64_t i = 1; i <= 300; ++i) {
    ASSERT_TRUE(sender.SendEvent(TestEvent(i, absl::StrCat("/devices/pci0000:00/dev", i % 7,
                                                            "/child", i))));
  }
  ASSERT_TRUE(daemon.Settle().ok());
  CommandResult live = Hotring({"report", "--socket", daemon.socket(), "--top", "3"});
  EXPECT_EQ(live.exit_code, 0) << live.err;
  EXPECT_NE(live.out.find("300 events in"), std::string::npos) << live.out.substr(0, 500);
  EXPECT_NE(live.out.find("300 handled, 0 failed"), std::string::npos) << live.out.substr(0, 500);
  EXPECT_EQ(live.out.find("malformed"), std::string::npos) << live.out.substr(0, 500);
  EXPECT_EQ(Status(daemon)["timeline_records"], 900u);  // one R+L, one S, one H each
}

// At the default level a burst of failing events writes a few lines, not one per event.
TEST(TimelineTest, FailuresAreAggregatedAtTheDefaultLogLevel) {
  Recorder recorder;
  DaemonProcess daemon = StartDaemon({"--exec", recorder.handler(), "--expect-seqnum", "1"});
  RawSender sender(daemon.socket());
  for (uint64_t i = 1; i <= 40; ++i) {
    ASSERT_TRUE(sender.SendEvent(TestEvent(i, absl::StrCat("/devices/f", i), {{"EXIT", "2"}})));
  }
  ASSERT_TRUE(daemon.Settle(absl::Seconds(60)).ok());
  const std::string log = daemon.Log();
  std::vector<std::string> lines = absl::StrSplit(log, '\n', absl::SkipEmpty());
  EXPECT_LE(lines.size(), 6u) << log;  // ready, 3 failures, coldplug summary
  EXPECT_NE(log.find("coldplug: 40 events in"), std::string::npos) << log;
  EXPECT_NE(log.find("40 failed or timed out"), std::string::npos) << log;
  EXPECT_EQ(Status(daemon)["failed"], 40u);
}

}  // namespace
}  // namespace hotring::hotplug

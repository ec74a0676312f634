// The coldplug bench's bookkeeping, without the real /sys: trigger walks a fake sysfs tree, and
// the kernel's part (one uevent per write, the SEQNUM counter) is played by injecting uevents
// in a private network namespace. Asserts that every write, uevent and handler run is accounted
// for in every phase; speed is the bench's business, not this test's.
#include "hotplug/bench/bench_coldplug.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testing/daemon_fixture.h"
#include "testing/fake_sysfs.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::FakeSysfs;

constexpr uint64_t kFirstSeqnum = 1'000'000'000'000;  // far above the host's real ones
constexpr char kBus[] = "hrcoldplugtest";
constexpr int kBusDevices = 6;
constexpr int kClassDevices = 3;

uint64_t Counter(const std::map<std::string, uint64_t>& status, const std::string& key) {
  auto it = status.find(key);
  return it == status.end() ? 0 : it->second;
}

// A handler that appends "SEQNUM ACTION DEVPATH SUBSYSTEM-argument" to record.log beside it.
std::string WriteRecordingHandler(const std::string& dir) {
  const std::string path = dir + "/handler";
  std::ofstream(path) << "#!/bin/sh\n"
                      << "printf '%s %s %s %s\\n' \"${SEQNUM:--}\" \"$ACTION\" \"$DEVPATH\" "
                         "\"$1\" >> "
                      << dir << "/record.log\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

struct RecordedRun {
  uint64_t seqnum = 0;
  std::string action;
  std::string devpath;
  std::string subsystem;
};

std::vector<RecordedRun> ReadRecord(const std::string& path) {
  std::vector<RecordedRun> runs;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() != 4) continue;
    RecordedRun r;
    if (!absl::SimpleAtoi(f[0], &r.seqnum)) continue;  // a real device's event without SEQNUM
    r.action = f[1];
    r.devpath = f[2];
    r.subsystem = f[3];
    runs.push_back(r);
  }
  return runs;
}

TEST(BenchColdplugTest, EveryWriteUeventAndHandlerRunIsAccountedFor) {
  ASSERT_TRUE(testing::EnterPrivateNetworkNamespace().ok());
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok()) << sys.status();
  for (int i = 0; i < kBusDevices; ++i) {
    ASSERT_TRUE(sys->AddDevice({.devpath = absl::StrCat("/devices/hrcoldplug0/dev", i),
                                .subsystem = kBus,
                                .kind = FakeSysfs::Kind::kBus,
                                .uevent = {{"MODALIAS", absl::StrCat("hrtest:", i)}}})
                    .ok());
  }
  for (int i = 0; i < kClassDevices; ++i) {
    // Nested under a bus device: parents before children.
    ASSERT_TRUE(sys->AddDevice({.devpath = absl::StrCat("/devices/hrcoldplug0/dev0/port", i),
                                .subsystem = "hrcoldplugclass",
                                .kind = FakeSysfs::Kind::kClass,
                                .uevent = {{"DEVNAME", absl::StrCat("hrport", i)}}})
                    .ok());
  }
  ASSERT_TRUE(sys->AddDriver(kBus, "hrdriver").ok());
  ASSERT_TRUE(sys->AddModule("hrcoldplug_module").ok());
  // The bus, its driver, the module, then the devices.
  const size_t objects = 3 + kBusDevices + kClassDevices;
  ASSERT_TRUE(sys->WriteFile("kernel/uevent_seqnum", absl::StrCat(kFirstSeqnum, "\n")).ok());

  absl::StatusOr<std::string> dir = testing::MakeTempDir("hotring_coldplug");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string handler = WriteRecordingHandler(*dir);

  absl::StatusOr<testing::UeventInjector> injector = testing::UeventInjector::Create(1);
  ASSERT_TRUE(injector.ok()) << injector.status();

  // The kernel's part: a uevent for each write, numbered on from the SEQNUM file.
  uint64_t seqnum = kFirstSeqnum;
  std::set<std::string> devpaths;
  int write_passes = 0;
  ColdplugBenchOptions options;
  options.sysfs_root = sys->root();
  options.program = handler;
  options.runs = 2;
  options.daemon_binary = testing::HotringBinary();
  options.daemon_args = {"--netlink-trust-userspace"};
  options.trust_userspace = true;
  options.after_writes = [&](const TriggerReport& report) -> absl::Status {
    ++write_passes;
    for (const std::string& path : report.written) {
      std::string devpath = path.substr(sys->root().size());
      devpath.resize(devpath.size() - std::string("/uevent").size());
      devpaths.insert(devpath);
      absl::StatusOr<Event> event = testing::MakeUevent("change", devpath, kBus, ++seqnum);
      if (!event.ok()) return event.status();
      if (absl::Status sent = injector->Send(*event); !sent.ok()) return sent;
    }
    return sys->WriteFile("kernel/uevent_seqnum", absl::StrCat(seqnum, "\n"));
  };

  absl::StatusOr<ColdplugBenchReport> report = RunColdplugBench(options);
  ASSERT_TRUE(report.ok()) << report.status();

  EXPECT_EQ(write_passes, 2 * 4);
  EXPECT_EQ(devpaths.size(), objects);
  for (const std::string& devpath : devpaths) {
    if (!absl::StartsWith(devpath, "/devices/")) continue;
    absl::StatusOr<std::string> written = sys->ReadUevent(devpath);
    ASSERT_TRUE(written.ok()) << devpath;
    EXPECT_EQ(*written, "change") << devpath;
  }

  ASSERT_EQ(report->runs.size(), 2u);
  for (const std::vector<ColdplugMeasurement>& run : report->runs) {
    ASSERT_EQ(run.size(), 4u);
    for (size_t i = 0; i < run.size(); ++i) {
      const ColdplugMeasurement& m = run[i];
      SCOPED_TRACE(std::string(ColdplugPhaseName(m.phase)));
      EXPECT_EQ(m.phase, kColdplugPhases[i]);
      EXPECT_EQ(m.triggered, objects);
      EXPECT_EQ(m.failed, 0u) << m.trigger_errors;
      EXPECT_EQ(m.vanished, 0u);
      // Everything injected was seen; real devices' uevents reach this namespace too, so more
      // is possible (when something triggers on the host at the same time).
      EXPECT_GE(m.uevents, objects);
      EXPECT_GE(m.datagrams, m.uevents);
      EXPECT_LE(m.walk, m.total);
      EXPECT_LE(m.writes, m.settled);
      EXPECT_LE(m.settled, m.total);
      switch (m.phase) {
        case ColdplugPhase::kTriggerOnly:
          EXPECT_EQ(m.settled, m.writes);
          EXPECT_FALSE(m.daemon_cpu.has_value());
          break;
        case ColdplugPhase::kDaemonNoHandler:
        case ColdplugPhase::kDaemonExec: {
          const auto& s = m.daemon_status;
          // Every uevent counted was taken off the daemon's socket and handled, in order.
          EXPECT_GE(Counter(s, "netlink_received"), m.uevents);
          EXPECT_EQ(Counter(s, "handled"), Counter(s, "netlink_received"));
          EXPECT_EQ(m.handled, Counter(s, "handled"));
          EXPECT_EQ(m.handler_failures, 0u);
          EXPECT_EQ(Counter(s, "held") + Counter(s, "queued") + Counter(s, "running"), 0u);
          EXPECT_EQ(Counter(s, "missing_seqnums"), 0u);
          EXPECT_EQ(Counter(s, "reorder_timeouts"), 0u);
          EXPECT_EQ(Counter(s, "netlink_overruns"), 0u);
          EXPECT_EQ(Counter(s, "dropped_not_kernel"), 0u);
          ASSERT_TRUE(m.daemon_cpu.has_value());
          EXPECT_GT(*m.daemon_cpu, absl::ZeroDuration());
          ASSERT_TRUE(m.daemon_peak_rss_kib.has_value());
          EXPECT_GT(*m.daemon_peak_rss_kib, 0);
          break;
        }
        case ColdplugPhase::kSerialBaseline:
          EXPECT_EQ(m.handled, m.uevents);
          EXPECT_EQ(m.handler_failures, 0u);
          EXPECT_FALSE(m.daemon_cpu.has_value());
          break;
      }
    }
  }

  // The handler ran once per injected uevent in the --exec and serial phases, and never in
  // the others: each of our objects twice per run, each SEQNUM at most once.
  std::map<std::string, int> runs_per_devpath;
  std::set<uint64_t> seqnums;
  for (const RecordedRun& r : ReadRecord(*dir + "/record.log")) {
    if (r.seqnum <= kFirstSeqnum) continue;  // a real device's uevent
    EXPECT_TRUE(seqnums.insert(r.seqnum).second) << "SEQNUM " << r.seqnum << " ran twice";
    EXPECT_EQ(r.action, "change");
    EXPECT_EQ(r.subsystem, kBus);
    EXPECT_TRUE(devpaths.contains(r.devpath)) << r.devpath;
    ++runs_per_devpath[r.devpath];
  }
  EXPECT_EQ(seqnums.size(), objects * 2 * 2);
  for (const std::string& devpath : devpaths) EXPECT_EQ(runs_per_devpath[devpath], 4) << devpath;

  const std::string json = FormatColdplugReport(*report, [&] {
    ColdplugBenchOptions o = options;
    o.json = true;
    return o;
  }());
  EXPECT_TRUE(absl::StrContains(json, "\"runs\": 2")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"gap_runs\": 0")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"short_runs\": 0")) << json;
}

TEST(BenchColdplugTest, OnlyChangeIsWrittenIntoARealSysfs) {
  // Only the checks run here: nothing is walked or written.
  EXPECT_TRUE(CheckColdplugAction("/sys", "change").ok());
  EXPECT_EQ(CheckColdplugAction("/sys", "add").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckColdplugAction("/sys/devices", "remove").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckColdplugAction("/nonexistent-hotring-root", "add").code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
  ASSERT_TRUE(sys.ok());
  EXPECT_TRUE(CheckColdplugAction(sys->root(), "add").ok());

  EXPECT_EQ(ParseColdplugBenchArgs({"--action", "add"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseColdplugBenchArgs({"--action", "bogus", "--sysfs-root", sys->root()})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseColdplugBenchArgs({"--runs", "0"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseColdplugBenchArgs({"--exec", "true"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::optional<ColdplugBenchOptions>> parsed_args = ParseColdplugBenchArgs(
      {"--sysfs-root", sys->root(), "--action=add", "--runs", "3", "--exec", "/bin/true",
       "--children-max", "4", "--timeout", "7", "--json"});
  ASSERT_TRUE(parsed_args.ok()) << parsed_args.status();
  ASSERT_TRUE(parsed_args->has_value());
  std::optional<ColdplugBenchOptions>& parsed = *parsed_args;
  EXPECT_EQ(parsed->sysfs_root, sys->root());
  EXPECT_EQ(parsed->action, "add");
  EXPECT_EQ(parsed->runs, 3);
  EXPECT_EQ(parsed->program, "/bin/true");
  EXPECT_EQ(parsed->children_max, 4u);
  EXPECT_EQ(parsed->settle_timeout, absl::Seconds(7));
  EXPECT_TRUE(parsed->json);
}

}  // namespace
}  // namespace hotring::hotplug

// Measures rule matching and planning per event against a 40-line mdev.conf typical of a
// board: `bazel run -c opt //hotplug/bench:plan_bench`. The goal is <= 2 us per event.
#include <time.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hotplug/rules/engine.h"
#include "hotplug/rules/rule_set.h"

namespace hotring::hotplug::rules {
namespace {

constexpr char kBoardConf[] = R"(# a typical embedded board's mdev.conf
SUBSYSTEM=net;.* 0:0 600 !
null 0:0 666
zero 0:0 666
full 0:0 666
random 0:0 444
urandom 0:0 444
hwrandom 0:0 660
grsec 0:0 660
kmem 0:9 640
mem 0:9 640
port 0:9 640
console 0:5 600
ptmx 0:5 666
pty.* 0:5 660
tty 0:5 666
tty[0-9]* 0:5 660
vcsa*[0-9]* 0:5 660
ttyS[0-9]* 0:20 660
ttyUSB[0-9]* 0:20 660 >usb/
ttyACM[0-9]* 0:20 660
fuse 0:0 666
rtc0 0:0 644 >rtc
rtc[0-9]* 0:0 644
watchdog[0-9]* 0:0 600
loop[0-9]+ 0:6 660 >loop/
sd[a-z].* 0:6 660 */lib/mdev/usbdisk_link
mmcblk([0-9]+) 0:6 660 >disk/mmc/%1/0
mmcblk([0-9]+)p([0-9]+) 0:6 660 >disk/mmc/%1/%2
md[0-9]* 0:6 660
ram([0-9]*) 0:6 660 >rd/%1
sr[0-9]* 0:24 660 @ln -sf $MDEV cdrom
input/event[0-9]+ 0:13 640
input/mice 0:13 640
input/mouse[0-9]+ 0:13 640
snd/.* 0:29 660
dri/.* 0:44 660
video[0-9]+ 0:44 660
i2c-([0-9]+) 0:0 600 =i2c/%1
$MODALIAS=.* 0:0 660 @modprobe -b "$MODALIAS"
)";

struct Sample {
  std::vector<std::pair<std::string, std::string>> env;
  std::string name;
  std::string devpath;
  std::string subsystem;
  Device device;
};

// Thread CPU time: the machine may be shared, and time spent descheduled is not the rules' cost.
int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int Main() {
  absl::StatusOr<RuleSet> rules =
      ParseRules(kBoardConf, "board.conf", UserDb::FromText("root:x:0:0::/:/bin/sh\n", ""));
  if (!rules.ok()) {
    std::fprintf(stderr, "%s\n", rules.status().ToString().c_str());
    return 1;
  }
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"block", "sda"},          {"block", "sda1"},        {"block", "mmcblk0p2"},
      {"tty", "ttyS1"},          {"tty", "tty12"},         {"input", "input/event3"},
      {"sound", "snd/pcmC0D0p"}, {"net", "eth0"},          {"mem", "null"},
      {"i2c-dev", "i2c-3"},      {"platform", "soc:gpio"}, {"usb", "bus/usb/001/002"},
  };
  std::vector<Sample> samples(kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    Sample& s = samples[i];
    s.subsystem = kinds[i].first;
    s.name = kinds[i].second;
    s.devpath = absl::StrCat("/devices/platform/soc/x", i, "/", s.subsystem, "/", s.name);
    s.env = {{"ACTION", "add"}, {"DEVPATH", s.devpath}, {"SUBSYSTEM", s.subsystem},
             {"DEVNAME", s.name}, {"MAJOR", "8"}, {"MINOR", absl::StrCat(i)}, {"SEQNUM", "1"}};
    if (s.subsystem == "platform") s.env.push_back({"MODALIAS", "of:NgpioT(null)Cgpio"});
    s.device.action = DeviceAction::kAdd;
    s.device.devpath = s.devpath;
    s.device.subsystem = s.subsystem;
    s.device.name = s.name;
    s.device.number = DevNumber{8, static_cast<uint32_t>(i)};
    s.device.env = s.env;
  }
  constexpr int kEvents = 240000;
  uint64_t sink = 0;
  for (int round = 0; round < 3; ++round) {
    const int64_t t0 = NowNs();
    for (int i = 0; i < kEvents; ++i) {
      rules->Match(samples[i % samples.size()].device,
                   [&](const Rule& rule, absl::string_view, const MatchGroups&) {
                     sink += static_cast<uint64_t>(rule.line);
                   });
    }
    const int64_t t1 = NowNs();
    for (int i = 0; i < kEvents; ++i) {
      EventPlan plan = PlanEvent(*rules, samples[i % samples.size()].device);
      sink += plan.nodes.size() + plan.commands.size();
    }
    const int64_t t2 = NowNs();
    std::printf("round %d: match %.3f us/event, plan %.3f us/event of CPU (%zu rules, %zu "
                "devices)\n",
                round, static_cast<double>(t1 - t0) / kEvents / 1000.0,
                static_cast<double>(t2 - t1) / kEvents / 1000.0, rules->rules().size(),
                samples.size());
  }
  return sink == 0 ? 1 : 0;
}

}  // namespace
}  // namespace hotring::hotplug::rules

int main() { return hotring::hotplug::rules::Main(); }

// End to end: the real `hotring daemon` with its modules stage over a fake module tree, loading
// nothing (--modules-dry-run-log records what would be loaded), events with MODALIAS sent over
// the control socket. Asserts which modules were "loaded", in which order, with which options,
// and that settle returned only once they were.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "hotplug/event_parser.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"

namespace hotring::hotplug::modules {
namespace {

using ::hotring::testing::ControlSender;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::MakeTempDir;

constexpr char kNetAlias[] = "pci:v00001234d00005678sv00000000sd00000000bc02sc00i00";
constexpr char kUsbAlias[] = "usb:v1234p0001d0100dc00dsc00dp00ic03isc01ip01in00";

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t IndexOf(const std::vector<std::string>& lines, const std::string& prefix) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(prefix, 0) == 0) return i;
  }
  return lines.size();
}

EnvVars Uevent(uint64_t seqnum, const std::string& action, const std::string& devpath,
               const std::string& modalias) {
  EnvVars env = {{"ACTION", action},
                 {"DEVPATH", devpath},
                 {"SUBSYSTEM", "test"},
                 {"SEQNUM", absl::StrCat(seqnum)}};
  if (!modalias.empty()) env.emplace_back("MODALIAS", modalias);
  return env;
}

FakeModulesTree MakeTree() {
  absl::StatusOr<FakeModulesTree> made = FakeModulesTree::Create("6.1.0-hotring-e2e");
  EXPECT_TRUE(made.ok()) << made.status();
  FakeModulesTree tree = std::move(*made);
  tree.AddModule({.path = "kernel/lib/crc.ko"});
  tree.AddModule({.path = "kernel/lib/core-util.ko", .deps = {"kernel/lib/crc.ko"}});
  tree.AddModule({.path = "kernel/drivers/net/foo-net.ko",
                  .deps = {"kernel/lib/core-util.ko", "kernel/lib/crc.ko"},
                  .aliases = {"pci:v00001234d00005678sv*sd*bc*sc*i*"}});
  tree.AddModule({.path = "kernel/drivers/hid/usbhid.ko", .aliases = {"usb:v*p*d*dc*dsc*dp*ic03isc01ip01in*"}});
  tree.AddModule({.path = "kernel/drivers/misc/noisy.ko", .aliases = {"acpi:NOISY0001:*"}});
  tree.AddModule({.path = "kernel/drivers/misc/inst.ko", .aliases = {"acpi:INST0001:*"}});
  tree.AddBuiltin({.path = "kernel/drivers/rtc/rtc-cmos.ko", .aliases = {"platform:rtc_cmos"}});
  tree.AddConfig("/etc/modprobe.d", "test.conf",
                 "options usbhid mousepoll=4 quirks=0x1\n"
                 "blacklist noisy\n"
                 "install inst /bin/true\n");
  EXPECT_TRUE(tree.Write().ok());
  return tree;
}

class ModulesDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir = MakeTempDir("hotring_modules_e2e");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    log_ = dir_ + "/loaded.log";
  }

  DaemonProcess Start(const FakeModulesTree& tree, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--modules-root",        tree.root(),
                                     "--kernel-version",      tree.version(),
                                     "--modules-dry-run-log", log_,
                                     "--log-level",           "info"};
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<DaemonProcess> daemon =
        DaemonProcess::Start({.args = std::move(args), .modules = true});
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return std::move(*daemon);
  }

  std::string dir_;
  std::string log_;
};

TEST_F(ModulesDaemonTest, LoadsWhatModaliasesNeedInOrderWithOptionsBeforeSettleReturns) {
  const FakeModulesTree tree = MakeTree();
  // Every dry-run load takes 200 ms: foo-net's chain of three takes 600 ms, which a settle that
  // did not wait for loads would not.
  DaemonProcess daemon = Start(tree, {"--kernel-cmdline", "quiet crc.level=3",
                                      "--modules-dry-run-delay", "0.2"});
  ControlSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(Uevent(1, "add", "/devices/pci0/net0", kNetAlias)));
  ASSERT_TRUE(sender.SendEvent(Uevent(2, "add", "/devices/usb1/1-1:1.0", kUsbAlias)));
  ASSERT_TRUE(sender.SendEvent(Uevent(3, "add", "/devices/acpi/NOISY0001:00", "acpi:NOISY0001:")));
  ASSERT_TRUE(sender.SendEvent(Uevent(4, "add", "/devices/acpi/NONE0001:00", "acpi:NONE0001:")));
  // Not an add: nothing to load.
  ASSERT_TRUE(sender.SendEvent(Uevent(5, "change", "/devices/pci0/net9", kNetAlias)));
  // A second device of the same kind, on another devpath: runs alongside the first, joins its
  // loads, loads nothing twice.
  ASSERT_TRUE(sender.SendEvent(Uevent(6, "add", "/devices/pci0/net1", kNetAlias)));
  ASSERT_TRUE(sender.SendEvent(Uevent(7, "add", "/devices/platform/rtc_cmos", "platform:rtc_cmos")));
  ASSERT_TRUE(sender.SendEvent(Uevent(8, "add", "/devices/acpi/INST0001:00", "acpi:INST0001:")));
  ASSERT_TRUE(sender.SendEvent(Uevent(9, "add", "/devices/virtual/none", "")));
  ASSERT_TRUE(daemon.Settle().ok());

  // Read at once: everything must be there already.
  const std::vector<std::string> lines = ReadLines(log_);
  const std::string dir = tree.modules_dir();
  const std::vector<std::string> expected = {
      // Options exactly as finit_module gets them: kmod's string ends in a space.
      absl::StrCat("load crc ", dir, "/kernel/lib/crc.ko level=3 "),
      absl::StrCat("load core_util ", dir, "/kernel/lib/core-util.ko"),
      absl::StrCat("load foo_net ", dir, "/kernel/drivers/net/foo-net.ko"),
      absl::StrCat("load usbhid ", dir, "/kernel/drivers/hid/usbhid.ko mousepoll=4 quirks=0x1 "),
      "install inst /bin/true",
  };
  std::vector<std::string> sorted_lines = lines;
  std::vector<std::string> sorted_expected = expected;
  std::sort(sorted_lines.begin(), sorted_lines.end());
  std::sort(sorted_expected.begin(), sorted_expected.end());
  // Exactly these, each once: no blacklisted, builtin or unmatched module, nothing twice.
  EXPECT_EQ(sorted_lines, sorted_expected) << "log:\n" << absl::StrJoin(lines, "\n");
  // Dependencies first: foo_net after both modules its modules.dep line names, and core_util
  // after crc (its own line), although both are only dependencies here.
  EXPECT_LT(IndexOf(lines, "load crc "), IndexOf(lines, "load core_util "));
  EXPECT_LT(IndexOf(lines, "load crc "), IndexOf(lines, "load foo_net "));
  EXPECT_LT(IndexOf(lines, "load core_util "), IndexOf(lines, "load foo_net "));

  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon.Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->at("handled"), 9u);
  EXPECT_EQ(status->at("modules_events"), 7u);  // the add events with a MODALIAS
  EXPECT_EQ(status->at("modules_loaded"), 4u);
  EXPECT_EQ(status->at("modules_installed"), 1u);
  EXPECT_EQ(status->at("modules_builtin"), 1u);
  EXPECT_EQ(status->at("modules_blacklisted"), 1u);
  EXPECT_EQ(status->at("aliases_unmatched"), 1u);
  EXPECT_EQ(status->at("modules_failed"), 0u);
  EXPECT_EQ(status->at("modules_in_flight"), 0u);
  // foo-net's second device either joined the first's loads or found them done.
  EXPECT_EQ(status->at("modules_joined") + status->at("modules_already_loaded"), 3u);
  EXPECT_GE(status->at("modules_peak_in_flight"), 2u) << "usbhid and crc had nothing in common";
  ASSERT_TRUE(daemon.Stop().ok()) << daemon.Log();
}

TEST_F(ModulesDaemonTest, AReloadThatFailsKeepsTheIndexItHas) {
  FakeModulesTree tree = MakeTree();
  DaemonProcess daemon = Start(tree, {"--kernel-cmdline", ""});
  // Break the tree: the reload must fail and keep the index it has.
  ASSERT_EQ(::unlink((tree.modules_dir() + "/modules.dep").c_str()), 0);
  ASSERT_EQ(::unlink((tree.modules_dir() + "/modules.dep.bin").c_str()), 0);
  absl::StatusOr<::hotring::testing::CommandResult> reload =
      ::hotring::testing::RunHotring({"control", "--socket", daemon.socket(), "reload"});
  ASSERT_TRUE(reload.ok());
  ControlSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(Uevent(1, "add", "/devices/usb1/1-1:1.0", kUsbAlias)));
  ASSERT_TRUE(daemon.Settle().ok());
  const std::vector<std::string> lines = ReadLines(log_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("load usbhid ", 0), 0u) << lines[0];
  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon.Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->at("modules_reload_failures"), 1u);
  ASSERT_TRUE(daemon.Stop().ok());
}

TEST_F(ModulesDaemonTest, TheKernelCommandLineTurnsOnSerialLoading) {
  const FakeModulesTree tree = MakeTree();
  DaemonProcess daemon = Start(tree, {"--kernel-cmdline", "ro hotring.modules_serial"});
  ControlSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(Uevent(1, "add", "/devices/pci0/net0", kNetAlias)));
  ASSERT_TRUE(sender.SendEvent(Uevent(2, "add", "/devices/usb1/1-1:1.0", kUsbAlias)));
  ASSERT_TRUE(daemon.Settle().ok());
  EXPECT_EQ(ReadLines(log_).size(), 4u);
  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon.Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->at("modules_peak_in_flight"), 1u);
  EXPECT_NE(daemon.Log().find("one at a time"), std::string::npos) << daemon.Log();
  ASSERT_TRUE(daemon.Stop().ok());
}

TEST_F(ModulesDaemonTest, NoModulesTurnsTheStageOff) {
  const FakeModulesTree tree = MakeTree();
  DaemonProcess daemon = Start(tree, {"--no-modules"});
  ControlSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(Uevent(1, "add", "/devices/pci0/net0", kNetAlias)));
  ASSERT_TRUE(daemon.Settle().ok());
  EXPECT_TRUE(ReadLines(log_).empty());
  absl::StatusOr<std::map<std::string, uint64_t>> status = daemon.Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->count("modules_events"), 0u);
  ASSERT_TRUE(daemon.Stop().ok());
}

TEST_F(ModulesDaemonTest, AnotherKernelsTreeIsRefusedWithoutADryRun) {
  const FakeModulesTree tree = MakeTree();
  absl::StatusOr<::hotring::testing::CommandResult> run = ::hotring::testing::RunHotring(
      {"daemon", "--socket", "@hotring-modules-refused", "--no-netlink", "--modules-root",
       tree.root(), "--kernel-version", tree.version()});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 2);
  EXPECT_NE(run->err.find("is not the running kernel"), std::string::npos) << run->err;
}

TEST_F(ModulesDaemonTest, HelpListsTheModulesFlags) {
  absl::StatusOr<::hotring::testing::CommandResult> run = ::hotring::testing::RunHotring({"daemon", "--help"});
  ASSERT_TRUE(run.ok());
  for (const char* flag : {"--no-modules", "--modules-root", "--kernel-version",
                           "--modules-serial", "--modules-dry-run-log"}) {
    EXPECT_NE(run->out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace hotring::hotplug::modules
